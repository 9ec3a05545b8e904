"""Verified upstream data and the VizWiz-LF loader (VizWiz-LF §3–§4, CommVQA §3).

Every upstream file the compendium reads is in :data:`REGISTRY` with the repository,
the pinned commit, the path there and its SHA-256. :func:`fetch` downloads each file
once into ``data/raw/`` (or copies it from a local mirror folder) and refuses a file
whose hash differs; nothing is partially written, every bad file is reported at once
(:class:`FetchError`), and the temporary ``.part`` file of an interrupted fetch is removed
(on SIGTERM/SIGINT at once, after SIGKILL by the next fetch). :func:`load_vizwiz_lf` turns
the seven VizWiz-LF files into tidy frames (one row per answer, one row per sentence) and
a :class:`~vqalib.validation.ValidationReport` that counts every quirk it met.

Files are read strictly (:func:`read_json`, :func:`read_csv_text`): bytes that are not
UTF-8, an empty file, a repeated JSON key or CSV column, a header without rows, or a
wrong top-level type raise :class:`DataFormatError` naming the file, the record and the
field, never a bare ``UnicodeDecodeError``, ``KeyError`` or pandas error.

Configuration (README, "Data"): ``VQALIB_DATA_DIR`` (default ``<project>/data/raw``)
and ``VQALIB_DATA_MIRROR`` (a folder laid out like ``data/raw``; when set, files are
copied from it instead of downloaded).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import glob
import hashlib
import io
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

try:  # POSIX: a live fetch holds a lock on its temporary file, so a sweep never removes it
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

import pandas as pd
from tqdm import tqdm

from vqalib import taxonomy
from vqalib.validation import ValidationReport
from vqalib.wordcounts import count_words
from vqalib import config

DATA_DIR_ENV = "VQALIB_DATA_DIR"
MIRROR_ENV = "VQALIB_DATA_MIRROR"

VIZWIZ_LF_REPO = "UT-CS-HCI/lfvqa"
VIZWIZ_LF_COMMIT = "358d12904635bbf612558da10febfe5e35967540"
COMMVQA_REPO = "nnaik39/commvqa"
COMMVQA_COMMIT = "97e5b27e6caf61197d9feca3fe3841df3ac28f24"
LAVE_REPO = "mair-lab/lave"  # the LAVE reference implementation: its in-context demonstrations (vqalib.judge)
LAVE_COMMIT = "253640bfb7c328a507cb8bd0f34e17146ec3161a"


class DataIntegrityError(RuntimeError):
    """A file's SHA-256 is not the registered one."""


class DataFormatError(ValueError):
    """A data file cannot be parsed, or an entry lacks a field or has a wrong type."""


class FetchError(RuntimeError):
    """Some registered files could not be fetched; ``problems`` lists (key, message) for every
    one of them (missing upstream or in the mirror, hash mismatch with expected and actual)."""

    def __init__(self, problems: list[tuple[str, str]], *, data_dir: Path, total: int):
        self.problems = problems
        lines = "\n  ".join(message for _, message in problems)
        others = " (the others are in place and verified)" if len(problems) < total else ""
        super().__init__(f"{len(problems)} of {total} registered file(s) could not be fetched into {data_dir}; "
                         f"nothing was written for them{others}:\n  " + lines)


@dataclass(frozen=True)
class DataFile:
    """One upstream file: where it comes from, where it lives locally, its hash."""

    key: str  # path below data/raw/ and below a mirror folder
    dataset: str
    repo: str
    commit: str
    upstream_path: str
    sha256: str

    @property
    def url(self) -> str:
        return f"https://raw.githubusercontent.com/{self.repo}/{self.commit}/{self.upstream_path}"


def _vizwiz(stem: str, sha256: str) -> DataFile:
    return DataFile(f"vizwiz-lf/{stem}.json", "vizwiz-lf", VIZWIZ_LF_REPO, VIZWIZ_LF_COMMIT,
                    f"data/{stem}.json", sha256)


def _commvqa(key: str, upstream_path: str, sha256: str) -> DataFile:
    return DataFile(f"commvqa/{key}", "commvqa", COMMVQA_REPO, COMMVQA_COMMIT, upstream_path, sha256)


def _lave(name: str, sha256: str) -> DataFile:
    return DataFile(f"lave/{name}", "lave", LAVE_REPO, LAVE_COMMIT, f"data/{name}", sha256)


