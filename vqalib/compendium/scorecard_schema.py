"""A scorecard folder read as outside input (``vqalib leaderboard``, the reviewer site): each file refused unless it is
a regular file of the folder within :data:`SIZE_SETTING`, ``scorecard.json`` checked against what ``vqalib score``
writes and ``per_question.csv`` against the dataset's measures and question ids; every problem is a
:class:`ScorecardError` naming the folder, the file, the field (and row) and how to fix it (ARCHITECTURE "Scoring any
model")."""

from __future__ import annotations

import functools
import io
import json
import math
import os
import re
import stat
from pathlib import Path

import pandas as pd

from vqalib.compendium.score import DATASETS
from vqalib.core import config
from vqalib.core.input_limits import DEPTH_SETTING, limit, nesting_line, nesting_problem
from vqalib.core.io import DataFormatError, file_kind, json_type, read_regular, shown_path, walk_json

SIZE_SETTING = "VQALIB_MAX_SCORECARD_BYTES"
DEFAULT_SIZE = 64 << 20
MAX_MODEL = 200  # characters of a model name
MAX_TEXT = 100_000  # characters of any other text
MAX_COUNT = 10**9  # a count of questions, rows or records
MAX_NUMBER = 1e15  # past any score, interval or count a scorecard holds
FIX = ("fix the file, score the answers again (vqalib score --out <this folder>), or move the folder out of the "
       "scores folder: the leaderboard and the site stop on any bad scorecard")
REQUIRED = ("vizwiz-lf_table04_full_set_bootstrap", "commvqa_table01_benchmark")  # the leaderboard's rows of a dataset
# the fields of a table the leaderboard reads: (the value field, {field: kind}); a count may be null only where the
# value is (a "not run" row); a record whose status says "not run" holds none of them
READ_FIELDS = {
    "vizwiz-lf_table04_full_set_bootstrap": ("value", {
        "metric": "text", "reference": "text", "candidate": "text", "value": "number?", "n": "count",
        "ci_low": "number?", "ci_high": "number?", "implementation": "text?"}),
    "classifier_error": (None, {"classifier": "text"}),
    "commvqa_table01_benchmark": ("value", {
        "protocol": "text", "condition": "text", "metric": "text", "value": "number?", "ci_low": "number?",
        "ci_high": "number?", "n_rows": "count"}),
    "afgv_tier_accuracy_predictions": ("accuracy", {
        "tier": "text", "n": "count", "accuracy": "number?", "ci95_low": "number?", "ci95_high": "number?"}),
}
_ID = re.compile(r"[0-9]{1,15}")


class ScorecardError(DataFormatError):
    """A scorecard folder the leaderboard or the site cannot use: the message names the folder, file and field."""


class _Unreadable:
    """A JSON number or constant kept aside while parsing, named with its field by :func:`check_card`."""

    def __init__(self, why: str):
        self.why = why


def max_bytes() -> int:
    """The largest file read from a scorecard folder (:data:`SIZE_SETTING`)."""
    return config.get_int(SIZE_SETTING, DEFAULT_SIZE)


def fail(path: Path, where: str, problem: str):
    """Raise :class:`ScorecardError` for ``path`` (a file of a scorecard folder): folder, file, where, what, the fix.

    Parameters
    ----------
    path : Path
    where : str
        The field or row.
    problem : str
    """
    raise ScorecardError(f"scorecard {shown_path(path.parent)}: {path.name}: {where}: {problem}; {FIX}")


def _paper(dataset: str):
    """The paper module that scores ``dataset``: what its scorecards hold."""
    from vqalib.papers.afgv import scorecard as afgv
    from vqalib.papers.commvqa import scorecard as commvqa
    from vqalib.papers.vizwiz_lf import scorecard as vizwiz_lf

    return {"vizwiz-lf": vizwiz_lf, "commvqa": commvqa, "afgv": afgv}[dataset]


