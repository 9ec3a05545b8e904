"""Model answer files from anywhere, read into one table: plain CSV/JSONL, lmms-eval samples, Inspect AI eval logs,
VLMEvalKit predictions, a JSON object keyed by question id, a paper's declared result file (``vqalib score`` /
``vqalib import``). The format is detected from the content (a file in none names the shapes closest to its columns);
every problem, an answer over the declared length among them, is a :class:`~vqalib.core.io.DataFormatError` naming
the file, line and field. Knows no dataset."""

from __future__ import annotations

import difflib
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

from vqalib.core.answer_formats import FORMATS, AnswerFormat, _json_line, _line_length, _read_excel, accepted_shapes
from vqalib.core.escaping import terminal_text
from vqalib.core.input_limits import ANSWER_SETTING, DEPTH_SETTING, LINE_SETTING, answer_problem, limit, line_problem
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
    suffix, columns, hook = path.suffix.lower(), [], "from_columns"
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
        columns, hook = (sorted(first) if isinstance(first, dict) else []), "from_record"
        if found is None and first != "json-array":  # one JSON object, on one line or many (a release's keyed file)
            document = _json_document(path)
            if isinstance(document, dict):
                found = next((f.name for f in FORMATS.values() if f.from_document(document)), None)
                columns, hook = list(document), None  # its keys are ids, not fields
    if found is None:
        shown = columns if len(columns) <= 12 else [*columns[:12], f"... ({len(columns)} in all)"]
        closest = _closest_shapes(columns[:200], hook=hook) if hook else []
        hint = (f"; the closest shapes: {'; '.join(closest)}. Rename the columns to one of these shapes, or name the "
                "format with --format" if closest else "")
        raise DataFormatError(f"{path}: not an answers file this reader knows: columns/keys {shown}{hint}; "
                              f"{accepted_shapes()}")
    return found


def _names(names, *, last: str = "or") -> str:
    """``a``, ``a` or `b`` or ``a`, `b` or `c`` (each escaped for the terminal)."""
    quoted = [f"`{terminal_text(n)}`" for n in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + f" {last} " + quoted[-1]


def _likeness(column: str, name: str) -> float:
    """1 when ``column`` abbreviates ``name`` (its first letter, then letters in order: qid, pred), else difflib's
    ratio of the two."""
    column, name, rest = column.lower(), name.lower(), iter(name.lower())
    if len(column) > 1 and column[0] == name[0] and all(letter in rest for letter in column):
        return 1.0
    return difflib.SequenceMatcher(None, column, name).ratio()


def _closest_shapes(columns: list, *, hook: str, most: int = 2) -> list[str]:
    """The formats (read by ``hook``) whose fields ``columns`` come nearest, exactly or by a like name (difflib), each
    said as what the file has and lacks; none when no field is near."""
    columns = [str(c) for c in columns]
    scored = []
    for fmt in FORMATS.values():
        if not fmt.fields or getattr(type(fmt), hook) is getattr(AnswerFormat, hook):
            continue  # a format that does not read this kind of file
        has = [next(n for n in group if n in columns) for group in fmt.fields if any(n in columns for n in group)]
        lacks, score, used = [], len(has), set(has)
        for group in (g for g in fmt.fields if not any(n in columns for n in g)):
            likeness = {c: max(_likeness(c, n) for n in group) for c in columns if c not in used}
            near = max(likeness, key=likeness.get, default=None)
            like = near is not None and likeness[near] >= 0.6
            score += 0.5 * like
            used |= {near} if like else set()
            lacks.append(f"no {_names(group)}" + (f" (is `{terminal_text(near)}` one?)" if like else ""))
        if score:
            lacking = lacks[0] if len(lacks) == 1 else ", ".join(lacks[:-1]) + " and " + lacks[-1]
            scored.append((-score / len(fmt.fields), len(scored), f"{fmt.name}, which has " + (
                f"{_names(has, last='and')} but " if has else "") + lacking))
    return [text for *_, text in sorted(scored)[:most]]


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
    answers = _frame(rows)
    check_answer_lengths(answers, path=path, record=fmt.record)
    source = AnswerSource(path=str(path), format=name, toolkit=fmt.toolkit, version=fmt.version(path),
                          sha256=sha256_of(path), records=len(rows))
    return answers, source


def check_answer_lengths(answers: pd.DataFrame, *, path: str | Path, record: str = "line") -> None:
    """Refuse a file with an answer longer than ``VQALIB_MAX_ANSWER_CHARS``, right after reading and before any
    scoring: a DataFormatError naming the file, the record, its id, the length, the limit and the setting.

    Parameters
    ----------
    answers : pandas.DataFrame
        :func:`read_answers` rows (``line``, ``answer`` and the ids they have).
    path : str or Path
        The answers file, for the message.
    record : str, default "line"
        What ``line`` counts (``entry`` of a keyed JSON object, ``sample`` of an Inspect log).
    """
    lengths = answers["answer"].map(lambda a: len(a) if isinstance(a, str) else 0)
    over = lengths[lengths > limit(ANSWER_SETTING)]
    if over.empty:
        return
    row = answers.loc[over.index[0]]
    key = next((k for k in ("item_id", "question_id", "doc_id", "index") if k in row and pd.notna(row[k])), None)
    named = f" ({key.replace('_', ' ')} {str(row[key])!r})" if key else ""  # repr: no control character shown raw
    more = f"; {len(over):,} answers are over it" if len(over) > 1 else ""
    raise DataFormatError(f"{path}: {record} {row['line']}{named}: {answer_problem(int(over.iloc[0]))}{more}")
