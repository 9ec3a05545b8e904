"""Model answer files from anywhere, read into one table: plain CSV/JSONL, lmms-eval samples, Inspect AI eval logs,
VLMEvalKit predictions, a JSON object keyed by question id, a paper's declared result file (``vqalib score`` /
``vqalib import``). The format is detected from the content; every problem is a
:class:`~vqalib.core.io.DataFormatError` naming the file, line and field. Knows no dataset."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

from vqalib.core.answer_formats import FORMATS, _json_line, _line_length, _read_excel, accepted_shapes
from vqalib.core.input_limits import DEPTH_SETTING, LINE_SETTING, limit, line_problem
from vqalib.core.io import DataFormatError, open_regular, read_csv_text, read_json, sha256_of

COLUMNS = ["line", "item_id", "question_id", "doc_id", "index", "doc_hash", "tier", "condition", "question", "answer"]


@dataclass(frozen=True)
class AnswerSource:
    """Where a model's answers came from (the ``source`` of a scorecard)."""

    path: str
    format: str
    toolkit: str | None
    version: str | None
    sha256: str
    records: int

    def to_dict(self) -> dict:
        """The fields as a JSON-ready dict."""
        return asdict(self)


# --- detection ---------------------------------------------------------------------------------

def _first_json_record(path: Path) -> object:
    """The first non-empty line of a JSON-lines file parsed, or the JSON document's first element."""
    with open_regular(path, what="answers file") as handle:  # a pipe is refused, not waited on
        head = handle.read(1 << 16)
        if head.decode("utf-8", errors="replace").lstrip("\ufeff").lstrip().startswith("["):
            return "json-array"
        handle.seek(0)
        most = limit(LINE_SETTING)
        for number, raw in enumerate(iter(lambda: handle.readline(most + 2), b""), start=1):
            if len(raw.removesuffix(b"\n")) > most:  # counted without its newline, as read_json_lines counts it
                raise DataFormatError(f"{path}: line {number}: {line_problem(_line_length(handle, raw))}")
            if raw.strip():
                return _json_line(path, number, raw, quiet=True)
    return None


def detect_format(path: str | Path) -> str:
    """The name of an answers file's format, from its content (the suffix only says how to parse it): the first
    of :data:`~vqalib.core.answer_formats.FORMATS` that recognises it; none is a DataFormatError listing the shapes.

    Parameters
    ----------
    path : str or Path
        The answers file.
    """
    path = Path(path)
    if not path.is_file():
        raise DataFormatError(f"{path}: no such file (or not a regular file)")
    suffix, columns = path.suffix.lower(), []
    found = next((f.name for f in FORMATS.values() if f.from_file(path)), None)  # by name or container (.eval)
    if found is None and suffix in (".xlsx", ".xls"):
        columns = list(_read_excel(path).columns)
        found = next((f.name for f in FORMATS.values() if f.from_columns(columns)), None)
    elif found is None and suffix in (".csv", ".tsv"):
        columns = list(read_csv_text(path, sep="\t" if suffix == ".tsv" else ",").columns)
        found = next((f.name for f in FORMATS.values() if f.from_columns(columns)), None)
    elif found is None:
        first = _first_json_record(path)
        if first == "json-array":
            rows = read_json(path, max_depth=limit(DEPTH_SETTING))
            first = rows[0] if isinstance(rows, list) and rows else None
        found = next((f.name for f in FORMATS.values() if f.from_record(first)), None) if isinstance(first, dict) else None
        columns = sorted(first) if isinstance(first, dict) else []
        if found is None and first != "json-array":  # one JSON object, on one line or many (a release's keyed file)
            document = _json_document(path)
            if isinstance(document, dict):
                found = next((f.name for f in FORMATS.values() if f.from_document(document)), None)
                columns = list(document)
    if found is None:
        shown = columns if len(columns) <= 12 else [*columns[:12], f"... ({len(columns)} in all)"]
        raise DataFormatError(f"{path}: not an answers file this reader knows: columns/keys {shown}; "
                              f"{accepted_shapes()}")
    return found


def _json_document(path: Path) -> object:
    """The file as one JSON document, or None when it is not one (JSON lines, text)."""
    try:
        return read_json(path, max_depth=limit(DEPTH_SETTING))
    except DataFormatError:
        return None


# --- reading -------------------------------------------------------------------------------------

def _frame(rows: list[dict]) -> pd.DataFrame:
    frame = pd.DataFrame(rows)
    for column in COLUMNS:
        if column not in frame:
            frame[column] = None
    return frame[COLUMNS + [c for c in frame.columns if c not in COLUMNS]]


def read_answers(path: str | Path, *, format: str | None = None) -> tuple[pd.DataFrame, AnswerSource]:
    """Read a model's answers file into one table (:data:`COLUMNS`, then its own) and its :class:`AnswerSource`.

    Parameters
    ----------
    path : str or Path
        The answers file (``.csv``, ``.tsv``, ``.xlsx``, ``.json``, ``.jsonl``, ``.eval``).
    format : str, optional
        A name of :data:`~vqalib.core.answer_formats.FORMATS` except ``vqalib-run``; default detected from the content.
    """
    path = Path(path)
    name = format or detect_format(path)
    if name not in FORMATS:
        raise ValueError(f"format must be one of {list(FORMATS)}, not {name!r}")
    fmt = FORMATS[name]
    rows = fmt.rows(path)
    source = AnswerSource(path=str(path), format=name, toolkit=fmt.toolkit, version=fmt.version(path),
                          sha256=sha256_of(path), records=len(rows))
    return _frame(rows), source
