"""The run-file format (``runs/README.md``) of every answer run (VizWiz-LF §3 / §7 / A.4.2, CommVQA §5, AFGV):
append-only JSON lines, one question's records per write, the damaged tail cut on resume, one (model, strategy)
per file, regular files only, and the stable split into shards."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from vqalib.core.input_limits import DEPTH_SETTING, LINE_SETTING, limit, nesting_problem
from vqalib.core.io import NotRegularFile, file_kind, read_regular
from vqalib.runner.locks import RunLock, file_identity

SCHEMA_VERSION = 1


# --- keys: resume key of a question, stable hash for seeds and shards --------------------------------

def _seed(*parts: object) -> int:
    return int(hashlib.sha256("|".join(map(str, parts)).encode("utf-8")).hexdigest()[:8], 16)


def item_key(*, dataset: str, item_id: str, model: str, strategy: str) -> str:
    """The resume key ``dataset|item_id|model|strategy`` of one question under one model and strategy.

    Parameters
    ----------
    dataset : str
        The dataset name (e.g. ``vizwiz-lf``).
    item_id : str
        The question's item id.
    model : str
        The model key of the model.
    strategy : str
        The prompting strategy.
    """
    return f"{dataset}|{item_id}|{model}|{strategy}"


# --- run files: append-only JSON lines, repaired on resume ------------------------------------------

def encode_block(records: list[dict]) -> bytes:
    """One question's records as JSON lines, written in one call so a crash cuts at most this block.

    Parameters
    ----------
    records : list of dict
        The records of one question.

    Returns
    -------
    bytes
        UTF-8 JSON lines; values JSON cannot hold are written as their ``str``.
    """
    return "".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in records).encode("utf-8")


@dataclass
class ScanResult:
    """What a run file holds: its complete records, finished keys, and the damaged tail."""

    records: list[dict]
    finished: dict[str, str]  # item_key -> kind of its final record
    good_bytes: int  # the file up to the end of its last complete question
    bad_lines: int  # truncated/undecodable lines and lines of incomplete questions
    lines: list[int] = field(default_factory=list)  # the 1-based line of each record in ``records``


def scan_run(path: str | Path) -> ScanResult:
    """Read a run file; records of incomplete questions and a truncated last line are counted and left out.

    Parameters
    ----------
    path : str or Path
        The run file; missing reads as empty, not a regular file raises ``NotRegularFile``.
    """
    path = Path(path)
    try:
        data = read_regular(path, what="run file")
    except FileNotFoundError:
        return ScanResult([], {}, 0, 0)
    records: list[dict] = []
    lines: list[int] = []
    finished: dict[str, str] = {}
    group: list[dict] = []
    group_lines: list[int] = []
    offset = good = bad = 0

    def close_group() -> int:
        nonlocal group, group_lines
        n = len(group)
        if group and len(group) == group[0].get("item_records"):
            records.extend(group)
            lines.extend(group_lines)
            final = [r for r in group if r.get("final")]
            finished[group[0]["item_key"]] = final[-1].get("kind", "?") if final else "?"
            n = 0
        group, group_lines = [], []
        return n  # lines of an incomplete question

    longest, depth = limit(LINE_SETTING), limit(DEPTH_SETTING)
    for number, line in enumerate(data.splitlines(keepends=True), start=1):
        offset += len(line)
        try:
            if not line.endswith(b"\n"):
                raise ValueError("truncated last line")
            if len(line) > longest or nesting_problem(line, most=depth):
                raise ValueError("over a declared limit (VQALIB_MAX_LINE_BYTES, VQALIB_MAX_JSON_DEPTH)")
            record = json.loads(line)
            if not isinstance(record, dict) or "item_key" not in record:
                raise ValueError("not a run record")
        except (ValueError, RecursionError):
            bad += 1 + close_group()
            continue
        if group and record["item_key"] != group[0]["item_key"]:
            bad += close_group()
        group.append(record)
        group_lines.append(number)
        if len(group) == record.get("item_records"):
            close_group()
            good = offset
    bad += close_group()
    return ScanResult(records, finished, good, bad, lines)


class MixedRunFileError(ValueError):
    """Records of another (model, strategy) would be appended to a run file (refused unless ``--mixed-run-file``)."""


def check_one_run(records: list[dict], *, path: str | Path, model: str, strategy: str) -> None:
    """Raise :class:`MixedRunFileError` if the file holds another (model, strategy): notebooks read one run per file.

    Parameters
    ----------
    records : list of dict
        The file's complete records.
    path : str or Path
        The run file, for the message.
    model : str
        The model key of the model about to be run.
    strategy : str
        The prompting strategy about to be run.
    """
    held = sorted({(str(r.get("model")), str(r.get("strategy"))) for r in records} - {(model, strategy)})
    if held:
        holds = "; ".join(f"model {m!r} under strategy {s!r}" for m, s in held)
        raise MixedRunFileError(
            f"run file {path} holds the answers of {holds}; this run would add model {model!r} under strategy "
            f"{strategy!r}. A run file holds one model and one prompting strategy (the notebooks read it as one "
            f"run): give this run its own --out, or pass --mixed-run-file to mix them on purpose.")


class RunWriter:
    """Appends whole questions to a run file with flush + fsync (resumable runs)."""

    def __init__(self, path: str | Path, *, fsync: bool = True) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.fsync = fsync
        try:
            # O_NONBLOCK: a named pipe without a reader fails at once (ENXIO) instead of holding the run
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0),
                         0o644)
        except OSError as error:
            if error.errno not in (errno.ENXIO, errno.EISDIR):
                raise
            raise NotRegularFile(f"run file {self.path}: it is {file_kind(os.stat(self.path).st_mode)}, "
                                 f"not a regular file") from None
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            os.close(fd)
            raise NotRegularFile(f"run file {self.path}: it is {file_kind(mode)}, not a regular file")
        os.set_blocking(fd, True)
        self.handle = os.fdopen(fd, "ab")

    def write(self, block: bytes) -> None:
        """Append one question's block, flush it, and fsync it when ``fsync`` is set.

        Parameters
        ----------
        block : bytes
            The question's records (:func:`encode_block`).
        """
        self.handle.write(block)
        self.handle.flush()
        if self.fsync:
            os.fsync(self.handle.fileno())  # the block survives a crash of the machine, not only of the process

    def close(self) -> None:
        self.handle.close()


def repair_run(path: str | Path, *, lock: RunLock | None = None) -> ScanResult:
    """Cut a run file after its last complete question; only the lock holder may cut.

    Parameters
    ----------
    path : str or Path
        The run file (a missing file stays missing).
    lock : RunLock, optional
        The caller's held lock of ``path``; None: taken for the repair; another file's raises ``ValueError``.

    Returns
    -------
    ScanResult
        The scan taken before the cut.
    """
    path = Path(path)
    if lock is None:
        if not path.exists():
            return scan_run(path)
        with RunLock(path) as held:
            return repair_run(path, lock=held)
    if not lock.held or lock.identity != file_identity(path):  # the same file by inode, whatever its name
        raise ValueError(f"repair_run({str(path)!r}): the lock given is not a held lock of this run file")
    scan = scan_run(path)
    if path.exists() and path.stat().st_size > scan.good_bytes:
        with open(path, "r+b") as handle:
            handle.truncate(scan.good_bytes)
            handle.flush()
            os.fsync(handle.fileno())
    return scan


# --- shards: a stable split of the questions by id ---------------------------------------------------

_SHARD = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")


def parse_shard(text: str) -> tuple[int, int]:
    """``"i/n"`` -> (i, n) with 0 <= i < n; a ValueError naming the expected form otherwise.

    Parameters
    ----------
    text : str
        The shard as given on the command line, e.g. ``"0/4"``.
    """
    match = _SHARD.fullmatch(str(text))
    if not match:
        raise ValueError(f"shard {text!r}: expected i/n, two whole numbers with 0 <= i < n (e.g. 0/4)")
    index, count = int(match[1]), int(match[2])
    if count < 1:
        raise ValueError(f"shard {text!r}: expected i/n with n >= 1 (e.g. 0/4)")
    if index >= count:
        raise ValueError(f"shard {text!r}: expected i/n with 0 <= i < n (for n = {count}: i from 0 to {count - 1})")
    return index, count


def in_shard(item_id: str, *, shard: tuple[int, int]) -> bool:
    """Whether a question belongs to shard i of n (a stable hash of its id: the same split everywhere).

    Parameters
    ----------
    item_id : str
        The question's item id.
    shard : tuple of int
        ``(i, n)``.
    """
    return _seed(item_id) % shard[1] == shard[0]


def select_items(items: pd.DataFrame, *, limit: int | None = None, shard: tuple[int, int] = (0, 1)) -> pd.DataFrame:
    """The first ``limit`` questions, then this shard's part of them.

    Parameters
    ----------
    items : pandas.DataFrame
        The item table (an ``item_id`` column).
    limit : int, optional
        Keep only the first ``limit`` rows; default all.
    shard : tuple of int, default (0, 1)
        ``(i, n)``: keep the rows of shard i of n.
    """
    chosen = items.head(limit) if limit is not None else items
    return chosen[[in_shard(i, shard=shard) for i in chosen["item_id"]]]