REGISTRY: tuple[DataFile, ...] = (
    _vizwiz("expert", "be3ee44681e30e307977468e046fbd108f2283a3ed63d40ba0a688b9043d2330"),
    _vizwiz("gpt-4v", "79d5fef8ffbdbe96a12b17b683ca93b32374b8ac15bd82dffa9026f429def9ef"),
    _vizwiz("gemini", "6d688ec21c9d760e8e764879208e2451ac46d8ed97a193ded7162a6c87b7ef31"),
    _vizwiz("llava", "8a56c2743d448aace3f3c128a45306d0936191b9fcf59adf46795259b3e472df"),
    _vizwiz("qwen", "b1968eb4e970e987ede99298d3a57dc0dd0684689efa75bd388b74e6467ceeb6"),
    _vizwiz("blip2", "4c1217730f6607a6ff23210cb752457ee58eed546ffb766aa3368af52368ea4c"),
    _vizwiz("instruct_blip", "a05093b51f8d16615284d3cf792327fe43af1db0d0283caebc4324aa4f6ec698"),
    _commvqa("annotations.json", "CommVQA_dataset/annotations.json",
             "9a3a0a6dedbd0ff91241a5e494170ac4073d86d596bb786441454f276dc29f60"),
    _commvqa("results/blip2_baseline_results.csv", "models/blip2/results/blip2_baseline_results.csv",
             "2b426dc882bc2af74f7549ac90502bcb84273195ee1674c6ecc7a1e40b2d490c"),
    _commvqa("results/blip2_contextual_results.csv", "models/blip2/results/blip2_contextual_results.csv",
             "14dccff72626cf383a0d4b73c5b1317f3c74e9593b61df988e240967a456912c"),
    _commvqa("results/idefics_baseline_results.csv", "models/idefics/results/idefics_baseline_results.csv",
             "717f7273efda2b1726722cde3a384d98609deb9cabcc957b094a3a3ebf5127a5"),
    _commvqa("results/idefics_contextual_results.csv", "models/idefics/results/idefics_contextual_results.csv",
             "47648d40ba5fd78c88982e96fb6b070795fe497a9d4530ba06620a7f0d684374"),
    _commvqa("results/llava_baseline_results.csv", "models/LLaVA/results/llava_baseline_results.csv",
             "660ba2663a1a2e60f1bc8f0274a97b1e48eaa32f87a1d7f06c61eb007ab5e0a8"),
    _commvqa("results/llava_contextual_results.csv", "models/LLaVA/results/llava_contextual_results.csv",
             "2ab6bc9cce5a9c9064f1dc3d9b3de546e19d84ff7c32f8b3c80298f7fff23d81"),
    # the authors' eval_metrics.py names mplug_owl_context_description_results.csv, which the release lacks;
    # the contextual file is the one whose scores match the printed mPLUG-Owl (Contextual) row
    _commvqa("results/mplug_owl_baseline_results.csv", "models/mPLUG-Owl/results/mplug_owl_baseline_results.csv",
             "49b98938bff834fa13aa39f3b5e7639314fe09cae4de502d8862e0c2cccfee42"),
    _commvqa("results/mplug_owl_contextual_results.csv", "models/mPLUG-Owl/results/mplug_owl_contextual_results.csv",
             "dc7078579ea6f760ad05051719367a407c71359c789f595102157a254cc5acd0"),
    _lave("lave_demos.json", "80f68aee0a5e53f243274013061f86889fa2b5fef810d071a97f9965cba0a888"),
    _lave("lave_demos_binary.json", "d69c618e917c1d0eacc051d4854cc07abcc43a79935fcc716b681ba38980fe6b"),
)
_BY_KEY = {f.key: f for f in REGISTRY}


def registry_frame() -> pd.DataFrame:
    """The registry as a table (README "Data provenance", notebook 01)."""
    return pd.DataFrame([{**f.__dict__, "url": f.url} for f in REGISTRY])


def project_root() -> Path:
    """The checkout this package lives in (the folder holding pyproject.toml), else the cwd."""
    here = Path(__file__).resolve().parent.parent
    return here if (here / "pyproject.toml").exists() else Path.cwd()


def default_data_dir() -> Path:
    """``$VQALIB_DATA_DIR`` or ``<project>/data/raw``."""
    return config.get_path(DATA_DIR_ENV, project_root() / "data" / "raw")


def cache_root() -> Path:
    """``$VQALIB_CACHE_DIR`` or ``<project>/.cache/vqalib``: where every module caches model outputs."""
    return config.get_path("VQALIB_CACHE_DIR", project_root() / ".cache" / "vqalib")


