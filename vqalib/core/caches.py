"""Cache entries verified when read: every file a cache stores carries the SHA-256 of its content, and a
reader serves it only when the content still matches (ARCHITECTURE.md, Conventions: "Caches verified when read").

An entry is one file: a first line ``vqalib-cache 1 sha256=<64 hex digits>`` and then the payload (JSON,
an ``.npz`` archive, ...), written with :func:`write_entry` through a temporary file and a rename. A
folder of files written together (CommVQA Table 1's Parquet tables) carries a ``SHA256SUMS`` manifest
instead (:func:`write_manifest`, :func:`verify_manifest`).

What a reader meets, and what happens (:func:`read_entry`):

- no file: a miss (None), silently;
- a file that is not a regular file (a named pipe, a folder), lacks the seal, or whose content no
  longer matches its seal (truncated by a crash, edited by hand, planted): discarded with a warning
  naming the file and why, and the value computed again;
- a cache that cannot be written (a full disk, a read-only folder): :func:`write_entry` warns naming the
  file and returns False; the caller keeps and returns the value it computed.

Nothing read from a cache is ever unpickled or run: payloads are parsed as data by their callers.
"""

from __future__ import annotations

import hashlib
import shutil
import warnings
from pathlib import Path

from vqalib.core.io import NotRegularFile, read_regular, write_atomic

SEAL_PREFIX = b"vqalib-cache 1 sha256="
_SEAL_LENGTH = len(SEAL_PREFIX) + 64 + 1  # prefix, hex digest, newline
MANIFEST = "SHA256SUMS"


class CorruptEntry(ValueError):
    """A cache entry whose content does not match its seal (or has none)."""


def seal(payload: bytes) -> bytes:
    """``payload`` with its seal line in front (what :func:`write_entry` stores).

    Parameters
    ----------
    payload : bytes
        The entry's content.

    Returns
    -------
    bytes
        The seal line, then ``payload``.
    """
    return SEAL_PREFIX + hashlib.sha256(payload).hexdigest().encode("ascii") + b"\n" + payload


def unseal(data: bytes) -> bytes:
    """The payload of a sealed entry, checked against its seal.

    Parameters
    ----------
    data : bytes
        A whole entry as stored.

    Returns
    -------
    bytes
        The payload.

    Raises
    ------
    CorruptEntry
        When the seal line is missing or malformed, or the payload's SHA-256 differs from it.
    """
    if not data.startswith(SEAL_PREFIX) or data[_SEAL_LENGTH - 1:_SEAL_LENGTH] != b"\n":
        raise CorruptEntry("no seal line (written by another version, or not a cache entry)")
    stated = data[len(SEAL_PREFIX):_SEAL_LENGTH - 1].decode("ascii", errors="replace")
    payload = data[_SEAL_LENGTH:]
    if hashlib.sha256(payload).hexdigest() != stated:
        raise CorruptEntry(f"content changed since it was written ({len(payload):,} bytes do not hash to the seal)")
    return payload


def discard(path: Path, *, kind: str, why: str) -> None:
    """Warn that cache entry ``path`` is not used, and remove it (best effort) so the next run recomputes it
    silently.

    Parameters
    ----------
    path : Path
        The file (or folder) of the entry.
    kind : str
        Which cache, for the warning ("embedding cache", "judge cache", ...).
    why : str
        What is wrong with it.
    """
    warnings.warn(f"discarding {kind} entry {path}: {why}; it is computed again", stacklevel=3)
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
    except OSError:
        pass  # a read-only cache: the entry stays and is skipped again next time


def read_entry(path: Path, *, kind: str, max_bytes: int | None = None, unsealed_ok: bool = False) -> bytes | None:
    """The verified payload of the entry at ``path``, or None when there is none or it cannot be trusted
    (discarded with a warning, see the module docstring).

    Parameters
    ----------
    path : Path
        The entry's file.
    kind : str
        Which cache, for the warning.
    max_bytes : int, optional
        The largest entry accepted (larger: discarded).
    unsealed_ok : bool, default False
        Return an entry without a seal line as it is (a cache whose older entries predate seals and are checked
        by their caller otherwise: the judge's paid replies); a seal that does not match is still discarded.

    Returns
    -------
    bytes or None
        The payload.
    """
    path = Path(path)
    try:
        data = read_regular(path, what=f"{kind} entry", max_bytes=max_bytes)
        return data if unsealed_ok and not data.startswith(SEAL_PREFIX) else unseal(data)
    except FileNotFoundError:
        return None
    except (NotRegularFile, CorruptEntry, OSError) as err:
        discard(path, kind=kind, why=str(err).removeprefix(f"{path}: "))
        return None


def write_entry(path: Path, payload: bytes, *, kind: str) -> bool:
    """Store ``payload`` sealed at ``path`` (atomically); a cache that cannot be written warns and goes on.

    Parameters
    ----------
    path : Path
        The entry's file; missing folders are created.
    payload : bytes
        The content.
    kind : str
        Which cache, for the warning.

    Returns
    -------
    bool
        True when stored; False (after a warning naming the file and the error) when the disk refused it.
    """
    try:
        write_atomic(Path(path), seal(payload))
        return True
    except OSError as err:
        warnings.warn(f"could not write {kind} entry {path} ({type(err).__name__}: {err}); the result is used "
                      "but not cached", stacklevel=3)
        return False


def write_manifest(folder: Path) -> None:
    """Write ``SHA256SUMS`` in ``folder``: the SHA-256 of every other file in it (one line each, sorted), so
    :func:`verify_manifest` can check the folder as one entry.

    Parameters
    ----------
    folder : Path
        A folder of regular files, before it is renamed into place.
    """
    from vqalib.core.io import sha256_of

    lines = [f"{sha256_of(f)}  {f.name}\n" for f in sorted(Path(folder).iterdir()) if f.name != MANIFEST]
    (Path(folder) / MANIFEST).write_text("".join(lines), encoding="utf-8")


def verify_manifest(folder: Path, *, names: tuple[str, ...]) -> str | None:
    """Why the folder entry ``folder`` cannot be trusted, or None when its ``names`` are all listed in its
    ``SHA256SUMS`` and each file still has that hash.

    Parameters
    ----------
    folder : Path
        The entry's folder.
    names : tuple of str
        The files it must hold.

    Returns
    -------
    str or None
        The first problem found, or None.
    """
    try:
        listed = {}
        for line in read_regular(Path(folder) / MANIFEST, what="cache manifest").decode("utf-8").splitlines():
            digest, _, name = line.partition("  ")
            listed[name] = digest
        for name in names:
            if name not in listed:
                return f"{name} is not in its {MANIFEST}"
            data = read_regular(Path(folder) / name, what="cache file")
            if hashlib.sha256(data).hexdigest() != listed[name]:
                return f"{name} changed since it was written"
    except (OSError, UnicodeDecodeError, NotRegularFile) as err:
        return f"{type(err).__name__}: {err}"
    return None
