"""Model answers joined to a dataset's questions, every row counted (a scorecard's ``coverage``): unknown ids,
repeated answers and missing or empty answers are counted and listed, never dropped silently; ids a paper declares as
another name of its questions (``[[question_alias]]``) are mapped and counted, an ambiguous one refused; a file
matching no id, or mostly unknown ids (over ``VQALIB_MAX_UNKNOWN_SHARE``), is refused before any scoring."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from vqalib.core.answer_formats import as_id, read_json_lines
from vqalib.core.escaping import terminal_text
from vqalib.core.input_limits import UNKNOWN_SETTING, unknown_share
from vqalib.core.io import DataFormatError, read_csv_text

DUPLICATE_RULES = ("error", "first", "last")


@dataclass(frozen=True)
class QuestionAlias:
    """Another name a dataset's questions go by (a paper's ``[[question_alias]]``): ``what`` it is (for the coverage)
    and each alias's ids, more than one when the alias is ambiguous (refused when an answer uses it)."""

    what: str
    ids: dict[str, tuple[str, ...]]

    @classmethod
    def from_pairs(cls, what: str, pairs) -> "QuestionAlias":
        """The alias from ``(alias, id)`` pairs, as a paper's builder returns them.

        Parameters
        ----------
        what : str
        pairs : iterable of (str, str)
        """
        ids: dict[str, tuple[str, ...]] = {}
        for alias, question in pairs:
            if str(question) not in ids.get(str(alias), ()):
                ids[str(alias)] = (*ids.get(str(alias), ()), str(question))
        return cls(what=what, ids=ids)


def _through_aliases(given: pd.Series, lines: pd.Series, *, known: set[str], aliases, path: str):
    """``given`` with each unknown id that an alias names replaced by the dataset's id, and the count per alias."""
    counts = {}
    for alias in aliases:
        hit = ~given.isin(known) & given.isin(alias.ids.keys())
        if not hit.any():
            continue
        found = given[hit].map(alias.ids)
        ambiguous = found[found.map(len) > 1]
        if len(ambiguous):
            at = ambiguous.index[0]
            raise DataFormatError(f"{path}: line {lines[at]}: {given[at]!r} ({alias.what}) names "
                                  f"{len(ambiguous[at])} questions ({', '.join(ambiguous[at])}), so it is matched to "
                                  f"none of them: give the question id (rows naming an ambiguous {alias.what}: "
                                  f"{len(ambiguous):,})")
        given = given.where(~hit, found.map(lambda named: named[0]))
        counts[alias.what] = int(hit.sum())
    return given, counts


def lmms_doc_hash(doc: dict) -> str:
    """The ``doc_hash`` lmms-eval logs for a document: SHA-256 of its ``json.dumps(indent=2)``."""
    return hashlib.sha256(json.dumps(doc, indent=2, default=str, ensure_ascii=False).encode("utf-8")).hexdigest()


# lmms-eval 0.7.3 logs the hash of its requests' ``doc``, which it never sets: every line holds sha256("null")
NULL_DOC_HASH = hashlib.sha256(b"null").hexdigest()


def join_task_data(answers: pd.DataFrame, *, task_data: str | Path, answers_path: str = "answers") -> pd.DataFrame:
    """Fill missing ``item_id`` of toolkit rows from the exported task data: lmms-eval ``doc_id`` (``doc_hash`` checked
    unless :data:`NULL_DOC_HASH`) or VLMEvalKit ``index``; a row not in the data, or another hash, is a DataFormatError.

    Parameters
    ----------
    answers : pandas.DataFrame
        :func:`read_answers` rows.
    task_data : str or Path
        The exported data: a JSONL of documents (lmms-eval) or a TSV with ``index`` and an id column (VLMEvalKit).
    answers_path : str
        The answers file's name, for messages.
    """
    task_data = Path(task_data)
    out = answers.copy()
    need = out["item_id"].isna()
    if task_data.suffix.lower() == ".tsv":
        table = read_csv_text(task_data, required=("index",), sep="\t")
        key = "item_id" if "item_id" in table else "question_id"
        lookup = dict(zip(table["index"].map(as_id), table[key].map(as_id)))
        for i in out.index[need]:
            index = out.at[i, "index"]
            if index not in lookup:
                raise DataFormatError(f"{answers_path}: row {out.at[i, 'line']}: index {index!r} is not a row of "
                                      f"{task_data}")
            out.at[i, "item_id"] = lookup[index]
        return out
    docs = read_json_lines(task_data)
    for i in out.index[need]:
        doc_id = out.at[i, "doc_id"]
        if doc_id is None or pd.isna(doc_id) or not 0 <= int(doc_id) < len(docs):
            shown = "missing" if doc_id is None or pd.isna(doc_id) else int(doc_id)
            raise DataFormatError(f"{answers_path}: line {out.at[i, 'line']}: doc_id {shown} is not a document of "
                                  f"{task_data} ({len(docs)} documents)")
        doc = {k: v for k, v in docs[int(doc_id)].items() if k != "_line"}
        expected, logged = lmms_doc_hash(doc), out.at[i, "doc_hash"]
        if logged and logged != NULL_DOC_HASH and logged != expected:  # a null-document hash says nothing
            raise DataFormatError(f"{answers_path}: line {out.at[i, 'line']}: doc_hash {terminal_text(logged[:12])}… "
                                  f"differs from document {doc_id} of {task_data} ({expected[:12]}…): the samples come "
                                  "from another version of the task data")
        out.at[i, "item_id"] = as_id(doc.get("item_id", doc.get("question_id")))
    return out