def default_mirror() -> Path | None:
    """``$VQALIB_DATA_MIRROR`` or None (download from upstream)."""
    env = config.get(MIRROR_ENV)
    return Path(env) if env else None


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_file(path: Path, *, expected: str, name: str) -> None:
    """Raise :class:`DataIntegrityError` naming the file and both hashes on a mismatch."""
    actual = sha256_of(path)
    if actual != expected:
        error = DataIntegrityError(
            f"{name}: SHA-256 mismatch: expected {expected}, actual {actual}. "
            "This is not the pinned upstream release; it was refused and nothing was written."
        )
        error.expected, error.actual = expected, actual
        raise error


def write_atomic(target: Path, data: bytes) -> Path:
    """Write ``data`` to ``target`` through a temporary file in the same folder and a rename, so
    a reader, or a crash, never meets half a file (image downloads, judge replies, embedding caches)."""
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


PART_SUFFIX = ".part"


def _part_pattern(target: Path) -> str:
    """Glob of the temporary files of ``target``: ``.<name>.<random>.part`` beside it (never a registered name)."""
    return f".{glob.escape(target.name)}.*{PART_SUFFIX}"


def remove_stale_parts(target: Path) -> list[Path]:
    """Remove the temporary files that an interrupted fetch of ``target`` left (e.g. after SIGKILL).

    A fetch in progress holds an exclusive lock on its temporary file; a file that can be
    locked belongs to no live process and is removed. Returns the removed paths.
    """
    removed = []
    for part in sorted(Path(target).parent.glob(_part_pattern(Path(target)))):
        try:
            fd = os.open(part, os.O_RDONLY)
        except FileNotFoundError:
            continue
        try:
            if fcntl is not None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue  # another fetch is writing it right now
            part.unlink(missing_ok=True)
            removed.append(part)
        finally:
            os.close(fd)
    return removed


def _copy_or_download(spec: DataFile, *, source: Path | None, target: Path, progress: bool) -> None:
    """Write ``target`` atomically: a locked temporary ``.part`` file, hash-checked, then renamed."""
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=PART_SUFFIX, dir=target.parent)
    tmp = Path(tmp_name)
    try:
        if fcntl is not None:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released when the process ends, however
        with os.fdopen(handle, "wb") as out:
            if source is not None:
                with open(source, "rb") as src:
                    shutil.copyfileobj(src, out)
            else:
                with urllib.request.urlopen(spec.url, timeout=60) as response:
                    total = int(response.headers.get("Content-Length") or 0) or None
                    with tqdm(total=total, unit="B", unit_scale=True, desc=spec.key,
                              disable=not progress, leave=False) as bar:
                        for block in iter(lambda: response.read(1 << 16), b""):
                            out.write(block)
                            bar.update(len(block))
        verify_file(tmp, expected=spec.sha256, name=f"{spec.key} (from {source or spec.url})")
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide a shared data folder from other users
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


class _Terminated(BaseException):
    """Raised by the fetch's SIGTERM handler so that every ``finally`` removes its temporary file."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


@contextlib.contextmanager
def _clean_exit_on_termination():
    """While fetching, a SIGTERM (or a SIGINT whose disposition would kill outright) removes the
    temporary file, then the process exits with status 128 + signal number. SIGINT with Python's
    usual handler raises KeyboardInterrupt, which removes the temporary file the same way.
    SIGKILL cannot be caught: the next fetch removes what it left (:func:`remove_stale_parts`)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers can only be set from the main thread
        return

    def handler(signum, frame):
        raise _Terminated(signum)

    previous = {}
    for sig in (signal.SIGTERM, signal.SIGINT):
        if signal.getsignal(sig) == signal.SIG_DFL:
            previous[sig] = signal.signal(sig, handler)
    try:
        yield
    except _Terminated as stop:
        name = signal.Signals(stop.signum).name
        print(f"fetch interrupted by {name}: the partial file was removed; nothing was written under a "
              "registered name", file=sys.stderr)
        raise SystemExit(128 + stop.signum) from None
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _fetch_one(spec: DataFile, *, target: Path, mirror: Path | None, progress: bool) -> tuple[dict, str | None]:
    """(row of the fetch table, problem message or None) for one registered file."""
    if target.exists() and sha256_of(target) == spec.sha256:
        return {"key": spec.key, "action": "present", "source": str(target)}, None
    source = Path(mirror) / spec.key if mirror is not None else None
    origin = str(source) if source is not None else spec.url
    failed = {"key": spec.key, "action": "failed", "source": origin}
    if source is not None and not source.exists():
        return failed, f"{spec.key}: not in the data mirror {mirror} (looked for {source})"
    try:
        _copy_or_download(spec, source=source, target=target, progress=progress)
    except DataIntegrityError as err:
        return failed, (f"{spec.key}: SHA-256 mismatch: expected {err.expected}, actual {err.actual} "
                        f"(from {origin}); not the pinned upstream release, refused")
    except urllib.error.HTTPError as err:
        what = "not found upstream" if err.code == 404 else "download refused"
        return failed, f"{spec.key}: {what} (HTTP {err.code} {err.reason}) at {spec.url}"
    except urllib.error.URLError as err:
        return failed, f"{spec.key}: download failed ({err.reason}) from {spec.url}"
    except OSError as err:
        return failed, f"{spec.key}: could not be copied or downloaded from {origin}: {err}"
    return {"key": spec.key, "action": "copied" if source else "downloaded", "source": origin}, None