def scorecard_folders(scores: str | Path) -> list[Path]:
    """The scorecard folders under ``scores`` (each holding a ``scorecard.json``), sorted; a folder being swapped in
    (``.name``) is not one; a linked folder is refused.

    Parameters
    ----------
    scores : str or Path
        A folder of scorecard folders (``scores/``).
    """
    scores = Path(scores)
    if not scores.is_dir():
        what = "not a folder" if scores.exists() else "no such folder"
        raise FileNotFoundError(f"{scores}: {what}; give the folder that holds the scorecard folders (vqalib "
                                "leaderboard --scores scores/)")
    found = []
    for folder in sorted(scores.iterdir()):
        card = folder / "scorecard.json"
        if folder.name.startswith(".") or not os.path.lexists(card):
            continue
        if folder.is_symlink():  # named as found: its files would be read from wherever it points
            raise ScorecardError(f"scorecard {folder}: the folder is a symbolic link (to {os.readlink(folder)}), not a "
                                 f"folder of {scores}; copy the scorecard folder there instead, or remove the link")
        found.append(folder)
    return found


def file_bytes(path: Path, *, what: str, missing: str = "the file is missing") -> bytes:
    """The bytes of a scorecard folder's file, refused unless a regular file (no link, pipe or device) within
    :func:`max_bytes`: named before it is opened.

    Parameters
    ----------
    path : Path
    what : str
        What the file holds, for the message.
    missing : str
        What to say when it is absent.
    """
    try:
        info = path.lstat()
    except FileNotFoundError:
        fail(path, "the file", missing)
    if stat.S_ISLNK(info.st_mode):
        fail(path, "the file", f"is a symbolic link (to {os.readlink(path)}), not a regular file of the folder")
    if not stat.S_ISREG(info.st_mode):
        fail(path, "the file", f"is {file_kind(info.st_mode)}, not a regular file")
    most = max_bytes()
    if info.st_size > most:
        fail(path, "the file", f"{info.st_size:,} bytes, over the limit of {most:,} bytes (set {SIZE_SETTING} to "
             f"read larger files of {what})")
    try:
        return read_regular(path, what=what, max_bytes=most)
    except DataFormatError as err:  # replaced or grown since the check
        fail(path, "the file", str(err).removeprefix(f"{path}: "))


def _number(text: str):
    value = float(text)
    return value if math.isfinite(value) and abs(value) <= MAX_NUMBER else _Unreadable(f"{text[:30]} is out of range")


def _whole(text: str):
    return int(text) if len(text.lstrip("-")) <= 15 else _Unreadable(f"a whole number of {len(text)} digits")


def _unique(pairs: list) -> dict:
    keys = [k for k, _ in pairs]
    if len(set(keys)) < len(keys):
        repeated = next(k for k in keys if keys.count(k) > 1)
        raise ValueError(f"key {repeated!r} appears twice in one object (JSON keeps only the last)")
    return dict(pairs)


def parse_card(data: bytes, path: Path) -> object:
    """``scorecard.json``'s bytes parsed: nesting checked first, no NaN or Infinity, no number out of range (kept aside
    and named with its field by :func:`check_card`).

    Parameters
    ----------
    data : bytes
    path : Path
        The file, for messages.
    """
    if deep := nesting_problem(data):
        fail(path, f"line {nesting_line(data, most=limit(DEPTH_SETTING))}", deep)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        fail(path, f"byte {err.start}", "not UTF-8 text")
    try:
        return json.loads(text, parse_float=_number, parse_int=_whole, object_pairs_hook=_unique,
                          parse_constant=lambda name: _Unreadable(f"{name} is not a number a scorecard holds"))
    except json.JSONDecodeError as err:
        fail(path, f"line {err.lineno}, column {err.colno}", f"malformed JSON ({err.msg})")
    except (ValueError, RecursionError) as err:
        fail(path, "top level", f"not a scorecard's JSON ({err})")


def _where(keys: tuple) -> str:
    return "field " + str(keys[0]) + "".join(f"[{k!r}]" for k in keys[1:]) if keys else "top level"


def _kind_problem(value: object, kind: str) -> str | None:
    """Why ``value`` is not of ``kind`` (text, count, number; ``?``: or null), or None."""
    if value is None:
        return None if kind.endswith("?") else "is null"
    base = kind.rstrip("?")
    if base == "text":
        return None if isinstance(value, str) else f"is {json_type(value)}, expected text"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"is {json_type(value)}, expected a number"
    if base == "count" and not (value == int(value) and 0 <= value <= MAX_COUNT):
        return f"is {value!r}, expected a whole number from 0 to {MAX_COUNT:,}"
    return None


