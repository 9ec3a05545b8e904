"""Cache entries verified when read: each file starts with a ``vqalib-cache 1 sha256=...`` seal line; an entry that
no longer matches (or is not a regular file) is discarded with a warning and recomputed; a folder written together
carries a ``SHA256SUMS`` manifest. Nothing read is unpickled or run."""

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
    """``payload`` with its seal line in front (what :func:`write_entry` stores)."""
    return SEAL_PREFIX + hashlib.sha256(payload).hexdigest().encode("ascii") + b"\n" + payload


def unseal(data: bytes) -> bytes:
    """The payload of sealed entry ``data`` (:class:`CorruptEntry` if its seal is missing or different)."""
    if not data.startswith(SEAL_PREFIX) or data[_SEAL_LENGTH - 1:_SEAL_LENGTH] != b"\n":
        raise CorruptEntry("no seal line (written by another version, or not a cache entry)")
    stated = data[len(SEAL_PREFIX):_SEAL_LENGTH - 1].decode("ascii", errors="replace")
    payload = data[_SEAL_LENGTH:]
    if hashlib.sha256(payload).hexdigest() != stated:
        raise CorruptEntry(f"content changed since it was written ({len(payload):,} bytes do not hash to the seal)")
    return payload


def discard(path: Path, *, kind: str, why: str) -> None:
    """Warn that cache entry ``path`` (file or folder) is not used, and remove it (best effort) so it is recomputed.

    Parameters
    ----------
    path : Path
    kind : str
        Which cache, for the warning.
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
    """The verified payload of the entry at ``path``, or None when absent or untrusted (discarded with a warning).

    Parameters
    ----------
    path : Path
    kind : str
        Which cache, for the warning.
    max_bytes : int, optional
        The largest entry accepted (larger: discarded).
    unsealed_ok : bool, default False
        Return an unsealed entry as it is (older entries its caller checks); a bad seal is still discarded.
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
    """Store ``payload`` sealed at ``path`` (atomically): True, or False after a warning when the disk refused it (a
    cache that cannot be written does not stop the run).

    Parameters
    ----------
    path : Path
    payload : bytes
    kind : str
        Which cache, for the warning.
    """
    try:
        write_atomic(Path(path), seal(payload))
        return True
    except OSError as err:
        warnings.warn(f"could not write {kind} entry {path} ({type(err).__name__}: {err}); the result is used "
                      "but not cached", stacklevel=3)
        return False


def _frame_digest(frame) -> str:
    """SHA-256 of a table's columns, dtypes, index and values (unhashable values by their JSON)."""
    import json

    import pandas as pd

    digest = hashlib.sha256(json.dumps([[str(c), str(t)] for c, t in frame.dtypes.items()]).encode("utf-8"))
    digest.update(pd.util.hash_pandas_object(frame.index).to_numpy().tobytes())
    for column in frame.columns:
        try:
            digest.update(pd.util.hash_pandas_object(frame[column], index=False).to_numpy().tobytes())
        except TypeError:
            digest.update(json.dumps([repr(v) if not isinstance(v, (list, tuple, str, int, float)) else v
                                      for v in frame[column]], ensure_ascii=False, default=repr).encode("utf-8"))
    return digest.hexdigest()


def content_key(*, code: tuple[str, ...] = (), packages: tuple[str, ...] = (), **inputs) -> str:
    """SHA-256 hex naming a computed table by its ``inputs``, the source of the ``code`` modules and package versions.

    Parameters
    ----------
    code : tuple of str
        Importable modules (a package: every module in it) whose source the result depends on.
    packages : tuple of str
        Installed distributions whose version the result depends on (pandas always).
    **inputs
        Tables, numeric arrays, or JSON-serializable values.
    """
    import importlib
    import importlib.metadata
    import json

    import pandas as pd

    digest = hashlib.sha256()
    for name in sorted(code):
        module = importlib.import_module(name)
        files = ([Path(module.__file__)] if not hasattr(module, "__path__")
                 else sorted(f for folder in module.__path__ for f in Path(folder).rglob("*.py")))
        for path in files:
            digest.update(f"{name}:{path.name}\0".encode() + path.read_bytes())
    versions = {name: importlib.metadata.version(name) for name in sorted({"pandas", *packages})}
    import numpy as np

    tables = {k: _frame_digest(v) for k, v in inputs.items() if isinstance(v, pd.DataFrame)}
    tables |= {k: hashlib.sha256(f"{v.dtype.str}{v.shape}".encode() + np.ascontiguousarray(v).tobytes()).hexdigest()
               for k, v in inputs.items() if isinstance(v, np.ndarray) and v.dtype != object}
    plain = {k: v for k, v in inputs.items() if k not in tables}
    digest.update(json.dumps({"packages": versions, "inputs": plain, "tables": tables}, sort_keys=True,
                             ensure_ascii=False, default=list).encode("utf-8"))
    return digest.hexdigest()