def fetch(keys: list[str] | None = None, *, data_dir: Path | None = None, mirror: Path | None = None,
          progress: bool = True) -> pd.DataFrame:
    """Fetch the registered files into ``data_dir``; return what was done per file.

    A file already present with the right hash is left alone; one present with a wrong
    hash is replaced. With ``mirror`` set, files are copied from ``mirror/<key>``,
    otherwise downloaded from the pinned upstream commit. Every file is tried; if any
    fails (missing upstream or in the mirror, hash mismatch), one :class:`FetchError`
    lists them all and nothing is written under their names. Temporary ``.part`` files
    left by an earlier, killed fetch are removed first and counted (``stale_parts_removed``).
    """
    data_dir = Path(data_dir) if data_dir is not None else default_data_dir()
    specs = [spec_for(k) for k in keys] if keys else list(REGISTRY)
    rows, problems = [], []
    with _clean_exit_on_termination():
        for spec in tqdm(specs, desc="data", unit="file", disable=not progress):
            target = data_dir / spec.key
            stale = remove_stale_parts(target)
            row, problem = _fetch_one(spec, target=target, mirror=mirror, progress=progress)
            rows.append({**row, "stale_parts_removed": len(stale)})
            if problem:
                problems.append((spec.key, problem))
    if problems:
        raise FetchError(problems, data_dir=data_dir, total=len(specs))
    return pd.DataFrame(rows, columns=["key", "action", "source", "stale_parts_removed"])


def spec_for(key: str) -> DataFile:
    try:
        return _BY_KEY[key]
    except KeyError:
        raise KeyError(f"{key!r} is not a registered data file; known: {sorted(_BY_KEY)}") from None


def verified_path(key: str, *, data_dir: Path | None = None) -> Path:
    """Local path of a registered file, after checking it exists and its hash is right."""
    spec = spec_for(key)
    path = (Path(data_dir) if data_dir is not None else default_data_dir()) / key
    if not path.exists():
        raise FileNotFoundError(f"{key}: {path} does not exist; run `make data` (or set {MIRROR_ENV}).")
    verify_file(path, expected=spec.sha256, name=key)
    return path


JSON_TYPES = {dict: "an object", list: "an array", str: "a string", int: "a number", float: "a number",
              bool: "a boolean", type(None): "null"}


def json_type(value: object) -> str:
    """The JSON name of a parsed value's type ("an object", "an array", ...), for error messages."""
    return JSON_TYPES.get(type(value), type(value).__name__)


def json_where(path: tuple) -> str:
    """Where a value sits in a parsed JSON file, in the loaders' words: ``top level``,
    ``entry '12'`` (a key of a top-level object), ``row 3`` (an index of a top-level array),
    then ``field 'answers'[2]`` below it."""
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


def _walk_json(value: object, path: tuple = ()):
    """(path, value) of every value of a parsed JSON document, in document order."""
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


