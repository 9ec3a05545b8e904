"""Model answer files from anywhere, read into one table: plain CSV/JSONL, lmms-eval samples, VLMEvalKit predictions.

Serves ``vqalib score`` and ``vqalib import`` (ARCHITECTURE.md, "Scoring any model"): a researcher's answers
arrive as a plain table (``question_id``, ``answer``), as the samples file lmms-eval writes with
``--log_samples`` (``{date}_samples_{task}.jsonl``: ``doc_id``, ``doc``, ``target``, ``resps``,
``filtered_resps``, ``doc_hash`` and the keys the task's ``process_results`` returns), as a VLMEvalKit
prediction file (``{model}_{dataset}.xlsx|tsv|json``: the dataset's columns plus ``prediction``), as the
CommVQA authors' result CSV, or as a run file of ``vqalib run``. The format is detected from the content;
every problem is a :class:`~vqalib.core.io.DataFormatError` naming the file, the line or row and the field.
Nothing here knows a dataset: joining the rows to a dataset's questions is :func:`match_answers`'s job,
with the dataset's ids given by the caller (:mod:`vqalib.core.answer_matching`).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

from vqalib.core.input_limits import DEPTH_SETTING, LINE_SETTING, limit, line_problem, nesting_problem, workbook_problem
from vqalib.core.io import DataFormatError, open_regular, read_csv_text, read_json, read_regular, sha256_of

FORMATS = ("plain", "lmms-eval", "vlmevalkit", "commvqa-results", "vqalib-run")
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


def _line_length(handle, raw: bytes) -> int:
    """The length, without its newline, of a line whose start ``raw`` was read (measured, not held)."""
    length = len(raw)
    while not raw.endswith(b"\n"):
        raw = handle.readline(1 << 20)
        if not raw:
            return length
        length += len(raw)
    return length - 1


def _json_line(path: Path, number: int, raw: bytes, *, quiet: bool = False, depth: int | None = None) -> object:
    """One JSON line parsed, its nesting checked first (:func:`vqalib.core.input_limits.nesting_problem`, up to
    ``depth``); ``quiet``: None instead of an error for text that is not JSON (format detection)."""
    deep = nesting_problem(raw, most=depth)
    if deep:
        raise DataFormatError(f"{path}: line {number}: {deep}")
    try:
        return json.loads(raw.decode("utf-8", errors="replace" if quiet else "strict").lstrip("\ufeff"))
    except RecursionError:
        raise DataFormatError(f"{path}: line {number}: JSON nested too deep for the parser") from None
    except ValueError:
        if quiet:
            return None
        raise


def _record_format(record: object) -> str | None:
    if not isinstance(record, dict):
        return None
    if "item_key" in record and "schema" in record:
        return "vqalib-run"
    if "doc_id" in record and ("filtered_resps" in record or "resps" in record):
        return "lmms-eval"
    if "prediction" in record:
        return "vlmevalkit"
    if "answer" in record:
        return "plain"
    return None


def _columns_format(columns: list[str]) -> str | None:
    if "prediction" in columns:
        return "vlmevalkit"
    if "generated_answer" in columns and "answers" in columns:
        return "commvqa-results"
    if "answer" in columns:
        return "plain"
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
        One of :data:`FORMATS`; a :class:`DataFormatError` naming what was found when none fits.
    """
    path = Path(path)
    if not path.is_file():
        raise DataFormatError(f"{path}: no such file (or not a regular file)")
    suffix = path.suffix.lower()
    if suffix in (".xlsx", ".xls"):
        columns = list(_read_excel(path).columns)
        found = _columns_format(columns)
    elif suffix in (".csv", ".tsv"):
        columns = list(read_csv_text(path, sep="\t" if suffix == ".tsv" else ",").columns)
        found = _columns_format(columns)
    else:
        first = _first_json_record(path)
        if first == "json-array":
            rows = read_json(path, max_depth=limit(DEPTH_SETTING))
            first = rows[0] if isinstance(rows, list) and rows else None
        found = _record_format(first)
        columns = sorted(first) if isinstance(first, dict) else []
    if found is None:
        raise DataFormatError(
            f"{path}: not an answers file this reader knows: columns/keys {columns}; expected `question_id` and "
            "`answer` (plain), lmms-eval samples (`doc_id`, `filtered_resps`), a VLMEvalKit prediction file "
            "(`prediction`), the CommVQA authors' result CSV (`generated_answer`, `answers`) or a `vqalib run` file")
    return found


# --- reading -------------------------------------------------------------------------------------

def _read_excel(path: Path) -> pd.DataFrame:
    try:
        with open_regular(path, what="answers workbook") as handle:
            bomb = workbook_problem(handle)  # the zip directory only: no sheet is inflated
            if bomb:
                raise DataFormatError(f"{path}: {bomb}")
            return pd.read_excel(handle, dtype=str, keep_default_na=False)
    except DataFormatError:
        raise
    except Exception as err:  # openpyxl raises many types for a damaged workbook
        raise DataFormatError(f"{path}: not a readable .xlsx workbook: {type(err).__name__}: {err}") from None


