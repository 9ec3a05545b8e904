"""Output folders a command may write: a new path, an empty folder, or a folder the same command wrote before (its
marker and only names it writes); anything else is refused with the path and why. :func:`replace_folder` swaps a
fresh folder in whole under a lock; nothing here deletes a folder it cannot show it wrote."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from vqalib.core.io import project_root, read_regular

PARTIAL = ".vqalib-partial"  # inside a folder being written: what a killed write leaves is known to be ours
SCAN_LIMIT = 10_000  # entries of a marked folder inspected before it is called too big to be one


class UnsafeOutput(ValueError):
    """An output path a command refuses to write or replace (the message names the path and why)."""


@dataclass(frozen=True)
class OutputKind:
    """What a command writes into its folder: the marker that says the command wrote it, and the names it writes."""

    what: str  # "scorecard", for messages
    option: str  # "vqalib score --out", for messages
    marker: str  # the file whose presence (and content) marks the folder as this command's
    is_marker: Callable[[Path], bool]  # the marker file -> whether it is this command's
    written: Callable[[str], bool] | None = None  # a path relative to the folder -> whether the command writes it


def json_marker(path: Path, *, max_bytes: int) -> dict | None:
    """A marker file read as a JSON object, or None when it is not one (or is over ``max_bytes``).

    Parameters
    ----------
    path : Path
    max_bytes : int
    """
    try:
        data = json.loads(read_regular(path, what="marker file", max_bytes=max_bytes).decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def _is_within(inner: Path, outer: Path) -> bool:
    return inner == outer or outer in inner.parents


def repository_root(path: Path) -> Path | None:
    """The git work tree holding resolved ``path`` (its nearest folder with ``.git``; it need not exist), or None."""
    for folder in (path, *path.parents):
        if (folder / ".git").exists():
            return folder
    return None


def tracked_files(path: Path) -> list[str]:
    """Files at or under ``path`` that git tracks, relative to the repository root (empty outside one, or without git).

    Parameters
    ----------
    path : Path
    """
    real = Path(path).resolve()
    top = repository_root(real)
    if top is None:
        return []
    try:
        done = subprocess.run(["git", "-C", str(top), "ls-files", "-z", "--", str(real)], capture_output=True,
                              timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return []
    return [name for name in done.stdout.decode("utf-8", "replace").split("\0") if name]


def _protected(real: Path) -> str | None:
    """Why ``real`` (resolved) is a folder no command may replace, or None."""
    if real.parent == real:
        return "it is the filesystem root /"
    top = repository_root(real)
    if top is not None and _is_within(real, top / ".git"):
        return f"it is inside the git repository's own folder {top / '.git'}"
    here = Path.cwd()
    places = [("the root of a git repository", root) for root in dict.fromkeys(
        r for r in (top, repository_root(here.resolve()), project_root()) if r is not None)]
    places += [("the home folder", Path.home()), ("the current folder", here)]
    for name, place in places:
        with contextlib.suppress(OSError, RuntimeError):
            place = place.resolve()
        if real == place:
            return f"it is {name}"
        if _is_within(place, real):
            return f"it holds {name} ({place})"
    return None


def check_out(path: str | Path, *, kind: OutputKind) -> Path:
    """``path`` if it is a new path, an empty folder, or a folder with the command's marker and only names it writes;
    else :class:`UnsafeOutput` naming the path and why.

    Parameters
    ----------
    path : str or Path
    kind : OutputKind
    """
    path = Path(path).expanduser()
    refuse = f"{kind.option} {path}: refused, "
    if path.is_symlink():
        raise UnsafeOutput(refuse + f"it is a symbolic link (to {os.readlink(path)}); give the folder itself")
    real = path.resolve()
    why = _protected(real)
    if why:
        raise UnsafeOutput(refuse + why + f"; give a new folder for the {kind.what}")
    if not path.exists():
        return path
    if not path.is_dir():
        raise UnsafeOutput(refuse + f"it is a file, not a folder; give a new folder for the {kind.what}")
    with os.scandir(path) as entries:
        if next(entries, None) is None:
            return path
    marker = path / kind.marker
    if not (marker.is_file() and not marker.is_symlink() and kind.is_marker(marker)):
        tracked = tracked_files(real)
        held = (f"it holds {len(tracked)} files tracked by git (e.g. {tracked[0]})" if tracked
                else "it is not empty")
        raise UnsafeOutput(refuse + f"{held} and is not a {kind.what} (no {kind.marker} of vqalib); a {kind.what} "
                           f"replaces only a folder it wrote itself: give a new folder")
    if kind.written is not None:
        foreign = []
        for n, file in enumerate(p for p in path.rglob("*") if not p.is_dir() or p.is_symlink()):
            if n >= SCAN_LIMIT:
                foreign.append(f"… (over {SCAN_LIMIT:,} files)")
                break
            relative = file.relative_to(path).as_posix()
            if file.is_symlink() or not kind.written(relative):
                foreign.append(relative)
        if foreign:
            shown = ", ".join(foreign[:5]) + (" …" if len(foreign) > 5 else "")
            raise UnsafeOutput(refuse + f"it holds {len(foreign)} files a {kind.what} does not write ({shown}), which "
                               "replacing it would delete; move them out or give a new folder")
    return path


@contextlib.contextmanager
def _locked(folder: Path):
    """Hold an exclusive lock on ``folder`` (a second writer of a folder beside ours waits; none on Windows)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - no flock on Windows
        yield False
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield True
    finally:
        os.close(fd)  # closing releases the lock


