"""The answers-file formats: one :class:`AnswerFormat` per format in :data:`FORMATS`, in detection order (detect,
read rows, toolkit version). A new format is one subclass and :func:`register`; a paper's result CSV is declared in
its ``declarations.toml``. Readers check the input limits and name the file, line and field of a problem."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from vqalib.core import declarations, inspect_logs
from vqalib.core.input_limits import DEPTH_SETTING, LINE_SETTING, limit, line_problem, nesting_problem, workbook_problem
from vqalib.core.io import DataFormatError, open_regular, read_csv_text, read_json, read_regular


# --- reading records ---------------------------------------------------------------------------

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
    """One JSON line parsed, nesting checked first; ``quiet``: None, not an error, for text that is not JSON."""
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
    """Every line of a UTF-8 JSON-lines file as a dict with ``_line`` added (blank lines skipped); a bad
    line is a DataFormatError naming it."""
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
    """An id cell as text: stripped, ``12.0`` (a spreadsheet's number) as ``12``, empty as None."""
    text = _text(value)
    if text is None or not text.strip():
        return None
    text = text.strip()
    return text[:-2] if text.endswith(".0") and text[:-2].lstrip("-").isdigit() else text  # 12.0 from a spreadsheet



# --- the formats -------------------------------------------------------------------------------

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
        try:
            records = read_json_lines(path)
        except DataFormatError:
            if not _one_document(path):
                raise
            raise DataFormatError(f"{path}: one JSON document, not JSON lines (one object per line) as the plain "
                                  f"format reads; {accepted_shapes()}") from None
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


def _one_document(path: Path) -> bool:
    """Whether the file is one JSON document spanning several lines (what JSON lines is not)."""
    try:
        return not isinstance(read_json(path, max_depth=limit(DEPTH_SETTING)), (str, int, float))
    except DataFormatError:
        return False


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


def _version_beside(path: Path, status: Path, keys: tuple[str, ...]) -> str:
    """The first non-empty ``key value`` of ``keys`` in the JSON file ``status`` beside the answers ``path``, else
    "unknown: <why>"."""
    try:
        data = json.loads(read_regular(status, what="toolkit status file").decode("utf-8"))
    except FileNotFoundError:
        return f"unknown: no {status.name} beside {path.name}"
    except (OSError, ValueError) as error:  # NotRegularFile is a ValueError: a pipe beside the answers is skipped
        return f"unknown: {status.name} beside {path.name} could not be read as JSON: {error}"
    stack = [data]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            for key in keys:
                if isinstance(value.get(key), str) and value[key] and "unknown" not in value[key]:
                    return f"{key} {value[key]}"
            stack.extend(value.values())
    return f"unknown: {status.name} beside {path.name} records no {' or '.join(keys)}"


def _package_version(text: object) -> bool:
    """Whether ``text`` is a package version (PEP 440), not e.g. a ``branch@commit``."""
    from packaging.version import InvalidVersion, Version

    try:
        return isinstance(text, str) and bool(Version(text))
    except InvalidVersion:
        return False


def _lmms_version(path: Path) -> str:
    """lmms-eval's package version: as its installed metadata gave it to the task (``lmms_eval_package_version`` in a
    sample), else the results file's ``lmms_eval_version`` when that is a package version, else "unknown: <why>"."""
    first = read_json_lines(path)[0]
    if _package_version(first.get("lmms_eval_package_version")):
        return first["lmms_eval_package_version"]
    logged = None
    for candidate in sorted(path.parent.glob("*results*.json")):
        try:
            data = json.loads(read_regular(candidate, what="toolkit results file").decode("utf-8"))
        except (OSError, ValueError):  # NotRegularFile is a ValueError: a pipe beside the answers is skipped
            continue
        found = data if isinstance(data, dict) else {}
        logged = found.get("lmms_eval_version") or (found.get("config") or {}).get("lmms_eval_version")
        if _package_version(logged):
            return logged
    why = (f"the results file's lmms_eval_version {logged!r} is a git branch@commit of the folder lmms-eval ran in, "
           f"not its package version" if logged else "no results file beside the samples records it")
    return (f"unknown: {why}, and the samples carry no lmms_eval_package_version (tasks written by "
            f"`vqalib export lmms-eval` log it)")


class AnswerFormat:
    """One answers-file format: name, toolkit, a one-line example ``shape`` and the ``fields`` it needs, how to
    recognise and read it, and its toolkit's version. Subclass and :func:`register` it to add a format."""

    name: str = ""
    toolkit: str | None = None
    shape: str = ""
    fields: tuple[tuple[str, ...], ...] = ()  # the columns or keys it needs, each one of some names (closest shapes)
    record: str = "line"  # what a row's ``line`` counts, for messages

    def from_file(self, path: Path) -> bool:
        """Whether ``path`` is in this format, from its name or container alone (tried before any parsing)."""
        return False

    def from_record(self, record: dict) -> bool:
        """Whether a JSON(-lines) file whose first record is ``record`` is in this format."""
        return False

    def from_columns(self, columns: list[str]) -> bool:
        """Whether a table (CSV, TSV, workbook) with header ``columns`` is in this format."""
        return False

    def from_document(self, document: dict) -> bool:
        """Whether a file that is one JSON object, ``document``, is in this format."""
        return False

    def rows(self, path: Path) -> list[dict]:
        """The file's records read strictly, one dict each (``line``, ``answer``, the ids it has, its own fields); a
        problem is a DataFormatError naming the file, line and field."""
        raise NotImplementedError

    def version(self, path: Path) -> str | None:
        """The toolkit's version, when a file beside the answers records it."""
        return None


class _VqalibRun(AnswerFormat):
    name, toolkit = "vqalib-run", "vqalib run"
    shape = 'a `vqalib run` file (read by vqalib.runner.handoff), e.g. {"schema": ..., "item_key": ...}'
    fields = (("schema",), ("item_key",))

    def from_record(self, record):
        return "item_key" in record and "schema" in record

    def rows(self, path):
        raise ValueError(f"{path}: a `vqalib run` file is read with vqalib.runner.handoff.load_run, not here")


class _LmmsEval(AnswerFormat):
    name, toolkit = "lmms-eval", "lmms-eval"
    shape = 'lmms-eval samples JSONL, e.g. {"doc_id": 0, "filtered_resps": ["A red car."], "doc_hash": ...}'
    fields = (("doc_id",), ("filtered_resps", "resps"))

    def from_record(self, record):
        return "doc_id" in record and ("filtered_resps" in record or "resps" in record)

    def rows(self, path):
        return _lmms_rows(path)

    def version(self, path):
        return _lmms_version(path)


class _InspectLog(AnswerFormat):
    name, toolkit = "inspect", "Inspect AI"
    shape = ('an Inspect AI eval log (.eval, read by inspect_ai in its own venv: `make inspect-env`) or its JSON '
             f'lines, e.g. {{"{inspect_logs.SAMPLE_KEY}": "3", "metadata": {{"item_id": "3"}}, "completion": "A car."}}')
    fields, record = ((inspect_logs.SAMPLE_KEY,), ("metadata",), ("completion",)), "sample"

    def from_file(self, path):
        return inspect_logs.is_eval_log(path)

    def from_record(self, record):
        return inspect_logs.SAMPLE_KEY in record and "completion" in record

    def _records(self, path: Path) -> list[dict]:
        return inspect_logs.converted_records(path) if self.from_file(path) else read_json_lines(path)

    def rows(self, path):
        rows = []
        for r in self._records(path):
            where = f"{path}: sample {r['_line']} (id {r.get(inspect_logs.SAMPLE_KEY)!r})"
            meta = r.get("metadata")
            if not isinstance(meta, dict) or not (as_id(meta.get("item_id")) or as_id(meta.get("question_id"))):
                shown = sorted(meta)[:20] if isinstance(meta, dict) else type(meta).__name__
                raise DataFormatError(f"{where}: metadata carries no item_id or question_id to join on (tasks "
                                      f"written by `vqalib export inspect` carry both); metadata keys are {shown}")
            error = _text(r.get("error"))
            rows.append({"line": r["_line"], "item_id": as_id(meta.get("item_id")),
                         "question_id": as_id(meta.get("question_id")), "tier": _text(meta.get("tier")),
                         "condition": _text(meta.get("condition")), "question": _text(meta.get("question")),
                         "epoch": r.get("epoch"), "sample_error": error,
                         "answer": None if error else _text(r.get("completion"))})
        return rows

    def version(self, path):
        found = self._records(path)[0].get("inspect_ai_version")
        return found if _package_version(found) else "unknown: the log records no inspect_ai package version"


class _VLMEvalKit(AnswerFormat):
    name, toolkit = "vlmevalkit", "VLMEvalKit"
    shape = "a VLMEvalKit prediction file (.xlsx/.tsv/.json), e.g. columns index, question, prediction"
    fields = (("index", "item_id", "question_id"), ("prediction",))  # without an id nothing joins: not this format

    def from_record(self, record):
        return _has_fields(self, record)

    def from_columns(self, columns):
        return _has_fields(self, columns)

    def rows(self, path):
        return _vlmevalkit_rows(path)

    def version(self, path):
        return _version_beside(path, path.parent / "status.json", ("commit", "version"))


class DeclaredCSV(AnswerFormat):
    """A result CSV a paper declares (``[[answer_format]]``): detected by having all of ``columns``, the answer
    read from column ``answer``; ``shape`` is its one-line example for error messages."""

    def __init__(self, *, name: str, shape: str, columns, answer: str):
        self.name, self.shape, self.columns, self.answer = name, shape, tuple(columns), answer
        self.fields = tuple((c,) for c in self.columns)

    def from_columns(self, columns):
        return set(self.columns) <= set(columns)

    def rows(self, path):
        table = read_csv_text(path, required=self.columns)
        return [{**r, "line": i + 2, "answer": _text(r[self.answer]) or None}
                for i, r in enumerate(table.to_dict("records"))]


class KeyedJSON(AnswerFormat):
    """One JSON object keyed by question id, each value the answer text or an object holding it under ``answer``
    (a paper declares another field with ``kind = "keyed-json"`` in ``[[answer_format]]``)."""

    record = "entry"

    def __init__(self, *, name: str, shape: str, answer: str):
        self.name, self.shape, self.answer = name, shape, answer

    def from_document(self, document):
        values = list(document.values())
        if not values:
            return False
        if self.answer == "answer" and all(isinstance(v, str) or v is None for v in values):
            return True  # {id: answer}
        return all(isinstance(v, dict) and self.answer in v for v in values)

    def rows(self, path):
        document = read_json(path, max_depth=limit(DEPTH_SETTING))
        if not isinstance(document, dict):
            raise DataFormatError(f"{path}: top level: expected one JSON object keyed by question id, found "
                                  f"{type(document).__name__}; {accepted_shapes()}")
        rows = []
        for entry, (key, value) in enumerate(document.items(), start=1):
            if isinstance(value, dict):
                if self.answer not in value:
                    raise DataFormatError(f"{path}: key {key!r} (entry {entry}): field `{self.answer}` is missing; "
                                          f"keys are {sorted(value)[:20]}")
                value = value[self.answer]
            if not (value is None or isinstance(value, (str, int, float))):
                raise DataFormatError(f"{path}: key {key!r} (entry {entry}): the answer is a "
                                      f"{type(value).__name__}, expected text")
            rows.append({"line": entry, "question_id": as_id(key), "answer": _text(value)})
        return rows


class _Plain(AnswerFormat):
    name = "plain"
    shape = 'a plain table or JSON lines, e.g. question_id,answer / {"question_id": 7, "answer": "A red car."}'
    fields = (("question_id", "item_id"), ("answer",))  # without an id nothing joins: not this format

    def from_record(self, record):
        return _has_fields(self, record)

    def from_columns(self, columns):
        return _has_fields(self, columns)

    def rows(self, path):
        return _plain_rows(path)


def _has_fields(fmt: AnswerFormat, names) -> bool:
    """Whether ``names`` (columns or keys) hold one name of each of the format's fields."""
    return all(any(n in names for n in group) for group in fmt.fields)


FORMATS: dict[str, AnswerFormat] = {}  # in the order detection tries them: the most specific first


def register(fmt: AnswerFormat, *, before: str | None = None) -> AnswerFormat:
    """Add an answers-file format to :data:`FORMATS`, tried before the format named ``before`` (else last); a
    name already registered is a ValueError."""
    if not fmt.name or fmt.name in FORMATS:
        raise ValueError(f"an answers format needs a new name, not {fmt.name!r} (registered: {list(FORMATS)})")
    items = list(FORMATS.items())
    at = [name for name, _ in items].index(before) if before in FORMATS else len(items)
    FORMATS.clear()
    FORMATS.update(items[:at] + [(fmt.name, fmt)] + items[at:])
    return fmt


def _declared(block: dict) -> AnswerFormat:
    if block.get("kind", "csv") == "keyed-json":
        return KeyedJSON(name=block["name"], shape=block["shape"], answer=block["answer"])
    if "columns" not in block:
        raise ValueError(f"{block['folder']}: [[answer_format]] {block['name']}: a CSV format needs `columns`")
    return DeclaredCSV(name=block["name"], shape=block["shape"], columns=block["columns"], answer=block["answer"])


def accepted_shapes() -> str:
    """Every registered format's one-line example, for the messages that refuse a file."""
    return "the accepted shapes are " + "; ".join(f"{f.name}: {f.shape}" for f in FORMATS.values())


for _format in (_VqalibRun(), _LmmsEval(), _InspectLog(), _VLMEvalKit(), *map(_declared, declarations.extensions("answer_format")),
                KeyedJSON(name="keyed-json", answer="answer", shape='one JSON object keyed by question id, e.g. '
                          '{"7": "A red car."} or {"7": {"answer": "A red car."}}'), _Plain()):
    register(_format)
