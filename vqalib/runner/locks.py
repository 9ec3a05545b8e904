"""One writer per run file (VizWiz-LF §7, CommVQA §5, AFGV runs): an advisory ``flock`` keyed by the file's inode,
so every name of one file meets the same lock, released by the kernel however the holder ends. A second run
stops naming the holder (recorded in ``<out>.lock``) or, with ``--wait``, waits; a non-regular file is refused."""

from __future__ import annotations

import json
import math
import os
import shlex
import socket
import stat
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from vqalib.core.io import NotRegularFile, file_kind


LOCK_REFUSED_EXIT = 75  # sysexits EX_TEMPFAIL: another run holds the file; try again later or --wait


class RunLockedError(RuntimeError):
    """Another process is writing the run file; the message names it (pid, host, start, command)."""


def run_lock_path(out: str | Path) -> Path:
    """The holder record of run file ``out``: ``<out>.lock`` beside the real file (symlinks resolved).

    Parameters
    ----------
    out : str or Path
        The run file (it need not exist yet).
    """
    return Path(os.path.realpath(out) + ".lock")


def file_identity(path: str | Path) -> tuple[int, int] | None:
    """What a run file *is*, whatever it is called: its ``(st_dev, st_ino)`` (links followed).

    Parameters
    ----------
    path : str or Path
        The file.
    """
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    return info.st_dev, info.st_ino


def _open_run_file(out: Path) -> int:
    """A descriptor of run file ``out`` (created if absent) to lock; anything but a regular file is refused."""
    try:
        # O_NONBLOCK: a named pipe must not hold the open; read-only: flock needs no write access
        fd = os.open(out, os.O_RDONLY | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0), 0o644)
    except IsADirectoryError:
        raise NotRegularFile(f"run file {out}: it is a directory, not a regular file; give a file path such as "
                             f"runs/<name>.jsonl") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise NotRegularFile(f"run file {out}: it is {file_kind(info.st_mode)}, not a regular file; give a file "
                             f"path such as runs/<name>.jsonl")
    return fd


def _describe_holder(info: dict | None) -> str:
    if not info:
        return "a process that has not recorded itself (it may have just started)"
    return (f"pid {info.get('pid', '?')} on host {info.get('host', '?')}, started {info.get('started_at', '?')}, "
            f"command: {info.get('command', '?')}")


class RunLock:
    """An exclusive ``flock`` on a run file's inode, so one process at a time appends to and repairs it.

    ``wait``: seconds to poll a busy lock (``True``: no limit). POSIX only; a network file system's locks may not hold.
    """

    def __init__(self, out: str | Path, *, wait: float | bool = 0.0, poll: float = 0.2, on_wait: Any = None) -> None:
        self.out = Path(out)
        self.path = run_lock_path(out)
        self.wait = math.inf if wait is True else float(wait)
        self.poll = poll
        self.on_wait = on_wait
        self.identity: tuple[int, int] | None = None
        self._fd: int | None = None
        self._record_fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def holder(self) -> dict | None:
        """The holder record of this file: beside this name, else one of the same inode in the folder (a hard link)."""
        def read(path: Path) -> dict | None:
            try:
                text = path.read_text(encoding="utf-8").strip()
                return json.loads(text) if text else None
            except (OSError, ValueError):
                return None

        record = read(self.path)
        if isinstance(record, dict) and (self.identity is None or "inode" not in record
                                         or (record.get("device"), record.get("inode")) == self.identity):
            return record
        if self.identity is not None:
            for other in sorted(self.path.parent.glob("*.lock")):
                found = read(other) if other != self.path and other.is_file() else None
                if isinstance(found, dict) and (found.get("device"), found.get("inode")) == self.identity:
                    return found
        return None

    def _flock(self, fd: int) -> None:
        """Take the lock on ``fd``, waiting as ``wait`` allows; RunLockedError naming the holder otherwise."""
        import errno

        try:
            import fcntl
        except ImportError:
            raise RunLockedError("run files are locked with fcntl.flock, which this platform lacks "
                                 "(POSIX only: Linux, macOS)") from None
        start = time.monotonic()
        announced = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except OSError as error:
                if error.errno not in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
                    raise RunLockedError(f"cannot lock run file {self.out} ({error}); the file system may not "
                                         f"support locks: use a local --out") from error
            waited = time.monotonic() - start
            holder = self.holder()
            if holder is None and waited < 2.0:
                time.sleep(0.05)  # the holder locks first and records itself a moment later
                continue
            if waited >= self.wait:
                after = f" after waiting {waited:.0f} s" if self.wait else ""
                raise RunLockedError(
                    f"run file {self.out} is being written by another run{after}: {_describe_holder(holder)} "
                    f"(lock {self.path}). Wait for it with --wait, or give this run its own --out "
                    f"(one file per shard).")
            if not announced and self.on_wait is not None:
                self.on_wait(f"waiting for run file {self.out}: held by {_describe_holder(holder)}")
                announced = True
            time.sleep(min(self.poll, max(self.wait - waited, 0.0)))

    def acquire(self) -> RunLock:
        self.out.parent.mkdir(parents=True, exist_ok=True)
        while True:
            fd = _open_run_file(self.out)
            try:
                info = os.fstat(fd)
                self.identity = (info.st_dev, info.st_ino)
                self._flock(fd)
            except BaseException:
                os.close(fd)  # closing drops a lock taken just before the failure
                raise
            if file_identity(self.out) == self.identity:
                break
            os.close(fd)  # the name now points at another file (renamed over it while we waited): lock that one
        try:
            record = {"pid": os.getpid(), "host": socket.gethostname(),
                      "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                      "command": shlex.join(getattr(sys, "orig_argv", sys.argv)), "out": str(self.out),
                      "device": self.identity[0], "inode": self.identity[1]}
            record_fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0), 0o644)
            try:
                os.ftruncate(record_fd, 0)
                os.pwrite(record_fd, (json.dumps(record) + "\n").encode("utf-8"), 0)
                os.fsync(record_fd)
            except BaseException:
                os.close(record_fd)
                raise
        except BaseException:
            os.close(fd)
            raise
        self._fd, self._record_fd = fd, record_fd
        return self

    def release(self) -> None:
        if self._fd is None:
            return
        import fcntl

        fd, record_fd, self._fd, self._record_fd = self._fd, self._record_fd, None, None
        try:
            if record_fd is not None:
                try:
                    os.ftruncate(record_fd, 0)  # cleared while still held: the next holder's record is never erased
                finally:
                    os.close(record_fd)
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def __enter__(self) -> RunLock:
        return self.acquire() if not self.held else self

    def __exit__(self, *exc: object) -> None:
        self.release()