def read_json(path: Path) -> object:
    """Parse a JSON file strictly; every problem raises :class:`DataFormatError` naming the file,
    the record and the field (VizWiz-LF §3, CommVQA §3 inputs).

    A syntax error names the line, column and character offset; bytes that are not UTF-8
    name the entry and field holding them (or the line and column); an empty file and a key
    repeated in one object (which ``json.loads`` would let the last value win) are refused.
    """
    path = Path(path)
    data = path.read_bytes()
    if not data.strip():
        raise DataFormatError(f"{path}: top level: the file is empty ({len(data)} bytes); expected JSON")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        where = "top level"
        with contextlib.suppress(ValueError):  # the bad bytes may sit outside any string
            for at, value in _walk_json(json.loads(data.decode("utf-8", errors="surrogateescape"))):
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
    except json.JSONDecodeError as err:
        raise DataFormatError(
            f"{path}: malformed JSON at line {err.lineno}, column {err.colno} (char {err.pos}): {err.msg}"
        ) from err
    if repeated_objects:
        found = []
        for at, obj in _walk_json(value):
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


def read_csv_text(path: Path, *, required: tuple[str, ...] = ()) -> pd.DataFrame:
    """Read a CSV file as text (``dtype=str, keep_default_na=False``) strictly (CommVQA result files).

    Raises :class:`DataFormatError` naming the file, the row (0-based data row, with its
    line) and the column for: bytes that are not UTF-8, an empty file, a repeated column
    name (pandas would rename it ``name.1`` and silently use the first), a missing
    ``required`` column, a header without data rows, and rows pandas cannot tokenize.
    """
    path = Path(path)
    data = path.read_bytes()
    if not data.strip():
        raise DataFormatError(f"{path}: line 1 (header): the file is empty ({len(data)} bytes); "
                              "expected a header line and data rows")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        cell = _csv_cell_with_bad_bytes(data)
        raise DataFormatError(f"{path}: {cell + ': ' if cell else ''}{_undecodable(data, err)}") from None
    records = csv.reader(io.StringIO(text.removeprefix("\ufeff"), newline=""))
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
        frame = pd.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as err:
        raise DataFormatError(f"{path}: not a readable CSV table: {err}") from None
    if frame.empty:
        raise DataFormatError(f"{path}: row 0 (line 2): no data rows; the file has only the header "
                              f"line (columns {list(frame.columns)})")
    return frame


def undecoded_csv_cells(data: bytes):
    """Every CSV cell holding bytes that are not UTF-8, as (line, row, column, field, cell): ``row`` is the
    0-based data row (None in the header), ``column`` its header name (None in the header or past it),
    ``field`` the 1-based position. Raises ``csv.Error`` where the csv module cannot read on."""
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
    """``row 3 (line 5), column 'answers'``: where the first bytes that are not UTF-8 sit in a CSV
    file (None when the csv module cannot place them; the message then gives line and column)."""
    try:
        for line, row, column, field, _ in undecoded_csv_cells(data):
            if row is None:
                return f"line {line} (header), column {field}"
            return f"row {row} (line {line}), column {column if column is not None else f'field {field}'!r}"
    except csv.Error:
        pass
    return None


# --- VizWiz-LF -------------------------------------------------------------------------

VIZWIZ_LF_FIELDS: dict[str, type] = {
    "model": str,
    "answerability": str,
    "question": str,
    "question_type": str,
    "image_url": str,
    "answer_paragraph": str,
    "answer_sentences": list,
    "functional_roles": list,
    "information_types": list,
    "crowd_answers": list,
    "crowd_majority": str,
}
NON_ANSWER_MAJORITIES = ("unanswerable", "unsuitable")


@dataclass
class VizWizLF:
    """The loaded release: ``answers`` (one row per answer), ``sentences`` (one row per
    labelled sentence) and the validation ``report``."""

    answers: pd.DataFrame
    sentences: pd.DataFrame
    report: ValidationReport


def require_fields(entry: object, fields: dict[str, type], *, file: str, where: str) -> dict:
    """Check that a JSON record is an object with each field of the given type; errors name
    the file, the record (``where``, e.g. "entry '12'" or "row 3") and the field."""
    if not isinstance(entry, dict):
        raise DataFormatError(f"{file}: {where} is a {type(entry).__name__}, expected an object")
    for name, kind in fields.items():
        if name not in entry:
            raise DataFormatError(f"{file}: {where} lacks required field {name!r}")
        if not isinstance(entry[name], kind):
            raise DataFormatError(f"{file}: {where} field {name!r} is a "
                                  f"{type(entry[name]).__name__}, expected {kind.__name__}")
    return entry


