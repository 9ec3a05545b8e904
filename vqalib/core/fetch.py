"""Fetching the registered upstream files into ``data/raw/`` (``vqalib fetch``): downloaded, or copied from
``VQALIB_DATA_MIRROR``, and hash-checked; nothing is partially written, every bad file is reported at once, and an
interrupted fetch's ``.part`` file is removed (at once on SIGTERM/SIGINT, by the next fetch after SIGKILL)."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

try:  # POSIX: a live fetch holds a lock on its temporary file, so a sweep never removes it
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

import pandas as pd
from tqdm import tqdm

from vqalib.core.upstream import FILES, DataFile, DataIntegrityError, spec_for, verify_file
from vqalib.core.io import NotRegularFile, default_data_dir, open_regular, sha256_of


class FetchError(RuntimeError):
    """Some registered files could not be fetched; ``problems`` lists (key, message) for every one."""

    def __init__(self, problems: list[tuple[str, str]], *, data_dir: Path, total: int):
        self.problems = problems
        lines = "\n  ".join(message for _, message in problems)
        others = " (the others are in place and verified)" if len(problems) < total else ""
        super().__init__(f"{len(problems)} of {total} registered file(s) could not be fetched into {data_dir}; "
                         f"nothing was written for them{others}:\n  " + lines)


PART_SUFFIX = ".part"
# limits of one upstream file: the largest release file is a few MB, so these only stop a runaway server
MAX_DOWNLOAD_BYTES = 1 << 30
DOWNLOAD_DEADLINE = 1800.0


def _part_pattern(target: Path) -> str:
    """Glob of the temporary files of ``target``: ``.<name>.<random>.part`` beside it (never a registered name)."""
    return f".{glob.escape(target.name)}.*{PART_SUFFIX}"


def remove_stale_parts(target: Path) -> list[Path]:
    """Remove and return (sorted) the ``.part`` files an interrupted fetch of ``target`` left, unless still locked."""
    removed = []
    for part in sorted(Path(target).parent.glob(_part_pattern(Path(target)))):
        try:
            fd = os.open(part, os.O_RDONLY | os.O_NONBLOCK)  # a pipe planted there must not block
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


def download(url: str, out, *, max_bytes: int, deadline: float, desc: str = "download",
             progress: bool = True) -> int:
    """Stream ``url`` into open binary file ``out`` within a size cap and an overall deadline (60 s per socket read);
    returns the bytes written, and past the cap or the deadline an ``OSError`` says which.

    Parameters
    ----------
    url : str
    out : binary file
    max_bytes : int
    deadline : float
        The most seconds the whole download may take.
    desc : str, default "download"
        The progress bar's label.
    progress : bool, default True
    """
    started, size = time.monotonic(), 0
    with urllib.request.urlopen(url, timeout=60) as response:
        total = int(response.headers.get("Content-Length") or 0) or None
        with tqdm(total=total, unit="B", unit_scale=True, desc=desc, disable=not progress, leave=False) as bar:
            for block in iter(lambda: response.read(1 << 16), b""):
                size += len(block)
                if size > max_bytes or time.monotonic() - started > deadline:
                    raise OSError(f"{url}: stopped after {size:,} bytes and {time.monotonic() - started:.0f} s: "
                                  f"over the cap of {max_bytes:,} bytes or {deadline:.0f} s for one file")
                out.write(block)
                bar.update(len(block))
    return size


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
                with open_regular(source, what="data mirror file", max_bytes=MAX_DOWNLOAD_BYTES) as src:
                    shutil.copyfileobj(src, out)
            else:
                download(spec.url, out, max_bytes=MAX_DOWNLOAD_BYTES, deadline=DOWNLOAD_DEADLINE, desc=spec.key,
                         progress=progress)
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
    """While fetching, SIGTERM (or a SIGINT that would kill outright) removes the temporary file and exits with 128 +
    the signal number; SIGKILL's leftovers are removed by the next fetch."""
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
    source = Path(mirror) / spec.key if mirror is not None else None
    origin = str(source) if source is not None else spec.url
    failed = {"key": spec.key, "action": "failed", "source": origin}
    try:
        if target.exists() and sha256_of(target) == spec.sha256:
            return {"key": spec.key, "action": "present", "source": str(target)}, None
    except NotRegularFile as err:  # a pipe or folder where the file belongs: not replaced behind the user's back
        return {**failed, "source": str(target)}, f"{spec.key}: {err}; remove it and fetch again"
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
    except NotRegularFile as err:
        return failed, f"{spec.key}: {err}"
    except OSError as err:
        return failed, f"{spec.key}: could not be copied or downloaded from {origin}: {err}"
    return {"key": spec.key, "action": "copied" if source else "downloaded", "source": origin}, None


def fetch(keys: list[str] | None = None, *, data_dir: Path | None = None, mirror: Path | None = None,
          progress: bool = True) -> pd.DataFrame:
    """Fetch the registered files into ``data_dir`` (a present file with the right hash is left alone); if any fails,
    one :class:`FetchError` lists them all and nothing is written under their names.

    Parameters
    ----------
    keys : list of str, optional
        Registered keys to fetch; default every registered file.
    data_dir : Path, optional
        Default :func:`~vqalib.core.io.default_data_dir`.
    mirror : Path, optional
        A folder laid out like ``data/raw`` to copy from; None downloads from upstream.
    progress : bool, default True

    Returns
    -------
    pandas.DataFrame
        ``key``, ``action`` (present, copied, downloaded), ``source``, ``stale_parts_removed`` per file.
    """
    data_dir = Path(data_dir) if data_dir is not None else default_data_dir()
    specs = [spec_for(k) for k in keys] if keys else list(FILES)
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
