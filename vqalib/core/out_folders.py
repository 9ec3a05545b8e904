"""Output folders a command may write: a new path, an empty folder, or a folder the same command wrote before, every
file in it listed unchanged in the manifest (:data:`MANIFEST`) the command wrote with them; anything else is refused
with the path and why. :func:`replace_folder` swaps a fresh folder in whole under a lock, :func:`write_into` adds files
to a folder that accumulates (an export); nothing here deletes or rewrites a file it cannot show it wrote, nor writes
through a symbolic link (ARCHITECTURE "Folders a command writes")."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from vqalib.core import config
from vqalib.core.io import (UnsafePath, file_kind, inside_name, project_root, read_json, read_regular, sha256_of,
                             write_atomic, write_inside)

PARTIAL = ".vqalib-partial"  # inside a folder being written: what a killed write leaves is known to be ours
SCAN_LIMIT = 10_000  # entries of a marked folder inspected before it is called too big to be one
MANIFEST = "vqalib-manifest.json"  # every file a command wrote into its folder, with its SHA-256 and size
MANIFEST_FORMAT = "vqalib-manifest/1"
MANIFEST_MAX_BYTES = 1 << 22  # SCAN_LIMIT files at about 100 bytes a line, with room
_TEMPORARY = re.compile(r"\.(?P<name>.+)\.[A-Za-z0-9_]{8}\.part")  # what a killed atomic write leaves beside its file


class UnsafeOutput(ValueError):
    """An output path a command refuses to write or replace (the message names the path and why)."""


@dataclass(frozen=True)
class OutputKind:
    """A command that writes a folder: its names for messages and the marker file that says it wrote the folder (the
    files it wrote are listed in the folder's :data:`MANIFEST`)."""

    what: str  # "scorecard", for messages
    option: str  # "vqalib score --out", for messages
    marker: str  # the file whose presence (and content) marks the folder as this command's
    is_marker: Callable[[Path], bool]  # the marker file -> whether it is this command's
    home: Path | None = None  # a committed folder the command rewrites in place (git keeps its history; no manifest)

    @property
    def command(self) -> str:
        """The command, for messages ("vqalib score")."""
        return self.option.removesuffix(" --out")


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


def _in_place() -> bool:
    """Whether this is `vqalib reproduce`'s in-place run, the one writer of committed outputs."""
    from vqalib.core.report import IN_PLACE_ENV  # the same rule as figures/ (report.output_dir)

    return config.get(IN_PLACE_ENV) == "1"


def _entries(folder: Path, refuse: str) -> list[tuple[str, str | None]]:
    """Every entry under ``folder`` but a real folder, hidden ones too, links not followed: (relative POSIX path, what
    is wrong with it: None for a regular file); past :data:`SCAN_LIMIT` entries the folder is refused."""
    found, stack, seen = [], [folder], 0
    while stack:
        with os.scandir(stack.pop()) as entries:
            for entry in entries:
                seen += 1
                if seen > SCAN_LIMIT:
                    raise UnsafeOutput(refuse + f"it holds over {SCAN_LIMIT:,} files and folders, too many for one "
                                       "vqalib wrote; give a new folder")
                mode = entry.stat(follow_symlinks=False).st_mode
                if stat.S_ISDIR(mode):
                    stack.append(Path(entry.path))
                    continue
                relative = Path(entry.path).relative_to(folder).as_posix()
                wrong = None if stat.S_ISREG(mode) else "a symbolic link" if stat.S_ISLNK(mode) else file_kind(mode)
                found.append((relative, wrong))
    return sorted(found)


def _file_entry(data: bytes) -> dict:
    return {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}


def _manifest(folder: Path, kind: OutputKind, refuse: str) -> dict[str, list[dict]] | None:
    """The manifest in ``folder`` as {relative path: its accepted entries (written, then being written)}, None when
    there is none; one that is not a manifest of this command refuses the folder, naming the field."""
    path = folder / MANIFEST
    try:
        info = path.lstat()
    except FileNotFoundError:
        return None
    bad = refuse + f"its {MANIFEST} "
    if not stat.S_ISREG(info.st_mode) or info.st_size > MANIFEST_MAX_BYTES:
        what = (f"{info.st_size:,} bytes, over {MANIFEST_MAX_BYTES:,}" if stat.S_ISREG(info.st_mode)
                else file_kind(info.st_mode))
        raise UnsafeOutput(bad + f"is {what}, not one vqalib wrote; move the folder's files out or give a new folder")
    try:
        data = read_json(path, max_depth=4)
    except (OSError, ValueError) as err:
        raise UnsafeOutput(bad + f"cannot be read ({err}); move the folder's files out or give a new folder") from None
    if not isinstance(data, dict) or data.get("format") != MANIFEST_FORMAT:
        raise UnsafeOutput(bad + f"is not tagged {MANIFEST_FORMAT!r}; move the folder's files out or give a new folder")
    if data.get("written_by") != kind.what:
        raise UnsafeOutput(bad + f"says a {data.get('written_by')!r} wrote the folder, not a {kind.what}; give a new "
                           "folder")
    accepted: dict[str, list[dict]] = {}
    for field in ("files", "pending"):
        listed = data.get(field, {})
        if not isinstance(listed, dict):
            raise UnsafeOutput(bad + f"field {field!r} is not an object; give a new folder")
        for name, entry in listed.items():
            if (not inside_name(name) or not isinstance(entry, dict) or not isinstance(entry.get("size"), int)
                    or not re.fullmatch(r"[0-9a-f]{64}", str(entry.get("sha256")))):
                raise UnsafeOutput(bad + f"field {field!r} entry {name!r} is not a relative path with a SHA-256 and a "
                                   "size; give a new folder")
            accepted.setdefault(name, []).append(entry)
    return accepted


def _owned(folder: Path, manifest: dict[str, list[dict]], kind: OutputKind,
           refuse: str) -> tuple[dict[str, dict], list[str], list[str]]:
    """(the files the manifest lists unchanged, with their entries; what a killed write left; every other entry, with
    why it is not the command's)."""
    owned, leftovers, problems = {}, [], []
    for relative, wrong in _entries(folder, refuse):
        if relative == MANIFEST and wrong is None:
            continue
        path = folder / relative
        temporary = _TEMPORARY.fullmatch(path.name)
        if wrong is not None:
            problems.append(f"{relative} ({wrong})")
        elif temporary and (path.parent / temporary["name"]).relative_to(folder).as_posix() in {*manifest, MANIFEST}:
            leftovers.append(relative)
        elif relative not in manifest:
            problems.append(f"{relative} (not written by {kind.command})")
        else:
            size = path.lstat().st_size
            entry = next((e for e in manifest[relative] if e["size"] == size), None)
            digest = sha256_of(path) if entry is not None else None
            entry = next((e for e in manifest[relative] if e["size"] == size and e["sha256"] == digest), None)
            if entry is None:
                problems.append(f"{relative} (changed since {kind.command} wrote it)")
            else:
                owned[relative] = {"sha256": entry["sha256"], "size": entry["size"]}
    return owned, leftovers, problems


def _files(n: int) -> str:
    return f"{n} file" + "s" * (n != 1)


def _named(problems: list[str]) -> str:
    return "; ".join(problems[:10]) + (f"; and {len(problems) - 10} more" if len(problems) > 10 else "")


def _unchanged_in_git(path: Path, real: Path, tracked: list[str], refuse: str) -> None:
    """Refuse a committed folder without a manifest unless every file in it is tracked by git and unmodified."""
    top = repository_root(real)
    inside = real.relative_to(top).as_posix()
    known = {name.removeprefix(f"{inside}/") for name in tracked}
    problems = [f"{r} ({wrong or 'not tracked by git'})" for r, wrong in _entries(path, refuse)
                if wrong is not None or r not in known]
    try:
        done = subprocess.run(["git", "-C", str(top), "status", "--porcelain", "-z", "--untracked-files=all", "--",
                               str(real)], capture_output=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError) as err:
        raise UnsafeOutput(refuse + f"git status failed ({type(err).__name__}), so its committed files cannot be "
                           "shown unmodified") from None
    records = [r for r in done.stdout.decode("utf-8", "replace").split("\0") if len(r) > 3]
    problems += [f"{r[3:].removeprefix(f'{inside}/')} (modified since committed)" for r in records
                 if not r.startswith("??")]
    if problems:
        raise UnsafeOutput(refuse + f"it has no {MANIFEST} and not every file in it is committed and unmodified "
                           f"({_named(problems)}); move those files out or restore them with git")


def check_out(path: str | Path, *, kind: OutputKind) -> Path:
    """``path`` if it is a new path, an empty folder, or a folder the command wrote whose every file its manifest
    lists unchanged; else :class:`UnsafeOutput` naming the path, why and the files in the way.

    A folder holding files tracked by git is refused, but under `vqalib reproduce`'s in-place run (as ``figures/``),
    which may also replace a committed folder written before manifests when all its files are committed unmodified.

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
    if kind.home is not None and real == Path(kind.home).resolve():
        return path  # the committed folder the command keeps up to date; git shows and undoes every change
    manifest = _manifest(path, kind, refuse)
    marker = path / kind.marker
    tracked = tracked_files(real)
    if manifest is None and not (marker.is_file() and not marker.is_symlink() and kind.is_marker(marker)):
        held = (f"it holds {_files(len(tracked))} tracked by git (e.g. {tracked[0]})" if tracked
                else "it is not empty")
        raise UnsafeOutput(refuse + f"{held} and is not a {kind.what} (no {kind.marker} of vqalib); a {kind.what} "
                           f"replaces only a folder it wrote itself: give a new folder")
    if tracked and not _in_place():
        raise UnsafeOutput(refuse + f"it holds {_files(len(tracked))} tracked by git (e.g. {tracked[0]}), a committed "
                           f"output that only `vqalib reproduce` rewrites; give a new folder for the {kind.what}")
    if manifest is None:
        if tracked:  # reproduce's in-place run over a committed folder from before manifests
            _unchanged_in_git(path, real, tracked, refuse)
            return path
        raise UnsafeOutput(refuse + f"it has no {MANIFEST}: an older vqalib wrote it without listing its files, so "
                           f"vqalib cannot tell them from yours; move your files out of it and delete it, or give "
                           "a new folder")
    _, _, problems = _owned(path, manifest, kind, refuse)
    if problems:
        raise UnsafeOutput(refuse + f"it holds {_files(len(problems))} {kind.command} did not write there or that "
                           f"changed since ({_named(problems)}); vqalib changes only files its {MANIFEST} lists "
                           "unchanged: move them out or give a new folder")
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


def _ours(folder: Path, kind: OutputKind) -> bool:
    """Whether ``folder`` holds nothing but what the command wrote: its manifest lists every file in it unchanged."""
    try:
        manifest = _manifest(folder, kind, "")
        return manifest is not None and not _owned(folder, manifest, kind, "")[2]
    except (UnsafeOutput, OSError):
        return False


def _leftovers(parent: Path, name: str, kind: OutputKind) -> list[Path]:
    """What a killed write of ``name`` left in ``parent`` (temporary and set-aside folders), only when empty or ours."""
    pattern = re.compile(rf"\.{re.escape(name)}\.([A-Za-z0-9_]{{8}}|old)")
    found = []
    for candidate in parent.iterdir():
        if not pattern.fullmatch(candidate.name) or candidate.is_symlink() or not candidate.is_dir():
            continue
        partial = candidate / PARTIAL
        if (partial.is_file() and not partial.is_symlink()) or not any(candidate.iterdir()) or _ours(candidate, kind):
            found.append(candidate)
    return found


def manifest_bytes(kind: OutputKind, files: dict[str, dict], *, pending: dict[str, dict] | None = None) -> bytes:
    """The manifest of a folder: its format, the command's ``kind.what`` and each file (relative POSIX path -> SHA-256
    and size) on a line of its own, sorted: the same files give the same bytes.

    Parameters
    ----------
    kind : OutputKind
    files : dict of str to dict
        The files written: path -> ``{"sha256": ..., "size": ...}``.
    pending : dict of str to dict, optional
        Files about to be written (:func:`write_into`), accepted as the command's until they are.
    """
    def block(entries: dict[str, dict]) -> str:
        lines = [f"    {json.dumps(name, ensure_ascii=False)}: {json.dumps(entries[name], sort_keys=True)}"
                 for name in sorted(entries)]
        return "{\n" + ",\n".join(lines) + "\n  }" if lines else "{}"

    head = {"format": MANIFEST_FORMAT, "written_by": kind.what,
            "about": f"the files {kind.command} wrote here; it replaces or rewrites only these, while unchanged"}
    parts = [f"  {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in head.items()]
    parts.append(f'  "files": {block(files)}')
    if pending:
        parts.append(f'  "pending": {block(pending)}')
    return ("{\n" + ",\n".join(parts) + "\n}\n").encode("utf-8")


def _listing(folder: Path) -> dict[str, dict]:
    """Every file a fill wrote in ``folder``, as manifest entries; anything but a file or folder is an error."""
    listing = {}
    for relative, wrong in _entries(folder, f"{folder}: "):
        if wrong is not None:
            raise ValueError(f"{folder / relative}: the writer left {wrong}, which an output folder never holds")
        listing[relative] = {"sha256": sha256_of(folder / relative), "size": (folder / relative).lstat().st_size}
    return listing


def replace_folder(out: str | Path, *, kind: OutputKind, fill: Callable[[Path], None]) -> Path:
    """Write a folder whole and return it: ``fill`` writes a fresh folder beside ``out``, listed in its manifest
    (:data:`MANIFEST`), which is then swapped in.

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
            listing = {name: entry for name, entry in _listing(fresh).items() if name != PARTIAL}
            write_atomic(fresh / MANIFEST, manifest_bytes(kind, listing))  # before PARTIAL goes: always one of the two
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