def _check(path: Path, keys: tuple, value: object, kind: str) -> None:
    if problem := _kind_problem(value, kind):
        fail(path, _where(keys), problem)


def _not_run(record: dict) -> bool:
    return isinstance(record.get("status"), str) and record["status"].startswith("not run")


def _check_table(path: Path, stem: str, records: list) -> None:
    """The fields of ``stem``'s records that the leaderboard reads, each of its kind."""
    value_field, fields = READ_FIELDS.get(stem, (None, {}))
    for k, record in enumerate(records):
        if fields and _not_run(record) and not any(f in record for f in fields):
            continue
        for field, kind in fields.items():
            keys = ("tables", stem, k, field)
            if field not in record:
                fail(path, _where(keys[:3]), f"has no field {field!r}")
            nullable = value_field is not None and record.get(value_field) is None
            _check(path, keys, record[field], kind + "?" if nullable and kind in ("count", "number") else kind)


def _check_coverage(path: Path, coverage: object) -> None:
    if not isinstance(coverage, dict):
        fail(path, "field coverage", f"is {json_type(coverage)}, expected an object (the answers matched)")
    parts = coverage.get("by_condition", [coverage])
    if not isinstance(parts, list) or not parts or not all(isinstance(p, dict) for p in parts):
        fail(path, _where(("coverage", "by_condition")), "expected a non-empty list of objects")
    for k, part in enumerate(parts):
        keys = ("coverage",) + (("by_condition", k) if part is not coverage else ())
        for field in ("questions", "matched"):
            _check(path, keys + (field,), part.get(field), "count")
        listed = ("missing", "empty", "unknown", "duplicate")
        if any(f in part for f in listed):  # listed coverage: a line of text says each count
            _check(path, keys + ("dataset",), part.get("dataset"), "text")
            for field in listed + tuple(f for f in ("outside_benchmark",) if f in part):
                ids = part.get(field)
                if not isinstance(ids, list) or not all(isinstance(i, (str, int)) for i in ids):
                    fail(path, _where(keys + (field,)), "expected a list of ids")
        _check(path, keys + ("condition",), part.get("condition"), "text?")
        if "aliased" in part:  # rows matched through a paper's declared aliases: {what: count}
            aliased = part["aliased"]
            if not isinstance(aliased, dict):
                fail(path, _where(keys + ("aliased",)), f"is {json_type(aliased)}, expected an object of counts")
            for what, count in aliased.items():
                _check(path, keys + ("aliased", what), count, "count")


def _check_sources(path: Path, source: object) -> None:
    from vqalib.core.answer_formats import FORMATS

    sources = source if isinstance(source, list) else [source]
    if not sources or not all(isinstance(s, dict) for s in sources):
        fail(path, "field source", "expected an object or a non-empty list of objects (the answers files)")
    for k, entry in enumerate(sources):
        keys = ("source",) + ((k,) if isinstance(source, list) else ())
        for field, kind in (("path", "text"), ("format", "text"), ("toolkit", "text?"), ("version", "text?"),
                            ("sha256", "text?"), ("records", "count")):
            _check(path, keys + (field,), entry.get(field), kind)
        if entry["format"] not in FORMATS:
            fail(path, _where(keys + ("format",)), f"{entry['format'][:80]!r} is not an answers format vqalib reads "
                 f"({', '.join(FORMATS)})")