def _require(entry: object, *, file: str, qid: str) -> dict:
    require_fields(entry, VIZWIZ_LF_FIELDS, file=file, where=f"entry {qid!r}")
    for name in ("answer_sentences", "crowd_answers"):
        for i, item in enumerate(entry[name]):
            if not isinstance(item, str):
                raise DataFormatError(f"{file}: entry {qid!r} field {name!r}[{i}] is not a string")
    for name in ("functional_roles", "information_types"):
        for i, labels in enumerate(entry[name]):
            if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels):
                raise DataFormatError(f"{file}: entry {qid!r} field {name!r}[{i}] is not a list of strings")
    if entry["answerability"] not in taxonomy.ANSWERABILITY:
        raise DataFormatError(f"{file}: entry {qid!r} field 'answerability' is {entry['answerability']!r}, "
                              f"expected one of {taxonomy.ANSWERABILITY}")
    if entry["question_type"] not in taxonomy.QUESTION_TYPES:
        raise DataFormatError(f"{file}: entry {qid!r} field 'question_type' is {entry['question_type']!r}, "
                              f"expected one of {taxonomy.QUESTION_TYPES}")
    return entry


def _canonical_lists(label_lists: list[list[str]], *, kind: str, file: str, qid: str,
                     report: ValidationReport) -> list[tuple[str, ...]]:
    """Canonical label tuples in taxonomy order; aliases and unknown labels are counted."""
    order = taxonomy.ROLES if kind == "role" else taxonomy.INFO_SOURCES
    out = []
    for labels in label_lists:
        canon = []
        for raw in labels:
            name, status = taxonomy.canonical_label(raw, kind=kind)
            if status == "alias":
                report.add(file=file, check="label_alias", detail=f"{kind} {raw!r} -> {name!r}", action="mapped")
            elif status == "unknown":
                report.add(file=file, check="unknown_label", detail=f"{kind} {raw!r}",
                           action="kept as written; not counted in any taxonomy column", example=f"id {qid}")
            if name in canon:
                report.add(file=file, check="duplicate_label", detail=f"{kind} {name!r} twice in one sentence",
                           action="kept once", example=f"id {qid}")
                continue
            canon.append(name)
        known = [x for x in order if x in canon]
        out.append(tuple(known + [x for x in canon if x not in order]))
    return out


def merge_fragments(sentences: list[str], *, n_units: int) -> list[list[int]]:
    """Group sentence fragments into ``n_units`` groups (VizWiz-LF sentence/label mismatch).

    The release splits some answers at abbreviations ("CO.", "INC.", "3.5mm") into more
    fragments than it has label lists. Rule: repeatedly merge the shortest fragment
    (fewest non-blank characters; first on ties) into its preceding neighbour (the
    following one for the first fragment) until the counts match.
    """
    groups = [[i] for i in range(len(sentences))]
    while len(groups) > max(n_units, 1):
        lengths = [sum(len(sentences[i].strip()) for i in g) for g in groups]
        k = lengths.index(min(lengths))
        j = k - 1 if k > 0 else 0
        groups[j:j + 2] = [groups[j] + groups[j + 1]]
    return groups


def _span_text(paragraph: str, parts: list[str]) -> str:
    """The paragraph text covering consecutive fragments, else the fragments joined by spaces."""
    start = pos = paragraph.find(parts[0].strip())
    if start < 0:
        return " ".join(p.strip() for p in parts)
    for part in parts:
        pos = paragraph.find(part.strip(), pos)
        if pos < 0:
            return " ".join(p.strip() for p in parts)
        pos += len(part.strip())
    return paragraph[start:pos]