def _leftovers(parent: Path, name: str, kind: OutputKind) -> list[Path]:
    """What a killed write of ``name`` left in ``parent`` (temporary and set-aside folders), only when empty or ours."""
    pattern = re.compile(rf"\.{re.escape(name)}\.([A-Za-z0-9_]{{8}}|old)")
    found = []
    for candidate in parent.iterdir():
        if not pattern.fullmatch(candidate.name) or candidate.is_symlink() or not candidate.is_dir():
            continue
        marker = candidate / kind.marker
        ours = ((candidate / PARTIAL).is_file() or not any(candidate.iterdir())
                or (marker.is_file() and kind.is_marker(marker)))
        if ours:
            found.append(candidate)
    return found


def replace_folder(out: str | Path, *, kind: OutputKind, fill: Callable[[Path], None]) -> Path:
    """Write a folder whole and return it: ``fill`` writes a fresh folder beside ``out``, which is then swapped in.

    Parameters
    ----------
    out : str or Path
        The folder (:func:`check_out` must accept it: checked again under the lock).
    kind : OutputKind
    fill : callable
        Called with the fresh folder; writes every file of the new content (the marker among them).
    """
    final = check_out(out, kind=kind)
    final.parent.mkdir(parents=True, exist_ok=True)
    with _locked(final.parent) as locked:
        check_out(final, kind=kind)  # another writer may have changed it while this one waited
        if locked:  # no other writer of this parent is running: what is left is a killed write's
            for leftover in _leftovers(final.parent, final.name, kind):
                shutil.rmtree(leftover, ignore_errors=True)
        fresh = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
        try:
            (fresh / PARTIAL).touch()
            fill(fresh)
            (fresh / PARTIAL).unlink()
            os.chmod(fresh, 0o755)  # mkdtemp's 0700 would hide the folder from a web server or another user
            old = final.with_name(f".{final.name}.old")
            if final.is_dir() and not any(final.iterdir()):
                os.replace(fresh, final)  # rename(2) replaces an empty folder in one step
                return final
            if final.exists():
                if old.exists():  # a set-aside folder _leftovers did not recognise: not ours to remove
                    raise UnsafeOutput(f"{kind.option} {final}: refused, {old} is in the way and is not a {kind.what} "
                                       "set aside by vqalib; move it away")
                final.rename(old)
            fresh.rename(final)
            if old.exists():
                shutil.rmtree(old)  # the command's own earlier folder, checked by check_out above
        finally:
            shutil.rmtree(fresh, ignore_errors=True)
    return final