def read_json_lines(path: str | Path) -> list[dict]:
    """Every line of a JSON-lines file as an object; a bad line is an error naming the file and line.

    Parameters
    ----------
    path : str or Path
        The file (UTF-8; blank lines are skipped).

    Returns
    -------
    list of dict
        One object per non-blank line, with ``_line`` (1-based line number) added.
    """
    path = Path(path)
    data = read_regular(path, what="JSON-lines file")
    if not data.strip():
        raise DataFormatError(f"{path}: the file is empty ({len(data)} bytes); expected one JSON object per line")
    out = []
    lines = data.split(b"\n")
    longest, depth = limit(LINE_SETTING), limit(DEPTH_SETTING)  # read once, not per line
    for number, raw in enumerate(lines, start=1):
        if len(raw) > longest:
            raise DataFormatError(f"{path}: line {number}: {line_problem(len(raw))}")
        if not raw.strip():
            continue
        try:
            record = _json_line(path, number, raw, depth=depth)
        except UnicodeDecodeError as err:
            raise DataFormatError(f"{path}: line {number}: not UTF-8 text (byte 0x{raw[err.start]:02x} at byte "
                                  f"column {err.start + 1}); save the file as UTF-8") from None
        except DataFormatError:
            raise
        except ValueError as err:
            last = number == len(lines) or (number == len(lines) - 1 and not lines[-1].strip())
            hint = "; the file looks truncated (an interrupted write?)" if last else ""
            raise DataFormatError(f"{path}: line {number}: not valid JSON ({err}){hint}") from None
        if not isinstance(record, dict):
            raise DataFormatError(f"{path}: line {number}: expected a JSON object, found {type(record).__name__}")
        record["_line"] = number
        out.append(record)
    return out


def _text(value: object) -> str | None:
    """An answer cell as text: None for missing, numbers as written."""
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return None
    return value if isinstance(value, str) else str(value)


def as_id(value: object) -> str | None:
    """An id cell as text: stripped, ``12.0`` (a spreadsheet's number) as ``12``, empty as None.

    Parameters
    ----------
    value : object
        A cell of an id column.

    Returns
    -------
    str or None
    """
    text = _text(value)
    if text is None or not text.strip():
        return None
    text = text.strip()
    return text[:-2] if text.endswith(".0") and text[:-2].lstrip("-").isdigit() else text  # 12.0 from a spreadsheet


def _frame(rows: list[dict]) -> pd.DataFrame:
    frame = pd.DataFrame(rows)
    for column in COLUMNS:
        if column not in frame:
            frame[column] = None
    return frame[COLUMNS + [c for c in frame.columns if c not in COLUMNS]]


def _require_answer_column(path: Path, columns, field: str) -> None:
    if field not in columns:
        raise DataFormatError(f"{path}: line 1 (header): no `{field}` column; the columns are {list(columns)}")


def _plain_rows(path: Path) -> list[dict]:
    suffix = path.suffix.lower()
    if suffix in (".csv", ".tsv"):
        table = read_csv_text(path, sep="\t" if suffix == ".tsv" else ",")
        _require_answer_column(path, table.columns, "answer")
        records = [{**r, "_line": i + 2} for i, r in enumerate(table.to_dict("records"))]
    elif suffix in (".xlsx", ".xls"):
        table = _read_excel(path)
        _require_answer_column(path, table.columns, "answer")
        records = [{**r, "_line": i + 2} for i, r in enumerate(table.to_dict("records"))]
    else:
        records = read_json_lines(path)
    rows = []
    for r in records:
        if "answer" not in r:
            raise DataFormatError(f"{path}: line {r['_line']}: field `answer` is missing; keys are "
                                  f"{sorted(k for k in r if k != '_line')}")
        rows.append({**{k: v for k, v in r.items() if k != "_line"}, "line": r["_line"],
                     "item_id": as_id(r.get("item_id")), "question_id": as_id(r.get("question_id")),
                     "tier": _text(r.get("tier")), "condition": _text(r.get("condition")),
                     "question": _text(r.get("question")), "answer": _text(r["answer"])})
    return rows


def _first_string(value: object) -> str | None:
    """The first text inside an lmms-eval response field (``[["text"]]``, ``["text"]`` or ``"text"``)."""
    while isinstance(value, (list, tuple)):
        if not value:
            return None
        value = value[0]
    return _text(value)


