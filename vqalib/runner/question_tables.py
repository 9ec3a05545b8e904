"""The question table ``vqalib run --questions`` reads (AFGV rewrites, any user question set), read and checked before
a model loads: every problem raises ``DataFormatError`` naming the file, row (and line) and field, so a table
without ``question`` never sends "Question: None" to the model."""

from __future__ import annotations

import csv
import io as stdio
import json
import math
import numbers
from pathlib import Path

import pandas as pd

from vqalib.core import io

# dataset -> (required columns, alternatives): of each alternative the first column present is required (an item_id
# column, when given, is what names the items; else question_id does)
REQUIRED = {"table": (("question",), (("image",), ("item_id", "question_id"))),
            "afgv": (("question_id", "tier", "question"), (("image", "image_id"),))}
ID_FIELDS = ("question_id", "item_id", "image_id")  # text, or whole numbers (JSON, Parquet)
TEXT_FIELDS = ("question", "image", "tier")  # non-empty text when required
OPTIONAL_TEXT = ("tier", "scenario", "description", "status")  # text or empty when present
MAX_SHOWN = 10


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _type_name(value: object) -> str:
    return io.json_type(value) if type(value) in io.JSON_TYPES else f"a {type(value).__name__}"


def _lines_of_csv(text: str) -> list[int]:
    """The first line of each data record of a CSV text (blank lines skipped, as pandas does)."""
    reader = csv.reader(stdio.StringIO(text.removeprefix("\ufeff"), newline=""))
    starts, end, header_seen = [], 0, False
    for record in reader:
        start, end = end + 1, reader.line_num
        if not record:
            continue
        if header_seen:
            starts.append(start)
        header_seen = True
    return starts


def _read_json_lines(path: Path, data: bytes) -> tuple[list[dict], list[int]]:
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise io.DataFormatError(f"{path}: line {line}: not UTF-8 text (byte 0x{data[err.start]:02x} at offset "
                                 f"{err.start}); save the file as UTF-8") from None
    records, lines = [], []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            raise io.DataFormatError(f"{path}: line {number}: not JSON ({err.msg} at column {err.colno})") from None
        if not isinstance(record, dict):
            raise io.DataFormatError(f"{path}: line {number}: {io.json_type(record)}, expected one question as a "
                                     f"JSON object")
        records.append(record)
        lines.append(number)
    return records, lines


def read_question_table(path: str | Path) -> pd.DataFrame:
    """A question table from CSV, JSON lines, a JSON array or Parquet (AFGV rewrites, user question sets), read strictly.

    Parameters
    ----------
    path : str or Path
        ``.parquet``, ``.jsonl``, ``.json`` (an array of objects); any other suffix is read as CSV.

    Returns
    -------
    pandas.DataFrame
        CSV cells as strings; ``attrs["file"]`` and ``attrs["lines"]`` (row -> line) for the messages.
    """
    path = Path(path)
    lines: list[int] | None = None
    if path.suffix == ".parquet":
        with io.open_regular(path, what="question table") as handle:
            try:
                frame = pd.read_parquet(handle)
            except Exception as error:  # noqa: BLE001 - pyarrow raises many types for a damaged file
                raise io.DataFormatError(f"{path}: not a readable Parquet table ({type(error).__name__}: "
                                         f"{error})") from None
    elif path.suffix in (".jsonl", ".json"):
        if path.suffix == ".json":
            document = io.read_json(path)
            if not isinstance(document, list) or not all(isinstance(r, dict) for r in document):
                raise io.DataFormatError(f"{path}: top level: expected an array of question objects, got "
                                         f"{io.json_type(document)}")
            records = document
        else:
            records, lines = _read_json_lines(path, io.read_regular(path, what="question table"))
        frame = pd.DataFrame(records, dtype=object)  # object: ids stay whole numbers, never floats beside a gap
    else:
        frame = io.read_csv_text(path)
        lines = _lines_of_csv(io.read_regular(path, what="question table").decode("utf-8"))
    if frame.empty:
        raise io.DataFormatError(f"{path}: no questions (the table has no rows)")
    frame.attrs["file"] = str(path)
    if lines is not None and len(lines) == len(frame):
        frame.attrs["lines"] = dict(zip(frame.index, lines))
    return frame


def describe_row(frame: pd.DataFrame, label: object) -> str:
    """How messages name a row of a question table: ``row 3 (line 5)``, or ``row 3`` where lines are unknown.

    Parameters
    ----------
    frame : pandas.DataFrame
        The table.
    label : object
        The row's index label.
    """
    line = frame.attrs.get("lines", {}).get(label)
    return f"row {label}" + (f" (line {line})" if line is not None else "")


def _cell_problem(column: str, value: object, *, required: bool) -> str | None:
    if _missing(value):
        return "missing" if required else None
    if column in ID_FIELDS:
        if isinstance(value, bool) or not isinstance(value, (str, numbers.Integral)):
            return f"{_type_name(value)}, expected text or a whole number"
    elif not isinstance(value, str):
        return f"{_type_name(value)}, expected text"
    if required and not str(value).strip():
        return "empty"
    return None


def check_question_table(frame: pd.DataFrame, *, dataset: str) -> None:
    """Raise one ``DataFormatError`` listing what a question table lacks for its dataset's items (``--questions``).

    Parameters
    ----------
    frame : pandas.DataFrame
        The table (:func:`read_question_table`, or a frame built in memory).
    dataset : {"table", "afgv"}
        Whose items the table is for (:data:`REQUIRED` columns).
    """
    from vqalib.papers.afgv.tiers import TIERS

    file = frame.attrs.get("file", "question table")
    columns, alternatives = REQUIRED[dataset]
    lacking = [repr(c) for c in columns if c not in frame] + [
        " or ".join(repr(c) for c in group) for group in alternatives if not any(c in frame for c in group)]
    if lacking:
        raise io.DataFormatError(f"{file}: lacks required column(s) {', '.join(lacking)} (a {dataset!r} question "
                                 f"table); the table has {list(map(str, frame.columns))}")
    required = set(columns) | {next(c for c in group if c in frame) for group in alternatives}
    checked = [c for c in frame.columns if c in required or c in OPTIONAL_TEXT + ID_FIELDS]
    problems = []
    for label, row in zip(frame.index, frame[checked].itertuples(index=False, name=None)):
        for column, value in zip(checked, row):
            why = _cell_problem(column, value, required=column in required)
            if why is None and dataset == "afgv" and column == "tier" and value not in TIERS:
                why = f"{value!r} is not an AFGV tier ({', '.join(TIERS)})"
            if why:
                problems.append(f"{describe_row(frame, label)}, field {column!r}: {why}")
    if problems:
        more = f" (and {len(problems) - MAX_SHOWN} more)" if len(problems) > MAX_SHOWN else ""
        raise io.DataFormatError(f"{file}: " + "; ".join(problems[:MAX_SHOWN]) + more)