def write_into(out: str | Path, *, kind: OutputKind, files: dict[str, bytes]) -> list[Path]:
    """Add ``files`` to a folder that accumulates (an export), deleting nothing: under a lock the folder is checked
    again, the manifest lists them as pending, each is written through :func:`write_inside`, then listed as written.

    Parameters
    ----------
    out : str or Path
        The folder (:func:`check_out` must accept it).
    kind : OutputKind
    files : dict of str to bytes
        Relative POSIX path -> content.
    """
    final = check_out(out, kind=kind)
    final.mkdir(parents=True, exist_ok=True)
    with _locked(final.parent):
        check_out(final, kind=kind)  # another writer may have changed it while this one waited
        refuse = f"{kind.option} {final}: refused, "
        owned, leftovers, _ = _owned(final, _manifest(final, kind, refuse) or {}, kind, refuse)
        for name in leftovers:  # a killed write's temporary file beside one of ours
            (final / name).unlink(missing_ok=True)
        new = {name: _file_entry(data) for name, data in files.items()}
        try:
            write_inside(final, MANIFEST, manifest_bytes(kind, owned, pending=new))
            written = [write_inside(final, name, data) for name, data in files.items()]
            write_inside(final, MANIFEST, manifest_bytes(kind, {**owned, **new}))
        except UnsafePath as err:  # a link planted on the way since the check
            raise UnsafeOutput(refuse + str(err)) from None
    return written


def record_written(out: str | Path, *, kind: OutputKind, paths: Iterable[Path]) -> None:
    """List ``paths``, just written under ``out``, in its manifest with the files it listed before that are unchanged
    (a file no longer there drops out); nothing in ``kind.home``, whose history git keeps.

    Parameters
    ----------
    out : str or Path
    kind : OutputKind
    paths : iterable of Path
        Files under ``out``.
    """
    folder = Path(out)
    if kind.home is not None and folder.resolve() == Path(kind.home).resolve():
        return
    refuse = f"{kind.option} {folder}: refused, "
    owned, _, _ = _owned(folder, _manifest(folder, kind, refuse) or {}, kind, refuse)
    for path in paths:
        relative = Path(path).relative_to(folder).as_posix()
        owned[relative] = {"sha256": sha256_of(path), "size": Path(path).lstat().st_size}
    try:
        write_inside(folder, MANIFEST, manifest_bytes(kind, owned))
    except UnsafePath as err:
        raise UnsafeOutput(refuse + str(err)) from None
