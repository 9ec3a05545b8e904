"""CommVQA loader and validation (CommVQA §3; input of Table 1 and Figures 2–5).

Data (:data:`vqalib.core.data_registry.REGISTRY`): ``commvqa/annotations.json`` (one row per
question: image, context, description, question, human answers, unanswerable flag) and the released
model answers ``commvqa/results/{model}_{baseline,contextual}_results.csv``.
:func:`load_commvqa` returns tidy frames and a :class:`~vqalib.core.validation.ValidationReport`
naming every quirk met; malformed files raise :class:`~vqalib.core.io.DataFormatError`.

Depends on :mod:`vqalib.papers.vizwiz_lf.wordcounts`: :func:`human_answers` counts the words of an
answer with :func:`vqalib.papers.vizwiz_lf.wordcounts.count_words` (white-space tokens), so that
CommVQA's answer lengths (§4.3) use the same word as VizWiz-LF's Table 1.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from vqalib.core.io import DataFormatError, json_type, read_csv_text, read_json, require_fields
from vqalib.core.data_registry import verified_path
from vqalib.papers.commvqa.names import (CONDITIONS, CONTEXTS, MODELS, PANDAS_DEFAULT_NA, RESULT_COLUMNS,
                                         canonical_context, result_key)
from vqalib.papers.commvqa.protocols import authors_references
from vqalib.core.validation import ValidationReport
from vqalib.papers.vizwiz_lf.wordcounts import count_words

@dataclass
class CommVQA:
    """The loaded release (CommVQA §3).

    ``annotations``: one row per annotation row (``question_id`` = its position in
    annotations.json), with ``in_benchmark`` (the question appears in the result files).
    ``answers``: one row per human answer. ``results``: one row per (model, condition,
    result row), with ``question_id`` of the matched annotation. ``report``: every quirk met.
    """

    annotations: pd.DataFrame
    answers: pd.DataFrame
    results: pd.DataFrame
    report: ValidationReport = field(default_factory=ValidationReport)


ANNOTATION_FIELDS: dict[str, type] = {"image": str, "context": str, "description": str, "question": str,
                                      "unanswerable": bool}


def parse_annotations(raw: object, *, file: str, report: ValidationReport) -> pd.DataFrame:
    """Rows of the annotations frame from parsed annotations.json (CommVQA §3).

    Contexts are mapped to their canonical names (an unknown one raises); rows without answers,
    unanswerable rows with answers, fewer than 3 answers, empty answers, padded questions or
    descriptions and repeated (image, context, question) rows are recorded in ``report`` and kept.

    Parameters
    ----------
    raw : object
        The parsed JSON; must be a non-empty list of objects with the fields of :data:`ANNOTATION_FIELDS`
        and an optional ``answers`` list of strings, else :class:`~vqalib.core.io.DataFormatError`.
    file : str
        File name used in error messages and report entries.
    report : ValidationReport
        Where the quirks met are recorded (modified in place).

    Returns
    -------
    pandas.DataFrame
        One row per entry: ``question_id`` (its position), ``image``, ``context``, ``description``
        (stripped), ``question`` (as written), ``answers`` (tuple), ``n_answers`` and ``unanswerable``.
    """
    if not isinstance(raw, list):
        raise DataFormatError(f"{file}: top level: the file holds {json_type(raw)}, expected an array of rows")
    if not raw:
        raise DataFormatError(f"{file}: top level: the array has no rows; expected one row per annotated question")
    rows = []
    for i, entry in enumerate(raw):
        require_fields(entry, ANNOTATION_FIELDS, file=file, where=f"row {i}")
        answers = entry.get("answers")
        if answers is not None and not (isinstance(answers, list) and all(isinstance(a, str) for a in answers)):
            raise DataFormatError(f"{file}: row {i} field 'answers' is not a list of strings")
        context, status = canonical_context(entry["context"])
        if status == "alias":
            report.add(file=file, check="context_alias", detail=f"{entry['context']!r} -> {context!r}", action="mapped")
        elif status == "unknown":
            raise DataFormatError(f"{file}: row {i} field 'context' is {entry['context']!r}, "
                                  f"expected one of {CONTEXTS}")
        answers = list(answers or [])
        if not answers:
            flag = "unanswerable flag set" if entry["unanswerable"] else "unanswerable flag NOT set"
            report.add(file=file, check="row_without_answers", detail=f"no answers ({flag})",
                       action="kept in the question analyses; no answer rows", example=f"row {i}")
        elif entry["unanswerable"]:
            report.add(file=file, check="unanswerable_with_answers", detail="unanswerable flag set but answers present",
                       action="kept as written", example=f"row {i}")
        elif len(answers) < 3:
            report.add(file=file, check="fewer_than_3_answers",
                       detail=f"{len(answers)} answers (the paper: at least 3)", action="kept")
        if any(not a.strip() for a in answers):
            report.add(file=file, check="empty_answer", detail="an answer is empty or white space",
                       action="kept as written", example=f"row {i}")
        if entry["question"] != entry["question"].strip():
            report.add(file=file, check="whitespace", detail="question has leading/trailing white space",
                       action="kept as written; matched after trimming")
        if entry["description"] != entry["description"].strip():
            report.add(file=file, check="whitespace", detail="description has leading/trailing white space",
                       action="trimmed")
        rows.append({"question_id": i, "image": entry["image"], "context": context,
                     "description": entry["description"].strip(), "question": entry["question"],
                     "answers": tuple(answers), "n_answers": len(answers), "unanswerable": entry["unanswerable"]})
    frame = pd.DataFrame(rows)
    key = frame["question"].str.strip()
    dup = frame.assign(_q=key).duplicated(["image", "context", "_q"], keep="first")
    for i in frame.index[dup]:
        report.add(file=file, check="duplicate_question",
                   detail="same image, context and question as an earlier row",
                   action="kept; results are matched to the row whose answers agree", example=f"row {i}")
    return frame


def parse_answers_cell(cell: object, *, file: str, row: int, column: str = "answers") -> tuple[str, ...]:
    """The human answers of a result row: the cell is a Python list literal (Table 1 references).

    Parsed with :func:`ast.literal_eval` (never ``eval``); anything else raises
    :class:`DataFormatError` naming the file, the row and the column.

    Parameters
    ----------
    cell : object
        The cell's text; a non-string, a non-list, a list with a non-string or an empty list raises.
    file : str
        File name for error messages.
    row : int
        0-based data row, for error messages.
    column : str, default "answers"
        Column name, for error messages.

    Returns
    -------
    tuple of str
        The answers, in the cell's order.
    """
    where = f"{file}: row {row}, column {column!r}"
    if not isinstance(cell, str):
        raise DataFormatError(f"{where}: expected a Python list literal, found {type(cell).__name__}")
    try:
        value = ast.literal_eval(cell)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as err:
        raise DataFormatError(f"{where}: not a Python list literal ({type(err).__name__}: {err}); "
                              f"cell starts {cell[:60]!r}") from None
    if not isinstance(value, list) or not all(isinstance(a, str) for a in value):
        raise DataFormatError(f"{where}: expected a list of strings, found {type(value).__name__} {cell[:60]!r}")
    if not value:
        raise DataFormatError(f"{where}: the list of answers is empty")
    return tuple(value)


def parse_results(frame: pd.DataFrame, *, file: str, model: str, condition: str,
                  report: ValidationReport) -> pd.DataFrame:
    """Rows of the results frame for one released result CSV read as text (Table 1 input).

    ``frame`` is the CSV read with ``dtype=str, keep_default_na=False``. ``row`` is the data
    row's 0-based position (the file's unnamed index column). A missing generated answer
    (empty cell) stays missing and is counted; ``pandas_na`` marks cells that pandas' default
    parsing (the authors') reads as missing, e.g. the answer ``None``.

    Parameters
    ----------
    frame : pandas.DataFrame
        The CSV as text; must have :data:`~vqalib.papers.commvqa.names.RESULT_COLUMNS`.
    file : str
        File name, stored in ``file`` and used in messages and report entries.
    model : str
        A key of :data:`~vqalib.papers.commvqa.names.MODELS` (stored as its Table 1 name) or a new name (kept).
    condition : str
        ``baseline`` or ``contextual`` (stored as given).
    report : ValidationReport
        Where context aliases, missing or NA-like answers and differing authors' references are
        recorded (modified in place).

    Returns
    -------
    pandas.DataFrame
        One row per data row: ``model``, ``condition``, ``file``, ``row``, ``image`` (without ``images/``),
        ``context``, ``question``, ``answers_raw``, ``references``, ``generated_answer``, ``pandas_na``
        and ``description`` (None when the file has no such column).
    """
    missing = [c for c in RESULT_COLUMNS if c not in frame.columns]
    if missing:
        raise DataFormatError(f"{file}: lacks required column(s) {missing}; columns are {list(frame.columns)}")
    rows = []
    for i, rec in enumerate(frame.to_dict("records")):
        references = parse_answers_cell(rec["answers"], file=file, row=i)
        context, status = canonical_context(rec["context"])
        if status == "alias":
            report.add(file=file, check="context_alias", detail=f"{rec['context']!r} -> {context!r}", action="mapped")
        elif status == "unknown":
            raise DataFormatError(f"{file}: row {i}, column 'context': {rec['context']!r} is not a known context")
        generated = rec["generated_answer"]
        if not generated.strip():
            report.add(file=file, check="missing_generated_answer", detail="generated answer is empty",
                       action="scored as an empty answer (both protocols)", example=f"row {i}")
            generated = None
        elif generated in PANDAS_DEFAULT_NA:
            report.add(file=file, check="generated_answer_read_as_missing",
                       detail=f"generated answer {generated!r} is a pandas default NA string",
                       action="authors' protocol: empty answer (as their script read it); corrected: kept as text",
                       example=f"row {i}")
        pieces = authors_references(rec["answers"])
        if [p for p in pieces] != [a.replace("'", "").replace('"', "").lower().strip() for a in references]:
            detail = ("an answer contains a comma: the authors' parser keeps fragments"
                      if any("," in a for a in references) else "authors' parser differs from the list")
            report.add(file=file, check="authors_references_differ", detail=detail,
                       action="authors' protocol: fragments as their script; corrected: the parsed list",
                       example=f"row {i}")
        image = re.sub(r"^images/", "", rec["image"])
        rows.append({"model": MODELS.get(model, model), "condition": condition, "file": file, "row": i,
                     "image": image, "context": context, "question": rec["question"], "answers_raw": rec["answers"],
                     "references": references, "generated_answer": generated,
                     "pandas_na": generated is None or generated in PANDAS_DEFAULT_NA,
                     "description": rec.get("description")})
    return pd.DataFrame(rows)


def match_results(results: pd.DataFrame, annotations: pd.DataFrame, *, report: ValidationReport) -> pd.DataFrame:
    """Add ``question_id`` (the annotation row a result row answers) and ``match`` (how it was found).

    First by image, context and trimmed question text, preferring the annotation row whose
    answers equal the result's; else by image, context and answers (the question text was
    edited); else unmatched (``question_id`` missing, counted in the report).

    Parameters
    ----------
    results : pandas.DataFrame
        Rows of :func:`parse_results`, all files concatenated.
    annotations : pandas.DataFrame
        Rows of :func:`parse_annotations`.
    report : ValidationReport
        Where answers that differ and unmatched questions are recorded.

    Returns
    -------
    pandas.DataFrame
        ``results`` with ``question_id`` (nullable integer) and ``match``.
    """
    ann = annotations.assign(_q=annotations["question"].str.strip())
    by_question: dict[tuple, list[int]] = {}
    for qid, key in zip(ann["question_id"], zip(ann["image"], ann["context"], ann["_q"])):
        by_question.setdefault(key, []).append(qid)
    by_answers: dict[tuple, list[int]] = {}
    for qid, key in zip(ann["question_id"], zip(ann["image"], ann["context"], ann["answers"])):
        by_answers.setdefault(key, []).append(qid)
    answers_of = dict(zip(ann["question_id"], ann["answers"]))
    ids, how = [], []
    for r in results.itertuples(index=False):
        candidates = by_question.get((r.image, r.context, r.question.strip()), [])
        agreeing = [q for q in candidates if answers_of[q] == r.references]
        if agreeing or candidates:
            ids.append((agreeing or candidates)[0])
            how.append("question" if agreeing else "question (answers differ)")
            if not agreeing:
                report.add(file=r.file, check="answers_differ_from_annotations",
                           detail="answers cell differs from the annotation row's answers",
                           action="matched on the question; the result file's answers are scored",
                           example=f"row {r.row}")
            continue
        fallback = by_answers.get((r.image, r.context, r.references), [])
        if fallback:
            ids.append(fallback[0])
            how.append("answers (question text differs)")
            report.add(file=r.file, check="question_not_in_annotations",
                       detail="question text not in the annotations; image, context and answers match one row",
                       action="matched on image, context and answers", example=f"row {r.row}: {r.question!r}")
        else:
            ids.append(pd.NA)
            how.append("unmatched")
            report.add(file=r.file, check="question_not_in_annotations",
                       detail="no annotation row with this image, context and question or answers",
                       action="scored in Table 1; left out of analyses that need the annotation",
                       example=f"row {r.row}: {r.question!r}")
    return results.assign(question_id=pd.array(ids, dtype="Int64"), match=how)


def _cross_file_checks(results: pd.DataFrame, report: ValidationReport) -> None:
    """Do the result files list the same questions in the same row order? (paired comparisons)"""
    files = list(dict.fromkeys(results["file"]))
    first = results[results["file"] == files[0]]
    for f in files[1:]:
        other = results[results["file"] == f]
        same = len(other) == len(first) and (other["question"].to_numpy() == first["question"].to_numpy()).all()
        if not same:
            report.add(file=f, check="rows_not_aligned", detail=f"rows differ from {files[0]} (questions or order)",
                       action="context effects paired by question_id, not by row")


def human_answers(annotations: pd.DataFrame) -> pd.DataFrame:
    """One row per human answer with its length in words (white-space tokens) and characters (CommVQA §4.3).

    Parameters
    ----------
    annotations : pandas.DataFrame
        ``CommVQA.annotations`` (``question_id``, ``context``, ``in_benchmark``, ``answers``).

    Returns
    -------
    pandas.DataFrame
        ``question_id``, ``context``, ``in_benchmark``, ``answer_index``, ``answer``, ``words``
        (:func:`~vqalib.papers.vizwiz_lf.wordcounts.count_words`) and ``chars`` (of the stripped answer).
    """
    rows = [{"question_id": r.question_id, "context": r.context, "in_benchmark": r.in_benchmark,
             "answer_index": k, "answer": a, "words": count_words(a), "chars": len(a.strip())}
            for r in annotations.itertuples(index=False) for k, a in enumerate(r.answers)]
    return pd.DataFrame(rows, columns=["question_id", "context", "in_benchmark", "answer_index", "answer",
                                       "words", "chars"])


def load_commvqa(*, data_dir: Path | None = None, annotations_path: Path | None = None,
                 result_paths: dict[tuple[str, str], Path] | None = None) -> CommVQA:
    """Load and validate the CommVQA release (§3; Table 1, Figures 2–5 input).

    Registered files are hash-checked (``data_dir`` as in :mod:`vqalib.core.data_registry`).
    ``annotations_path`` and ``result_paths`` ({(model, condition): path}, model a key of
    :data:`~vqalib.papers.commvqa.names.MODELS` or a new name) bypass the registry for fixtures or
    new model answers. Files are read strictly (:func:`~vqalib.core.io.read_json`,
    :func:`~vqalib.core.io.read_csv_text`): bytes that are not UTF-8, an empty file, a repeated
    JSON key or CSV column, a header without rows or a wrong top-level type raise
    :class:`DataFormatError` naming the file, the row and the field.

    Parameters
    ----------
    data_dir : Path, optional
        Folder of the verified data files (default: :func:`vqalib.core.io.default_data_dir`).
    annotations_path : Path, optional
        An annotations.json to read instead of the registered one (not hash-checked).
    result_paths : dict, optional
        ``{(model, condition): path}`` of result CSVs to read instead of the registered eight.

    Returns
    -------
    CommVQA
        ``annotations``, ``answers``, ``results`` and the validation ``report``.
    """
    report = ValidationReport()
    ann_path = Path(annotations_path) if annotations_path else verified_path("commvqa/annotations.json",
                                                                              data_dir=data_dir)
    annotations = parse_annotations(read_json(ann_path), file=ann_path.name, report=report)
    if result_paths is None:
        result_paths = {(m, c): verified_path(result_key(m, c), data_dir=data_dir) for m in MODELS for c in CONDITIONS}
    parts = []
    for (model, condition), path in result_paths.items():
        path = Path(path)
        frame = read_csv_text(path, required=RESULT_COLUMNS)  # strict: encoding, empty, header only, repeats
        parts.append(parse_results(frame, file=path.name, model=model, condition=condition, report=report))
    results = match_results(pd.concat(parts, ignore_index=True), annotations, report=report)
    _cross_file_checks(results, report)
    in_bench = set(results["question_id"].dropna().astype(int))
    annotations["in_benchmark"] = annotations["question_id"].isin(in_bench)
    return CommVQA(annotations=annotations, answers=human_answers(annotations), results=results, report=report)


def smoke_subset(annotations: pd.DataFrame, answers: pd.DataFrame, results: pd.DataFrame, *,
                 rows: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The first rows of each frame, for a quick smoke run of the CommVQA notebook (Table 1 and
    §4–§5 analyses on a sample; never for the reported numbers).

    Parameters
    ----------
    annotations, answers, results : pandas.DataFrame
        :func:`load_commvqa`'s frames.
    rows : int
        Result rows per file (``row`` below ``rows``) and annotation rows (``question_id`` below
        ``rows``) kept; answers follow their annotation rows.

    Returns
    -------
    tuple of pandas.DataFrame
        ``(annotations, answers, results)``, each a row subset of its input.
    """
    return (annotations[annotations["question_id"] < rows], answers[answers["question_id"] < rows],
            results[results["row"] < rows])


def load_summary(data: CommVQA) -> str:
    """One line on what :func:`load_commvqa` read (§3): annotation rows, those of the benchmark
    subset, human answers and result rows per file.

    Parameters
    ----------
    data : CommVQA
        The loaded release (the whole of it, before any smoke subset).

    Returns
    -------
    str
        The sentence the notebook prints under its load cell.
    """
    return (f"{len(data.annotations)} annotation rows, {int(data.annotations['in_benchmark'].sum())} in the benchmark "
            f"subset; {len(data.answers)} human answers; result rows per file: "
            f"{data.results.groupby('file').size().to_dict()}")