def _lmms_rows(path: Path) -> list[dict]:
    rows = []
    for r in read_json_lines(path):
        where = f"{path}: line {r['_line']}"
        if "doc_id" not in r:
            raise DataFormatError(f"{where}: field `doc_id` is missing (an lmms-eval samples line has doc_id, "
                                  f"filtered_resps, doc_hash); keys are {sorted(k for k in r if k != '_line')}")
        field = "filtered_resps" if "filtered_resps" in r else "resps"
        doc = r.get("doc") if isinstance(r.get("doc"), dict) else {}
        item = r.get("item_id", doc.get("item_id"))
        rows.append({"line": r["_line"], "item_id": as_id(item if not isinstance(item, (list, dict)) else None),
                     "question_id": as_id(doc.get("question_id")), "doc_id": int(r["doc_id"]),
                     "doc_hash": _text(r.get("doc_hash")), "tier": _text(doc.get("tier")),
                     "condition": _text(doc.get("condition")), "question": _text(doc.get("question")),
                     "answer": _first_string(r.get(field))})
    return rows


def _vlmevalkit_rows(path: Path) -> list[dict]:
    suffix = path.suffix.lower()
    if suffix == ".xlsx":
        table = _read_excel(path)
        _require_answer_column(path, table.columns, "prediction")
        records = [{**r, "_line": i + 2} for i, r in enumerate(table.to_dict("records"))]
    elif suffix in (".tsv", ".csv"):
        table = read_csv_text(path, sep="\t" if suffix == ".tsv" else ",")
        _require_answer_column(path, table.columns, "prediction")
        records = [{**r, "_line": i + 2} for i, r in enumerate(table.to_dict("records"))]
    else:  # VLMEvalKit's dump(): a JSON array of row objects
        data = read_json(path, max_depth=limit(DEPTH_SETTING))
        if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
            raise DataFormatError(f"{path}: top level: expected a JSON array of row objects (VLMEvalKit's .json "
                                  f"prediction file), found {type(data).__name__}")
        records = [{**r, "_line": i + 1} for i, r in enumerate(data)]
    rows = []
    for r in records:
        if "prediction" not in r:
            raise DataFormatError(f"{path}: row {r['_line']}: field `prediction` is missing")
        rows.append({"line": r["_line"], "item_id": as_id(r.get("item_id")), "question_id": as_id(r.get("question_id")),
                     "index": as_id(r.get("index")), "tier": _text(r.get("tier")),
                     "condition": _text(r.get("condition")), "question": _text(r.get("question")),
                     "answer": _text(r["prediction"])})
    return rows


def _toolkit_version(path: Path, fmt: str) -> str | None:
    """The toolkit's version when a file beside the answers records it (lmms-eval results JSON, VLMEvalKit status.json)."""
    if fmt == "lmms-eval":
        candidates = sorted(path.parent.glob("*results*.json"))
        keys = ("lmms_eval_version", "version")
    elif fmt == "vlmevalkit":
        candidates = [path.parent / "status.json"]
        keys = ("commit", "version")
    else:
        return None
    for candidate in candidates:
        try:
            data = json.loads(read_regular(candidate, what="toolkit results file").decode("utf-8"))
        except (OSError, ValueError):  # NotRegularFile is a ValueError: a pipe beside the answers is skipped
            continue
        stack = [data]
        while stack:
            value = stack.pop()
            if isinstance(value, dict):
                for key in keys:
                    if isinstance(value.get(key), str) and value[key] and "unknown" not in value[key]:
                        return f"{key} {value[key]}"
                stack.extend(value.values())
    return None


def read_answers(path: str | Path, *, format: str | None = None) -> tuple[pd.DataFrame, AnswerSource]:
    """Read a model's answers file into one table (input of ``vqalib score`` / ``vqalib import``).

    Parameters
    ----------
    path : str or Path
        The answers file (``.csv``, ``.tsv``, ``.xlsx``, ``.json``, ``.jsonl``).
    format : str, optional
        One of :data:`FORMATS` except ``vqalib-run`` (read by :mod:`vqalib.runner.handoff`); default: detected
        from the content (:func:`detect_format`).

    Returns
    -------
    tuple
        ``(answers, source)``: one row per record, columns :data:`COLUMNS` (ids as text, ``answer`` None when
        missing) then the file's own columns; and the :class:`AnswerSource` (format, toolkit, version, SHA-256).
    """
    path = Path(path)
    fmt = format or detect_format(path)
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, not {fmt!r}")
    if fmt == "vqalib-run":
        raise ValueError(f"{path}: a `vqalib run` file is read with vqalib.runner.handoff.load_run, not here")
    if fmt == "lmms-eval":
        rows, toolkit = _lmms_rows(path), "lmms-eval"
    elif fmt == "vlmevalkit":
        rows, toolkit = _vlmevalkit_rows(path), "VLMEvalKit"
    elif fmt == "commvqa-results":
        table = read_csv_text(path, required=("generated_answer", "answers"))
        rows = [{**r, "line": i + 2, "answer": _text(r["generated_answer"]) or None}
                for i, r in enumerate(table.to_dict("records"))]
        toolkit = None
    else:
        rows, toolkit = _plain_rows(path), None
    source = AnswerSource(path=str(path), format=fmt, toolkit=toolkit, version=_toolkit_version(path, fmt),
                          sha256=sha256_of(path), records=len(rows))
    return _frame(rows), source