def _sentence_units(entry: dict, roles: list, infos: list, *, file: str, qid: str,
                    report: ValidationReport) -> list[dict]:
    """Line label lists up with sentences; every rule applied is counted in the report."""
    sentences = entry["answer_sentences"]
    if len(roles) != len(infos):
        report.add(file=file, check="role_info_count_differs",
                   detail=f"{len(roles)} role lists vs {len(infos)} information lists",
                   action="shorter list padded with empty label lists", example=f"id {qid}")
        n = max(len(roles), len(infos))
        roles = roles + [()] * (n - len(roles))
        infos = infos + [()] * (n - len(infos))
    n_units = len(roles)
    if n_units == len(sentences):
        return [{"sentence": s, "n_fragments": 1, "alignment": "aligned", "roles": r, "info_sources": i}
                for s, r, i in zip(sentences, roles, infos)]
    if n_units == 0:
        report.add(file=file, check="sentence_label_mismatch", detail="answer has sentences but no label lists",
                   action="each sentence kept with no labels", example=f"id {qid}")
        return [{"sentence": s, "n_fragments": 1, "alignment": "no_labels", "roles": (), "info_sources": ()}
                for s in sentences]
    if n_units > len(sentences):
        report.add(file=file, check="sentence_label_mismatch", detail="more label lists than sentences",
                   action="extra label lists kept with no sentence text", example=f"id {qid}")
        texts = sentences + [None] * (n_units - len(sentences))
        return [{"sentence": s, "n_fragments": int(s is not None),
                 "alignment": "aligned" if k < len(sentences) else "extra_label_list", "roles": r, "info_sources": i}
                for k, (s, r, i) in enumerate(zip(texts, roles, infos))]
    groups = merge_fragments(sentences, n_units=n_units)
    report.add(file=file, check="sentence_label_mismatch", detail="more sentences than label lists",
               action="shortest fragments merged into their neighbour (answers)", example=f"id {qid}")
    report.add(file=file, check="sentence_label_mismatch", detail="more sentences than label lists",
               action="fragments merged away (sentences)", count=len(sentences) - n_units)
    return [{"sentence": _span_text(entry["answer_paragraph"], [sentences[i] for i in g]),
             "n_fragments": len(g), "alignment": "merged_fragments" if len(g) > 1 else "aligned",
             "roles": r, "info_sources": i}
            for g, r, i in zip(groups, roles, infos)]


def parse_vizwiz_lf(raw: object, *, file: str, source: str,
                    report: ValidationReport) -> tuple[list[dict], list[dict]]:
    """Rows of the answer and sentence frames for one parsed VizWiz-LF file (Table 1–3 input)."""
    if not isinstance(raw, dict):
        raise DataFormatError(f"{file}: top level: the file holds {json_type(raw)}, expected an object keyed by "
                              "question id")
    if not raw:
        raise DataFormatError(f"{file}: top level: the object has no entries; expected one entry per question id")
    answers, sentences = [], []
    for qid, entry in raw.items():
        if not str(qid).isdigit():
            raise DataFormatError(f"{file}: question id {qid!r} is not an integer")
        entry = _require(entry, file=file, qid=qid)
        roles = _canonical_lists(entry["functional_roles"], kind="role", file=file, qid=qid, report=report)
        infos = _canonical_lists(entry["information_types"], kind="info", file=file, qid=qid, report=report)
        units = _sentence_units(entry, roles, infos, file=file, qid=qid, report=report)
        question = entry["question"].strip()
        if question != entry["question"]:
            report.add(file=file, check="whitespace", detail="question has leading/trailing white space",
                       action="trimmed")
        if entry["crowd_majority"] in NON_ANSWER_MAJORITIES:
            report.add(file=file, check="crowd_majority_not_an_answer",
                       detail=f"crowd_majority is {entry['crowd_majority']!r}",
                       action="kept; answerability comes from the 'answerability' field")
        for u in units:
            for kind, key in (("role", "roles"), ("info", "info_sources")):
                if not u[key]:
                    report.add(file=file, check="sentence_without_label", detail=f"no {kind} label",
                               action="kept with an empty label list")
        answers.append({
            "source": source,
            "question_id": int(qid),
            "question": question,
            "question_type": entry["question_type"],
            "answerability": entry["answerability"],
            "answer": entry["answer_paragraph"],
            "question_words": count_words(question),
            "answer_words": count_words(entry["answer_paragraph"]),
            "n_sentences": len(entry["answer_sentences"]),
            "n_label_units": len(units),
            "roles": tuple(r for r in taxonomy.ROLES if any(r in u["roles"] for u in units))
            + tuple(sorted({r for u in units for r in u["roles"]} - set(taxonomy.ROLES))),
            "info_sources": tuple(i for i in taxonomy.INFO_SOURCES if any(i in u["info_sources"] for u in units))
            + tuple(sorted({i for u in units for i in u["info_sources"]} - set(taxonomy.INFO_SOURCES))),
            "crowd_answers": tuple(entry["crowd_answers"]),
            "crowd_answer_words": tuple(count_words(a) for a in entry["crowd_answers"]),
            "crowd_majority": entry["crowd_majority"],
            "image_url": entry["image_url"],
            "model_field": entry["model"],
        })
        for k, u in enumerate(units):
            sentences.append({"source": source, "question_id": int(qid), "sentence_index": k, **u})
    return answers, sentences


