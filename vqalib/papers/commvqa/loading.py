"""CommVQA loader and validation (CommVQA §3; input of Table 1 and Figures 2–5): tidy frames and a report of
every quirk met; malformed files raise :class:`~vqalib.core.io.DataFormatError`.

Uses :mod:`vqalib.papers.vizwiz_lf.wordcounts` so that CommVQA's answer lengths (§4.3) count words as
VizWiz-LF's Table 1 does.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from vqalib.core.io import DataFormatError, json_type, read_csv_text, read_json, require_fields
from vqalib.core.upstream import verified_path
from vqalib.papers.commvqa.names import (CONDITIONS, CONTEXTS, MODELS, PANDAS_DEFAULT_NA, RESULT_COLUMNS,
                                         canonical_context, result_key)
from vqalib.papers.commvqa.protocols import authors_references
from vqalib.core.validation import ValidationReport
from vqalib.papers.vizwiz_lf.wordcounts import count_words

@dataclass
class CommVQA:
    """The loaded release (CommVQA §3): ``annotations`` (``question_id``: row in annotations.json; ``in_benchmark``:
    in the result files), ``answers``, ``results`` and ``validation`` (its report)."""

    annotations: pd.DataFrame
    answers: pd.DataFrame
    results: pd.DataFrame
    validation: ValidationReport = field(default_factory=ValidationReport)


ANNOTATION_FIELDS: dict[str, type] = {"image": str, "context": str, "description": str, "question": str,
                                      "unanswerable": bool}


def parse_annotations(raw: object, *, file: str, report: ValidationReport) -> pd.DataFrame:
    """Rows of the annotations frame from parsed annotations.json (CommVQA §3), ``question_id`` each row's position;
    quirks go to ``report`` and the rows are kept."""
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
    """The human answers of a result row's cell, a Python list literal parsed with :func:`ast.literal_eval` (Table 1);
    anything but a non-empty list of strings raises, naming ``file``, ``row`` and ``column``."""
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
    """Rows of the results frame for one released result CSV read as text (``dtype=str, keep_default_na=False``;
    Table 1 input); ``pandas_na`` marks answers pandas' default parsing (the authors') reads as missing."""
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
    """``results`` with ``question_id`` (the annotation row answered) and ``match`` (Table 1): by image, context and
    question text, else by image, context and answers (edited question text); differences go to ``report``."""
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
    """One row per human answer with its length in words and characters (CommVQA §4.3)."""
    rows = [{"question_id": r.question_id, "context": r.context, "in_benchmark": r.in_benchmark,
             "answer_index": k, "answer": a, "words": count_words(a), "chars": len(a.strip())}
            for r in annotations.itertuples(index=False) for k, a in enumerate(r.answers)]
    return pd.DataFrame(rows, columns=["question_id", "context", "in_benchmark", "answer_index", "answer",
                                       "words", "chars"])


def load_commvqa(*, data_dir: Path | None = None, annotations_path: Path | None = None,
                 result_paths: dict[tuple[str, str], Path] | None = None) -> CommVQA:
    """Load and validate the CommVQA release (§3; Table 1, Figures 2–5 input); registered files are hash-checked.

    Parameters
    ----------
    data_dir : Path, optional
        Folder of the verified data files.
    annotations_path : Path, optional
        An annotations.json to read instead of the registered one (not hash-checked).
    result_paths : dict, optional
        ``{(model, condition): path}`` of result CSVs to read instead of the registered eight.
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
    return CommVQA(annotations=annotations, answers=human_answers(annotations), results=results, validation=report)


def smoke_subset(annotations: pd.DataFrame, answers: pd.DataFrame, results: pd.DataFrame, *,
                 rows: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The first rows of each frame, for a smoke run of the CommVQA notebook (never for reported numbers).

    Parameters
    ----------
    annotations, answers, results : pandas.DataFrame
        :func:`load_commvqa`'s frames.
    rows : int
        Result rows per file and annotation rows kept; answers follow their annotation rows.

    Returns
    -------
    tuple of pandas.DataFrame
        ``(annotations, answers, results)``.
    """
    return (annotations[annotations["question_id"] < rows], answers[answers["question_id"] < rows],
            results[results["row"] < rows])


def load_summary(data: CommVQA) -> str:
    """One line on what :func:`load_commvqa` read (CommVQA §3).

    Parameters
    ----------
    data : CommVQA
        The loaded release, before any smoke subset.
    """
    return (f"{len(data.annotations)} annotation rows, {int(data.annotations['in_benchmark'].sum())} in the benchmark "
            f"subset; {len(data.answers)} human answers; result rows per file: "
            f"{data.results.groupby('file').size().to_dict()}")
