"""Project paths and strict, safe file input/output: reads refuse pipes and folders and raise
:class:`DataFormatError` naming file, record and field; writes are atomic (:func:`write_inside`: never through a
symbolic link). Imports only the standard library and
:mod:`vqalib.core.config` (no import cycle)."""

from __future__ import annotations

import contextlib
import csv
import errno
import hashlib
import io
import json
import os
import secrets
import stat
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from vqalib.core import config

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

DATA_DIR_ENV = "VQALIB_DATA_DIR"
MIRROR_ENV = "VQALIB_DATA_MIRROR"


class DataFormatError(ValueError):
    """A data file cannot be parsed, or an entry lacks a field or has a wrong type."""


class NotRegularFile(DataFormatError):
    """A path the project would read is a named pipe, device, socket or folder, or is over a size cap."""


class UnsafePath(ValueError):
    """A path the project will not write: a symbolic link, or what is neither folder nor regular file, on its way."""


def file_kind(mode: int) -> str:
    """What a ``st_mode`` names, for error messages ("a named pipe (FIFO)", "a directory", ...).

    Parameters
    ----------
    mode : int
    """
    kinds = ((stat.S_ISREG, "a regular file"), (stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def open_regular(path: str | Path, *, what: str = "file", max_bytes: int | None = None):
    """Open ``path`` for binary reading only when it is a regular file of at most ``max_bytes``, else raise
    :class:`NotRegularFile`. ``O_NONBLOCK`` and ``fstat`` on the handle: a writerless pipe cannot hang the reader.

    Parameters
    ----------
    path : str or Path
        The file (``FileNotFoundError`` when absent).
    what : str, default "file"
        What the file is, for the error.
    max_bytes : int, optional
    """
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except IsADirectoryError:
        raise NotRegularFile(f"{path}: cannot read this {what}: it is a directory, not a regular file") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFile(f"{path}: cannot read this {what}: it is {file_kind(info.st_mode)}, not a regular file")
        if max_bytes is not None and info.st_size > max_bytes:
            raise NotRegularFile(f"{path}: cannot read this {what}: {info.st_size:,} bytes, over the cap of {max_bytes:,}")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str | Path, *, what: str = "file", max_bytes: int | None = None) -> bytes:
    """The bytes of ``path`` read through :func:`open_regular` (a file growing past ``max_bytes`` is refused too).

    Parameters
    ----------
    path : str or Path
    what : str, default "file"
    max_bytes : int, optional
    """
    with open_regular(path, what=what, max_bytes=max_bytes) as handle:
        data = handle.read() if max_bytes is None else handle.read(max_bytes + 1)
    if max_bytes is not None and len(data) > max_bytes:
        raise NotRegularFile(f"{path}: cannot read this {what}: over the cap of {max_bytes:,} bytes")
    return data


# --- project paths -------------------------------------------------------------------------

def project_root() -> Path:
    """The checkout this package lives in (the folder holding pyproject.toml), else the cwd."""
    here = Path(__file__).resolve().parent.parent.parent
    return here if (here / "pyproject.toml").exists() else Path.cwd()


def shown_path(path: str | Path) -> str:
    """How a message names a path: relative to the project root when inside it, else as given.

    Parameters
    ----------
    path : str or Path
    """
    root, resolved = project_root().resolve(), Path(path).resolve()
    return resolved.relative_to(root).as_posix() if resolved.is_relative_to(root) else str(path)


def default_data_dir() -> Path:
    """``$VQALIB_DATA_DIR`` or ``<project>/data/raw``."""
    return config.get_path(DATA_DIR_ENV, project_root() / "data" / "raw")


def cache_root(*parts: str) -> Path:
    """A cache folder (not created): ``$VQALIB_CACHE_DIR`` or ``<project>/.cache/vqalib``, then ``parts`` below it.

    Parameters
    ----------
    *parts : str
    """
    return config.get_path("VQALIB_CACHE_DIR", project_root() / ".cache" / "vqalib").joinpath(*parts)


def default_mirror() -> Path | None:
    """``$VQALIB_DATA_MIRROR`` or None (download from upstream); a value that is no folder is a SettingError."""
    return config.get_path(MIRROR_ENV, None)


# --- hashing and atomic writes ---------------------------------------------------------------

def sha256_of(path: Path) -> str:
    """The SHA-256 hex digest of a regular file's bytes, read in 1 MiB blocks.

    Parameters
    ----------
    path : Path
    """
    digest = hashlib.sha256()
    with open_regular(path, what="file to hash") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_atomic(target: Path, data: bytes) -> Path:
    """Write ``data`` to ``target`` (parents created; returned) via a temporary file and a rename: no half file.

    Parameters
    ----------
    target : Path
    data : bytes
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.chmod(tmp_name, 0o644)  # mkstemp's 0600 would hide a shared cache from other users
        os.replace(tmp_name, target)
    finally:
        Path(tmp_name).unlink(missing_ok=True)
    return target


def _what_is(path: Path) -> str:
    try:
        info = path.lstat()
    except OSError:
        return "missing"
    return f"a symbolic link (to {os.readlink(path)})" if stat.S_ISLNK(info.st_mode) else file_kind(info.st_mode)


def inside_name(name: object) -> bool:
    """Whether ``name`` is a plain relative POSIX path inside a folder: text with no root, no empty, ``.`` or ``..``
    part, no backslash and no NUL (a name read from a manifest, or one a command writes).

    Parameters
    ----------
    name : object
    """
    return (isinstance(name, str) and bool(name) and "\\" not in name and "\0" not in name
            and not any(part in ("", ".", "..") for part in name.split("/")))


def write_inside(folder: Path, relative: str, data: bytes) -> Path:
    """Write ``data`` to ``folder/relative`` whole (a temporary file renamed), creating missing folders, never through
    a symbolic link: each folder on the way is opened with ``O_NOFOLLOW`` and written through its descriptor, so a
    link planted on the way raises :class:`UnsafePath` naming it.

    Parameters
    ----------
    folder : Path
        The output folder (itself no symbolic link).
    relative : str
        A relative POSIX path without ``..`` or empty parts.
    data : bytes
    """
    if not inside_name(relative):
        raise ValueError(f"{relative!r}: not a relative path inside {folder}")
    parts = relative.split("/")
    opening = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    where = Path(folder)

    def refused(err: OSError) -> OSError:
        if err.errno not in (errno.ELOOP, errno.ENOTDIR, errno.EEXIST):
            return err
        return UnsafePath(f"{where} is {_what_is(where)}, not a folder; vqalib writes no file through a symbolic link "
                          "or in place of another file: move it away")

    try:
        fd = os.open(where, opening)
    except OSError as err:
        raise refused(err) from None
    try:
        for name in parts[:-1]:
            where = where / name
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, 0o755, dir_fd=fd)
            try:
                inner = os.open(name, opening, dir_fd=fd)
            except OSError as err:
                raise refused(err) from None
            os.close(fd)
            fd = inner
        where = where / parts[-1]
        with contextlib.suppress(FileNotFoundError):
            if not stat.S_ISREG(os.stat(parts[-1], dir_fd=fd, follow_symlinks=False).st_mode):
                raise UnsafePath(f"{where} is {_what_is(where)}, not a regular file; vqalib writes no file through a "
                                 "symbolic link or in place of a folder: move it away")
        temporary = f".{parts[-1]}.{secrets.token_hex(4)}.part"  # the name a killed write leaves
        handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0),
                         0o644, dir_fd=fd)
        try:
            with os.fdopen(handle, "wb") as stream:
                stream.write(data)
            os.replace(temporary, parts[-1], src_dir_fd=fd, dst_dir_fd=fd)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary, dir_fd=fd)
    finally:
        os.close(fd)
    return Path(folder) / relative


# --- strict reading ----------------------------------------------------------------------------

JSON_TYPES = {dict: "an object", list: "an array", str: "a string", int: "a number", float: "a number",
              bool: "a boolean", type(None): "null"}


def json_type(value: object) -> str:
    """The JSON name of a parsed value's type ("an object", "an array", ...), for error messages.

    Parameters
    ----------
    value : object
    """
    return JSON_TYPES.get(type(value), type(value).__name__)


def json_where(path: tuple) -> str:
    """Where a value sits in parsed JSON (``entry '12'``, ``row 3 field 'answers'[2]``) from its key/index path."""
    if not path:
        return "top level"
    head, rest = path[0], path[1:]
    where = f"entry {head!r}" if isinstance(head, str) else f"row {head}"
    if rest:
        first, more = rest[0], rest[1:]
        where += f" field {first!r}" if isinstance(first, str) else f"[{first}]"
        where += "".join(f"[{k!r}]" if isinstance(k, str) else f"[{k}]" for k in more)
    return where


class _RepeatedKeys(dict):
    """A JSON object in which some key appeared more than once (``repeated``: key -> count)."""

    repeated: dict


def walk_json(value: object, path: tuple = ()):
    """(path, value) of every value of a parsed JSON document, in document order.

    Parameters
    ----------
    value : object
        Parsed JSON.
    path : tuple, default ()
        The key/index path of ``value`` itself.
    """
    stack = [(path, value)]
    while stack:
        path, value = stack.pop()
        yield path, value
        if isinstance(value, dict):
            stack.extend(reversed([(path + (k,), v) for k, v in value.items()]))
        elif isinstance(value, list):
            stack.extend(reversed([(path + (i,), v) for i, v in enumerate(value)]))


def _undecodable(data: bytes, err: UnicodeDecodeError) -> str:
    """The first bytes that are not UTF-8: which byte, its line, column and offset."""
    line = data.count(b"\n", 0, err.start) + 1
    column = err.start - (data.rfind(b"\n", 0, err.start) + 1) + 1
    return (f"not UTF-8 text: byte 0x{data[err.start]:02x} at line {line}, byte column {column} "
            f"(offset {err.start}); save the file as UTF-8")


def _has_undecoded(text: str) -> bool:
    """True when ``text`` holds a byte that ``surrogateescape`` kept from undecodable input."""
    return any("\udc80" <= ch <= "\udcff" for ch in text)


def read_json(path: Path, *, max_depth: int | None = None) -> object:
    """Parse a JSON file strictly (any top-level type: callers check it); bad syntax, non-UTF-8 bytes, an empty file
    or a repeated key raise :class:`DataFormatError` naming the file, record and field.

    Parameters
    ----------
    path : Path
    max_depth : int, optional
        Deepest nesting accepted, checked before parsing.
    """
    path = Path(path)
    data = read_regular(path, what="JSON file")
    if not data.strip():
        raise DataFormatError(f"{path}: top level: the file is empty ({len(data)} bytes); expected JSON")
    if max_depth is not None:
        from vqalib.core.input_limits import nesting_line, nesting_problem
        if deep := nesting_problem(data, most=max_depth):
            raise DataFormatError(f"{path}: line {nesting_line(data, most=max_depth)}: {deep}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        where = "top level"
        with contextlib.suppress(ValueError):  # the bad bytes may sit outside any string
            for at, value in walk_json(json.loads(data.decode("utf-8", errors="surrogateescape"))):
                keys = list(value) if isinstance(value, dict) else []
                if isinstance(value, str) and _has_undecoded(value):
                    where = json_where(at)
                    break
                bad_key = next((k for k in keys if _has_undecoded(k)), None)
                if bad_key is not None:
                    where = f"{json_where(at)}, key {bad_key!r}"
                    break
        raise DataFormatError(f"{path}: {where}: {_undecodable(data, err)}") from None
    repeated_objects: list[_RepeatedKeys] = []

    def pairs_hook(pairs: list[tuple[str, object]]) -> dict:
        obj = dict(pairs)
        if len(obj) == len(pairs):
            return obj
        marked = _RepeatedKeys(obj)
        keys = [k for k, _ in pairs]
        marked.repeated = {k: keys.count(k) for k in dict.fromkeys(keys) if keys.count(k) > 1}
        repeated_objects.append(marked)
        return marked

    try:
        value = json.loads(text, object_pairs_hook=pairs_hook)
    except RecursionError:
        raise DataFormatError(f"{path}: JSON nested too deep for the parser") from None
    except json.JSONDecodeError as err:
        raise DataFormatError(
            f"{path}: malformed JSON at line {err.lineno}, column {err.colno} (char {err.pos}): {err.msg}"
        ) from err
    if repeated_objects:
        found = []
        for at, obj in walk_json(value):
            if isinstance(obj, _RepeatedKeys):
                for key, n in obj.repeated.items():
                    if not at:
                        found.append(f"top level: entry {key!r} appears {n} times")
                    else:
                        noun = "field" if len(at) == 1 else "key"
                        found.append(f"{json_where(at)}: {noun} {key!r} appears {n} times")
        shown = "; ".join(f"{path}: {f}" for f in found[:10])
        more = f" (and {len(found) - 10} more)" if len(found) > 10 else ""
        raise DataFormatError(f"{shown}{more}. A key must not repeat within a JSON object: json.loads would keep "
                              "only the last value and lose the others without a word")
    return value


def read_csv_text(path: Path, *, required: tuple[str, ...] = (), sep: str = ",") -> pd.DataFrame:
    """Read a CSV file strictly, every cell a string; a bad encoding, empty file, repeated or missing column, no data
    row or an untokenizable row raises :class:`DataFormatError` naming the file, row and column.

    Parameters
    ----------
    path : Path
    required : tuple of str, default ()
        Column names the header must hold.
    sep : str, default ","
    """
    import pandas as pd  # imported here: the rest of this module needs only the standard library

    path = Path(path)
    data = read_regular(path, what="CSV file")
    if not data.strip():
        raise DataFormatError(f"{path}: line 1 (header): the file is empty ({len(data)} bytes); "
                              "expected a header line and data rows")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        cell = _csv_cell_with_bad_bytes(data)
        raise DataFormatError(f"{path}: {cell + ': ' if cell else ''}{_undecodable(data, err)}") from None
    records = csv.reader(io.StringIO(text.removeprefix("\ufeff"), newline=""), delimiter=sep)
    header = next((r for r in records if r), [])
    named = [h for h in header if h]
    repeated = sorted({h for h in named if named.count(h) > 1})
    if repeated:
        raise DataFormatError(f"{path}: line 1 (header): column(s) {repeated} appear more than once; a column name "
                              "must not repeat (pandas would rename the repeat and silently read only the first)")
    missing = [c for c in required if c not in header]
    if missing:
        raise DataFormatError(f"{path}: line 1 (header): lacks required column(s) {missing}; the header has {header}")
    try:
        frame = pd.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False, sep=sep)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as err:
        raise DataFormatError(f"{path}: not a readable CSV table: {err}") from None
    if frame.empty:
        raise DataFormatError(f"{path}: row 0 (line 2): no data rows; the file has only the header "
                              f"line (columns {list(frame.columns)})")
    return frame


def undecoded_csv_cells(data: bytes):
    """Every CSV cell holding bytes that are not UTF-8; raises ``csv.Error`` where the csv module cannot read on.

    Parameters
    ----------
    data : bytes
        The CSV file's bytes (a leading BOM is ignored).

    Yields
    ------
    (int, int or None, str or None, int, str)
        1-based line, 0-based data row (None in the header), column name, 1-based field and the cell's text.
    """
    text = data.decode("utf-8", errors="surrogateescape").removeprefix("\ufeff")
    reader = csv.reader(io.StringIO(text, newline=""))
    header, row, end = None, -1, 0
    for record in reader:
        start, end = end + 1, reader.line_num
        if not record:
            continue
        for k, cell in enumerate(record):
            if _has_undecoded(cell):
                column = header[k].strip() if header is not None and k < len(header) else None
                yield start, (row if header is not None else None), column, k + 1, cell
        if header is None:
            header = record
        row += 1


def _csv_cell_with_bad_bytes(data: bytes) -> str | None:
    """Where the first non-UTF-8 bytes sit in a CSV file (``row 3 (line 5), column 'answers'``), or None."""
    try:
        for line, row, column, field, _ in undecoded_csv_cells(data):
            if row is None:
                return f"line {line} (header), column {field}"
            return f"row {row} (line {line}), column {column if column is not None else f'field {field}'!r}"
    except csv.Error:
        pass
    return None



def require_fields(entry: object, fields: dict[str, type], *, file: str, where: str) -> dict:
    """Return JSON record ``entry`` if it is an object with each field of ``fields`` (name: type; extra fields allowed),
    else raise :class:`DataFormatError`.

    Parameters
    ----------
    entry : object
    fields : dict of str to type
    file : str
        The file's name, for messages.
    where : str
        The record's place in the file (:func:`json_where`), for messages.
    """
    if not isinstance(entry, dict):
        raise DataFormatError(f"{file}: {where} is a {type(entry).__name__}, expected an object")
    for name, kind in fields.items():
        if name not in entry:
            raise DataFormatError(f"{file}: {where} lacks required field {name!r}")
        if not isinstance(entry[name], kind):
            raise DataFormatError(f"{file}: {where} field {name!r} is a "
                                  f"{type(entry[name]).__name__}, expected {kind.__name__}")
    return entry