def check_card(card: object, path: Path, *, tag: str, per_question: str) -> dict:
    """``card`` if it has the shape ``vqalib score`` writes, else a :class:`ScorecardError` naming the field.

    Parameters
    ----------
    card : object
        Parsed ``scorecard.json`` (:func:`parse_card`).
    path : Path
        The file, for messages.
    tag : str
        The ``format`` a scorecard carries (absent in one written before the tag).
    per_question : str
        The per-question file's name.
    """
    if not isinstance(card, dict):
        fail(path, "top level", f"is {json_type(card)}, expected a JSON object (a scorecard)")
    for keys, value in walk_json(card):
        if isinstance(value, _Unreadable):
            fail(path, _where(keys), value.why)
        if isinstance(value, str) and len(value) > MAX_TEXT:
            fail(path, _where(keys), f"text of {len(value):,} characters, over {MAX_TEXT:,}")
    if "format" in card and card["format"] != tag:
        fail(path, "field format", f"{str(card['format'])[:80]!r} is not {tag!r}: not a scorecard vqalib reads")
    if card.get("dataset") not in DATASETS:
        fail(path, "field dataset", f"{str(card.get('dataset'))[:80]!r} is not a dataset vqalib scores "
             f"({', '.join(DATASETS)})")
    model = card.get("model")
    if not isinstance(model, str) or not model.strip() or len(model) > MAX_MODEL:
        fail(path, "field model", f"expected the model's name, 1 to {MAX_MODEL} characters, not "
             f"{json_type(model) if not isinstance(model, str) else f'{len(model)} characters'}")
    _check(path, ("vqalib_version",), card.get("vqalib_version"), "text?")
    tables, known = card.get("tables"), _paper(card["dataset"]).SCORECARD_TABLES
    if not isinstance(tables, dict):
        fail(path, "field tables", f"is {json_type(tables)}, expected an object of tables by name")
    for stem, records in tables.items():
        if stem not in known:
            fail(path, _where(("tables", stem)), f"not a table of a {card['dataset']} scorecard ({', '.join(known)})")
        if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
            fail(path, _where(("tables", stem)), "expected a list of records (objects)")
        _check_table(path, stem, records)
    for stem in (s for s in REQUIRED if s in known):
        if not tables.get(stem):
            fail(path, _where(("tables", stem)), "missing or empty: the leaderboard's rows come from it")
    _check_sources(path, card.get("source"))
    _check_coverage(path, card.get("coverage"))
    if not isinstance(card.get("settings", {}), dict):
        fail(path, "field settings", f"is {json_type(card['settings'])}, expected an object")
    if "per_question" in card:
        entry = card["per_question"]
        if not isinstance(entry, dict) or entry.get("file") != per_question:
            fail(path, "field per_question", f"expected {{\"file\": {per_question!r}, \"rows\": <count>}}")
        _check(path, ("per_question", "rows"), entry.get("rows"), "count")
    return card


@functools.cache
def _question_ids(dataset: str, question_set: str | None) -> frozenset[int]:
    settings = {} if question_set is None else {"question_set": question_set}
    return frozenset(_paper(dataset).scorecard_question_ids(settings))


def dataset_question_ids(card: dict, path: Path) -> frozenset[int]:
    """The question ids ``card``'s per-question scores may name (its dataset's, its question set's); read once.

    Parameters
    ----------
    card : dict
        A checked ``scorecard.json``.
    path : Path
        The file, for messages.
    """
    question_set = card.get("settings", {}).get("question_set")
    try:
        return _question_ids(card["dataset"], None if question_set is None else str(question_set))
    except ValueError as err:
        fail(path, "field settings['question_set']", str(err))


def _unknown_field(unknown: pd.DataFrame, keys: frozenset) -> str:
    """Which field of the first unknown row is not one the keys hold (metric, else condition, else reference)."""
    if unknown.empty:
        return ""
    row = unknown.iloc[0]
    if row["metric"] not in {m for _, m, _ in keys}:
        return "metric"
    return "condition" if row.get("condition", "") not in {c for c, _, _ in keys} else "reference"


def _condition(row: pd.Series) -> str:
    return f", condition {str(row['condition'])[:80]!r}" if "condition" in row else ""


def _row_problem(path: Path, frame: pd.DataFrame, bad, field: str, problem) -> None:
    """Fail on the first row where ``bad`` holds, naming its line and ``field``; ``problem`` says what is wrong."""
    if bad.any():
        k = int(bad.to_numpy().argmax())
        fail(path, f"row {k + 2}", f"field {field} {problem(frame.iloc[k])}")