def cached_frame(path: Path, *, kind: str, compute):
    """The table stored at ``path``, else ``compute()`` stored there and returned; name ``path`` by :func:`content_key`.

    Parameters
    ----------
    path : Path
    kind : str
    compute : callable
        Returns the table (default index) when there is no entry.
    """
    cached = read_frame(path, kind=kind)
    if cached is not None:
        return cached
    frame = compute()
    write_frame(path, frame, kind=kind)
    return frame


def _frame_from_payload(payload: bytes):
    """The table of a :func:`write_frame` payload: a JSON line on its ``object`` columns' missing values, then Parquet."""
    import io
    import json

    import pandas as pd

    import numpy as np

    head, _, body = payload.partition(b"\n")
    frame = pd.read_parquet(io.BytesIO(body))
    for column, missing in json.loads(head)["object_columns"].items():  # Parquet gives None for a missing value
        values = frame[column].astype(object)
        frame[column] = values.where(values.notna(), np.nan) if missing == "nan" else values
    return frame


def read_frame(path: Path, *, kind: str):
    """The table :func:`write_frame` stored at ``path``, or None when absent or untrusted (discarded with a warning)."""
    payload = read_entry(path, kind=kind)
    if payload is None:
        return None
    try:
        return _frame_from_payload(payload)
    except Exception as err:  # sealed but not a table (another writer's format): only ever read as data
        discard(Path(path), kind=kind, why=f"{type(err).__name__}: {err}")
        return None


def write_frame(path: Path, frame, *, kind: str) -> bool:
    """Store ``frame`` (default index) as a sealed Parquet entry (no pickle), only when it reads back equal in values
    and dtypes; returns as :func:`write_entry`, False too when it would not read back equal."""
    import io
    import json

    import pandas as pd

    buffer = io.BytesIO()
    objects = [c for c in frame.columns if frame[c].dtype == object]  # None and NaN: equal to equals(), not here
    missing = {str(c): "nan" if any(isinstance(v, float) for v in frame[c][frame[c].isna()]) else "none"
               for c in objects}
    buffer.write(json.dumps({"object_columns": missing}).encode())
    buffer.write(b"\n")
    frame.to_parquet(buffer, index=False)
    payload = buffer.getvalue()
    back = _frame_from_payload(payload)
    if not (back.equals(frame) and back.dtypes.equals(frame.dtypes) and back.columns.equals(frame.columns)
            and frame.index.equals(pd.RangeIndex(len(frame)))
            and all(back[c].map(type).equals(frame[c].map(type)) for c in objects)):
        warnings.warn(f"{kind} entry {path}: the table does not read back equal from Parquet; it is used but not "
                      "cached", stacklevel=2)
        return False
    return write_entry(path, payload, kind=kind)


def write_manifest(folder: Path) -> None:
    """Write ``SHA256SUMS`` in ``folder`` (before it is renamed into place): the SHA-256 of every other file in it.

    Parameters
    ----------
    folder : Path
    """
    from vqalib.core.io import sha256_of

    lines = [f"{sha256_of(f)}  {f.name}\n" for f in sorted(Path(folder).iterdir()) if f.name != MANIFEST]
    (Path(folder) / MANIFEST).write_text("".join(lines), encoding="utf-8")


def verify_manifest(folder: Path, *, names: tuple[str, ...]) -> str | None:
    """Why the folder entry cannot be trusted, or None when each of ``names`` is listed in ``SHA256SUMS`` and matches.

    Parameters
    ----------
    folder : Path
    names : tuple of str
        The files it must hold.
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
