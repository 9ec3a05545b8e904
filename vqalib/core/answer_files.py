"""Model answer files from anywhere, read into one table: plain CSV/JSONL, lmms-eval samples, VLMEvalKit predictions.

Serves ``vqalib score`` and ``vqalib import`` (ARCHITECTURE.md, "Scoring any model"): a researcher's answers
arrive as a plain table (``question_id``, ``answer``), as the samples file lmms-eval writes with
``--log_samples`` (``{date}_samples_{task}.jsonl``: ``doc_id``, ``doc``, ``target``, ``resps``,
``filtered_resps``, ``doc_hash`` and the keys the task's ``process_results`` returns), as a VLMEvalKit
prediction file (``{model}_{dataset}.xlsx|tsv|json``: the dataset's columns plus ``prediction``), as the
CommVQA authors' result CSV, or as a run file of ``vqalib run``. Each format is one
:class:`~vqalib.core.answer_formats.AnswerFormat` in :data:`~vqalib.core.answer_formats.FORMATS` (how to recognise
it, read it and find its toolkit's version); adding one is one class and
:func:`~vqalib.core.answer_formats.register`. The format is detected from the content; every problem is a
:class:`~vqalib.core.io.DataFormatError` naming the file, the line or row and the field.
Nothing here knows a dataset: joining the rows to a dataset's questions is :func:`match_answers`'s job,
with the dataset's ids given by the caller (:mod:`vqalib.core.answer_matching`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

from vqalib.core.answer_formats import FORMATS, _json_line, _line_length, _read_excel
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
    """The format of an answers file, from its content (the suffix only says how to parse it).

    Parameters
    ----------
    path : str or Path
        The answers file.

    Returns
    -------
    str
        The name of the first format of :data:`~vqalib.core.answer_formats.FORMATS` that recognises it; a :class:`DataFormatError` naming what
        was found and listing the accepted shapes when none does.
    """
    path = Path(path)
    if not path.is_file():
        raise DataFormatError(f"{path}: no such file (or not a regular file)")
    suffix = path.suffix.lower()
    if suffix in (".xlsx", ".xls"):
        columns = list(_read_excel(path).columns)
        found = next((f.name for f in FORMATS.values() if f.from_columns(columns)), None)
    elif suffix in (".csv", ".tsv"):
        columns = list(read_csv_text(path, sep="\t" if suffix == ".tsv" else ",").columns)
        found = next((f.name for f in FORMATS.values() if f.from_columns(columns)), None)
    else:
        first = _first_json_record(path)
        if first == "json-array":
            rows = read_json(path, max_depth=limit(DEPTH_SETTING))
            first = rows[0] if isinstance(rows, list) and rows else None
        found = next((f.name for f in FORMATS.values() if f.from_record(first)), None) if isinstance(first, dict) else None
        columns = sorted(first) if isinstance(first, dict) else []
    if found is None:
        shapes = "; ".join(f"{f.name}: {f.shape}" for f in FORMATS.values())
        raise DataFormatError(f"{path}: not an answers file this reader knows: columns/keys {columns}; the accepted "
                              f"shapes are {shapes}")
    return found


# --- reading -------------------------------------------------------------------------------------

def _frame(rows: list[dict]) -> pd.DataFrame:
    frame = pd.DataFrame(rows)
    for column in COLUMNS:
        if column not in frame:
            frame[column] = None
    return frame[COLUMNS + [c for c in frame.columns if c not in COLUMNS]]


def read_answers(path: str | Path, *, format: str | None = None) -> tuple[pd.DataFrame, AnswerSource]:
    """Read a model's answers file into one table (input of ``vqalib score`` / ``vqalib import``).

    Parameters
    ----------
    path : str or Path
        The answers file (``.csv``, ``.tsv``, ``.xlsx``, ``.json``, ``.jsonl``).
    format : str, optional
        A name of :data:`~vqalib.core.answer_formats.FORMATS` except ``vqalib-run`` (read by :mod:`vqalib.runner.handoff`); default: detected
        from the content (:func:`detect_format`).

    Returns
    -------
    tuple
        ``(answers, source)``: one row per record, columns :data:`COLUMNS` (ids as text, ``answer`` None when
        missing) then the file's own columns; and the :class:`AnswerSource` (format, toolkit, version, SHA-256).
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
