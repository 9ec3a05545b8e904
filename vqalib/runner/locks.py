"""One writer per run file: an advisory ``flock`` on ``<out>.lock`` (VizWiz-LF §7, CommVQA §5, AFGV runs).

A second run on the same file stops naming the holder (pid, host, start, command; the CLI exits
with :data:`LOCK_REFUSED_EXIT`) or, with ``--wait``, waits for it. The kernel drops the lock when
the holder ends, however it ends, so a killed run never blocks the next one.
"""

from __future__ import annotations

import json
import math
import os
import shlex
import socket
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any


LOCK_REFUSED_EXIT = 75  # sysexits EX_TEMPFAIL: another run holds the file; try again later or --wait


class RunLockedError(RuntimeError):
    """Another process is writing the run file; the message names it (pid, host, start, command)."""


def run_lock_path(out: str | Path) -> Path:
    """The lock file of run file ``out``: ``<out>.lock`` beside the real file (symlinks resolved, so two
    names of one file share one lock).

    Parameters
    ----------
    out : str or Path
        The run file (it need not exist yet).

    Returns
    -------
    Path
        The absolute path of its lock file.
    """
    return Path(os.path.realpath(out) + ".lock")


def _describe_holder(info: dict | None) -> str:
    if not info:
        return "a process that has not recorded itself (it may have just started)"
    return (f"pid {info.get('pid', '?')} on host {info.get('host', '?')}, started {info.get('started_at', '?')}, "
            f"command: {info.get('command', '?')}")


class RunLock:
    """An exclusive lock on a run file, so one process at a time appends to and repairs it.

    ``flock`` on ``<out>.lock``: the kernel releases it when the holder ends, however it ends, so a
    killed run leaves no lock that blocks the next one (its old holder record is simply overwritten).
    The holder writes its pid, host, start time and command into the lock file for the refusal
    message. The lock file is never deleted: a process could otherwise lock an unlinked file while
    another locks its new namesake. ``wait`` (seconds; ``True`` or ``math.inf``: no limit) polls for
    a busy lock; ``on_wait`` hears once that the run is waiting. POSIX only (``fcntl``); on network
    file systems the lock is only as good as their lock support.
    """

    def __init__(self, out: str | Path, *, wait: float | bool = 0.0, poll: float = 0.2, on_wait: Any = None) -> None:
        self.out = Path(out)
        self.path = run_lock_path(out)
        self.wait = math.inf if wait is True else float(wait)
        self.poll = poll
        self.on_wait = on_wait
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def holder(self) -> dict | None:
        """The holder record in the lock file (None when empty or unreadable)."""
        try:
            text = self.path.read_text(encoding="utf-8").strip()
            return json.loads(text) if text else None
        except (OSError, ValueError):
            return None

    def acquire(self) -> RunLock:
        import errno

        try:
            import fcntl
        except ImportError:
            raise RunLockedError("run files are locked with fcntl.flock, which this platform lacks "
                                 "(POSIX only: Linux, macOS)") from None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        start = time.monotonic()
        announced = False
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as error:
                    if error.errno not in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
                        raise RunLockedError(f"cannot lock {self.path} for run file {self.out} ({error}); "
                                             f"the file system may not support locks: use a local --out") from error
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
            record = {"pid": os.getpid(), "host": socket.gethostname(),
                      "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                      "command": shlex.join(getattr(sys, "orig_argv", sys.argv)), "out": str(self.out)}
            os.ftruncate(fd, 0)
            os.pwrite(fd, (json.dumps(record) + "\n").encode("utf-8"), 0)
            os.fsync(fd)
        except BaseException:
            os.close(fd)  # closing drops a lock taken just before the failure
            raise
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is None:
            return
        import fcntl

        fd, self._fd = self._fd, None
        try:
            os.ftruncate(fd, 0)  # cleared while still held: the next holder's record is never erased
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def __enter__(self) -> RunLock:
        return self.acquire() if not self.held else self

    def __exit__(self, *exc: object) -> None:
        self.release()