def per_question_frame(data: bytes, path: Path, *, keys: frozenset | None = None, ids: frozenset | None = None,
                       dataset: str = "", rows: int | None = None) -> pd.DataFrame:
    """``per_question.csv``'s bytes as a table (``question_id`` int, ``score`` float): finite scores, whole ids, no
    measure twice for one question and, when given, only ``keys`` and ``ids``; a bad row is named (row = line).

    Parameters
    ----------
    data : bytes
    path : Path
        The file, for messages.
    keys : frozenset of (str, str, str), optional
        The ``(condition, metric, reference)`` the dataset's scorecards hold.
    ids : frozenset of int, optional
        The dataset's question ids.
    dataset : str
        Its name, for messages.
    rows : int, optional
        The rows ``scorecard.json`` says the file has.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        fail(path, f"byte {err.start}", "not UTF-8 text")
    try:  # "" is a reference of its own (none)
        frame = pd.read_csv(io.StringIO(text), keep_default_na=False, dtype=str)
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        fail(path, "top level", f"not a readable CSV table ({str(err).strip()[:200]})")
    missing = [c for c in ("metric", "reference", "question_id", "score") if c not in frame]
    extra = [c for c in frame if c not in ("condition", "metric", "reference", "question_id", "score")]
    if missing or extra:
        fail(path, "line 1 (header)", f"no column {', '.join(missing)}" if missing else
             f"column {str(extra[0])[:80]!r} is not one vqalib score writes")
    if rows is not None and len(frame) != rows:
        fail(path, "top level", f"{len(frame):,} rows, but scorecard.json's per_question says {rows:,} (cut short or "
             "edited?)")
    id_text = frame["question_id"].str.strip()
    _row_problem(path, frame, ~id_text.str.fullmatch(_ID), "question_id",
                 lambda r: f"is not a question id, a whole number ({r['question_id'][:40]!r})")
    scores = pd.to_numeric(frame["score"], errors="coerce")
    _row_problem(path, frame, scores.isna(), "score", lambda r: f"is not a number ({r['score'][:40]!r})")
    _row_problem(path, frame, ~scores.map(math.isfinite), "score",
                 lambda r: f"is not a finite number ({r['score'][:40]!r})")
    frame["question_id"], frame["score"] = id_text.astype("int64"), scores.astype(float)
    condition = frame["condition"] if "condition" in frame else pd.Series("", index=frame.index)
    if keys is not None:
        known = pd.Series(list(zip(condition, frame["metric"], frame["reference"])), index=frame.index).isin(keys)
        _row_problem(path, frame, ~known, _unknown_field(frame[~known], keys),
                     lambda r: f"is not a measure of a {dataset} scorecard: metric {str(r['metric'])[:80]!r}, "
                               f"reference {str(r['reference'])[:80]!r}{_condition(r)}")
    if ids is not None:
        _row_problem(path, frame, ~frame["question_id"].isin(ids), "question_id",
                     lambda r: f"{r['question_id']} is not a question of {dataset} ({len(ids):,} questions, ids "
                               f"{min(ids, default=0)} to {max(ids, default=0)}): the answers of another dataset?")
    twice = pd.DataFrame({"c": condition, "m": frame["metric"], "r": frame["reference"], "q": frame["question_id"]})
    repeated = twice[twice.duplicated(keep=False)]
    if len(repeated):
        first = repeated.iloc[0]
        lines = [str(int(k) + 2) for k in repeated.index[(repeated == first).all(axis=1)][:2]]  # index: position
        fail(path, f"rows {' and '.join(lines)}", f"question {first['q']} is scored twice on metric "
             f"{str(first['m'])[:80]!r}, reference {str(first['r'])[:80]!r}: each question is scored once per measure")
    return frame


def check_per_question(data: bytes, path: Path, *, card: dict | None = None,
                       question_ids: frozenset | set | None = None) -> pd.DataFrame:
    """:func:`per_question_frame` with ``card``'s dataset's measures and question ids (``question_ids`` overrides them;
    no card: the file alone).

    Parameters
    ----------
    data : bytes
    path : Path
    card : dict, optional
        The checked ``scorecard.json`` beside it.
    question_ids : set of int, optional
    """
    if card is None:
        return per_question_frame(data, path)
    ids = frozenset(question_ids) if question_ids is not None else dataset_question_ids(card, path.with_name(
        "scorecard.json"))
    return per_question_frame(data, path, keys=_paper(card["dataset"]).PER_QUESTION_KEYS, ids=ids,
                              dataset=card["dataset"], rows=card.get("per_question", {}).get("rows"))