def _cross_source_checks(answers: pd.DataFrame, report: ValidationReport) -> None:
    """Missing question ids per source and per-question fields that differ across sources."""
    all_ids = set(answers["question_id"])
    for source, group in answers.groupby("source", sort=False):
        missing = sorted(all_ids - set(group["question_id"]))
        if missing:
            report.add(file=group["file"].iloc[0], check="missing_question_ids",
                       detail=f"{len(missing)} of {len(all_ids)} question ids absent: {', '.join(map(str, missing))}",
                       action="not imputed; tables use the answers present", count=len(missing))
    for field in ("question", "question_type", "answerability", "crowd_answers", "crowd_majority", "image_url"):
        per_q = answers.groupby("question_id")[field].nunique()
        for qid in per_q[per_q > 1].index:
            report.add(file="(all sources)", check="cross_source_mismatch", detail=f"field {field!r} differs",
                       action="each source keeps its own value", example=f"id {qid}")


def vizwiz_lf_question_ids(*, data_dir: Path | None = None) -> frozenset[int]:
    """The question ids of the VizWiz-LF release: the keys of its seven hash-checked files
    (1-600; the ids a ratings file of the human evaluation may use, §6)."""
    ids: set[int] = set()
    for stem in taxonomy.SOURCES:
        path = verified_path(f"vizwiz-lf/{stem}.json", data_dir=data_dir)
        raw = read_json(path)
        if not isinstance(raw, dict):
            raise DataFormatError(f"{path.name}: top level: the file holds {json_type(raw)}, expected an object "
                                  "keyed by question id")
        for qid in raw:
            if not str(qid).isdigit():
                raise DataFormatError(f"{path.name}: question id {qid!r} is not an integer")
            ids.add(int(qid))
    return frozenset(ids)


def load_vizwiz_lf(*, data_dir: Path | None = None, sources: list[str] | None = None,
                   paths: dict[str, Path] | None = None) -> VizWizLF:
    """Load and validate VizWiz-LF (Table 1–3 and 15–16 input).

    ``sources`` are release file stems (``taxonomy.SOURCES`` keys; default all seven).
    Registered files are hash-checked; ``paths`` (stem -> file) bypasses the registry
    for user-supplied answer files of the same format (no hash check).
    """
    stems = list(paths) if paths else (sources or list(taxonomy.SOURCES))
    report = ValidationReport()
    answer_rows, sentence_rows = [], []
    for stem in stems:
        if paths:
            path = Path(paths[stem])
        else:
            path = verified_path(f"vizwiz-lf/{stem}.json", data_dir=data_dir)
        source = taxonomy.SOURCES.get(stem, stem)
        a, s = parse_vizwiz_lf(read_json(path), file=path.name, source=source, report=report)
        for row in a:
            row["file"] = path.name
        answer_rows += a
        sentence_rows += s
    answers = pd.DataFrame(answer_rows)
    sentences = pd.DataFrame(sentence_rows)
    _cross_source_checks(answers, report)
    order = {s: k for k, s in enumerate(taxonomy.SOURCES.values())}
    answers = (answers.assign(_o=answers["source"].map(order))
               .sort_values(["_o", "source", "question_id"], kind="stable").drop(columns="_o").reset_index(drop=True))
    sentences = (sentences.assign(_o=sentences["source"].map(order))
                 .sort_values(["_o", "source", "question_id", "sentence_index"], kind="stable")
                 .drop(columns="_o").reset_index(drop=True))
    return VizWizLF(answers=answers, sentences=sentences, report=report)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vqalib.datasets", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    f = sub.add_parser("fetch", help="download (or copy from the mirror) and verify every registered file")
    f.add_argument("--data-dir", type=Path, default=None, help=f"default ${DATA_DIR_ENV} or data/raw")
    f.add_argument("--mirror", type=Path, default=None, help=f"default ${MIRROR_ENV}; unset = download")
    v = sub.add_parser("verify", help="check the hashes of the local files")
    v.add_argument("--data-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    try:
        if args.command == "fetch":
            mirror = args.mirror if args.mirror is not None else default_mirror()
            done = fetch(data_dir=args.data_dir, mirror=mirror)
            print(done.to_string(index=False))
            stale = int(done["stale_parts_removed"].sum())
            if stale:
                print(f"removed {stale} stale partial file(s) (*.part) left by an interrupted fetch")
        else:
            for spec in REGISTRY:
                verified_path(spec.key, data_dir=args.data_dir)
                print(f"ok  {spec.key}")
    except (FetchError, DataIntegrityError, FileNotFoundError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