def match_answers(answers: pd.DataFrame, *, ids: list[str], dataset: str, key: str = "item_id",
                  duplicates: str = "error", others: dict[str, set[str]] | None = None,
                  aliases: list[QuestionAlias] | None = None, path: str = "answers") -> tuple[pd.DataFrame, dict]:
    """Join answer rows to a dataset's questions and count every row (the ``coverage`` of a scorecard).

    Parameters
    ----------
    answers : pandas.DataFrame
        Rows with ``key``, ``answer`` and ``line``.
    ids : list of str
        The dataset's ids, in its order.
    dataset : str
    key : str, default "item_id"
        The column holding the ids.
    duplicates : {"error", "first", "last"}
        What a second answer to one id does: refused, or the first/last kept.
    others : dict of str to set, optional
        Other datasets' ids, to say which one the file belongs to when none match.
    aliases : list of QuestionAlias, optional
        Other names of the dataset's ids: an id the dataset lacks that an alias names is mapped (counted in the
        coverage's ``aliased``); one naming several questions is refused.
    path : str
        The answers file, for messages.

    Returns
    -------
    tuple
        ``(matched, coverage)``: answered rows in dataset order, and the ids of each kind with counts.
    """
    if duplicates not in DUPLICATE_RULES:
        raise ValueError(f"duplicates must be one of {DUPLICATE_RULES}, not {duplicates!r}")
    known = set(ids)
    no_id = answers[answers[key].isna()]
    if len(no_id):
        raise DataFormatError(f"{path}: line {no_id['line'].iloc[0]}: no `{key}` ({len(no_id)} rows without one); "
                              "give question ids (or the exported task data, --task-data, for toolkit files)")
    given, aliased = _through_aliases(answers[key].astype(str), answers["line"], known=known, aliases=aliases or [],
                                      path=path)
    inside = given.isin(known)
    if not inside.any():
        shown = terminal_text(", ".join(list(dict.fromkeys(given))[:5]))
        hint = ""
        for name, other in (others or {}).items():
            share = given.isin(other).mean()
            if share > 0.5:
                hint = f"; is this {name}? ({share:.0%} of the ids are {name} ids)"
                break
        raise DataFormatError(f"{path}: 0 of {len(given)} ids match {dataset}: {shown}{' …' if given.nunique() > 5 else ''}"
                              f"{hint}")
    most = unknown_share()
    if (~inside).mean() > most:  # a file mostly for something else: stopped before any row is scored
        outside = given[~inside]
        shown = terminal_text(", ".join(list(dict.fromkeys(outside.head(1000)))[:5]))
        raise DataFormatError(f"{path}: {len(outside):,} of {len(given):,} rows ({len(outside) / len(given):.1%}) name ids "
                              f"{dataset} lacks, e.g. {shown}; over the limit of {most:.0%} ({UNKNOWN_SETTING}): is "
                              "the file for another dataset or question set?")
    unknown = list(dict.fromkeys(given[~inside]))
    frame = answers[inside].assign(**{key: given[inside]})
    repeated = frame[frame[key].duplicated(keep=False)]
    duplicate_ids = list(dict.fromkeys(repeated[key]))
    if duplicate_ids and duplicates == "error":
        lines = repeated.groupby(key, sort=False)["line"].apply(lambda s: "/".join(map(str, s)))
        shown = terminal_text("; ".join(f"{k} (lines {v})" for k, v in list(lines.items())[:5]))
        raise DataFormatError(f"{path}: {len(duplicate_ids)} {dataset} ids answered more than once: {shown}"
                              f"{' …' if len(duplicate_ids) > 5 else ''}; keep one with --duplicates first|last")
    frame = frame.drop_duplicates(key, keep=duplicates if duplicates != "error" else "first")
    empty_mask = frame["answer"].isna() | frame["answer"].astype(str).str.strip().eq("")
    empty = list(frame.loc[empty_mask, key])
    frame = frame[~empty_mask]
    order = {i: n for n, i in enumerate(ids)}
    frame = frame.assign(_order=frame[key].map(order)).sort_values("_order").drop(columns="_order")
    present = set(given)
    missing = [i for i in ids if i not in present]
    coverage = {"dataset": dataset, "questions": len(ids), "given": int(len(answers)), "matched": int(len(frame)),
                "missing": missing, "unknown": unknown, "duplicate": duplicate_ids, "empty": empty}
    if aliased:  # only when used: scorecards keyed by the dataset's own ids keep their coverage as it was
        coverage["aliased"] = aliased
    return frame.reset_index(drop=True), coverage


def coverage_text(coverage: dict) -> str:
    """One line for every table of a scorecard: "scored on 588 of 600 questions (12 missing, …)".

    Parameters
    ----------
    coverage : dict
        :func:`match_answers`' coverage.
    """
    parts = [f"{len(coverage[k])} {k}" for k in ("missing", "empty", "unknown", "duplicate") if coverage[k]]
    parts += [f"{n} matched by {what}" for what, n in coverage.get("aliased", {}).items()]
    return (f"scored on {coverage['matched']} of {coverage['questions']} {coverage['dataset']} questions"
            + (f" ({', '.join(parts)})" if parts else ""))
