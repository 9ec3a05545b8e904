"""Content-addressed store of float64 rows (the embedding and metric-score caches): a folder of ``shard-<hash>.npz``
files, only ever added, each a sealed :mod:`vqalib.core.caches` entry read with ``allow_pickle=False``, so
concurrent writers never overwrite each other and a bad shard is discarded and recomputed."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import numpy as np


def item_key(*parts: str) -> str:
    """SHA-256 naming one item by its texts: one by its UTF-8 bytes, several by their JSON list (no two tuples share
    a key)."""
    data = parts[0] if len(parts) == 1 else json.dumps(list(parts), ensure_ascii=False)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


class ShardStore:
    """The rows stored in ``folder``; ``kind`` names the cache in warnings."""

    def __init__(self, folder: Path, *, kind: str = "cache") -> None:
        self.folder = Path(folder)
        self.kind = kind

    def read(self) -> dict[str, np.ndarray]:
        """Every stored row, by key."""
        from vqalib.core.caches import discard, read_entry

        store: dict[str, np.ndarray] = {}
        for shard in sorted(self.folder.glob("shard-*.npz")):
            payload = read_entry(shard, kind=self.kind)
            if payload is None:
                continue
            try:
                with np.load(io.BytesIO(payload), allow_pickle=False) as data:
                    keys, vectors = data["keys"], data["vectors"]
                if keys.dtype != np.dtype("S64") or vectors.dtype != np.float64 or vectors.ndim != 2 \
                        or len(keys) != len(vectors):
                    raise ValueError(f"keys {keys.dtype}, vectors {vectors.dtype} {vectors.shape}")
            except Exception as err:  # whatever the file holds, it was only read as arrays
                discard(shard, kind=self.kind, why=f"not a shard of keys and float64 rows ({type(err).__name__}: {err})")
                continue
            store.update(zip((k.decode() for k in keys), vectors))
        return store

    def write(self, keys: list[str], vectors: np.ndarray) -> None:
        """Add ``vectors`` (one row per key, as float64) as a new sealed shard; nothing when ``keys`` is empty, and a
        refused write only warns."""
        from vqalib.core.caches import write_entry

        if not keys:
            return
        buffer = io.BytesIO()
        names = np.array(keys, dtype="S64")
        np.savez(buffer, keys=names, vectors=np.asarray(vectors, dtype=np.float64).reshape(len(keys), -1))
        shard = hashlib.sha256(names.tobytes()).hexdigest()[:16]
        write_entry(self.folder / f"shard-{shard}.npz", buffer.getvalue(), kind=self.kind)

    def rows(self, keys: list[str], compute) -> np.ndarray:
        """The float64 rows of ``keys`` (aligned, repeats allowed; ``(0, 0)`` when empty): stored ones read, the missing
        ones computed by one ``compute(missing_keys)`` call, sorted (result and shard name do not depend on the
        request's order), and stored as one shard."""
        store = self.read()
        missing = sorted({k for k in keys if k not in store})
        if missing:
            vectors = np.asarray(compute(missing), dtype=np.float64).reshape(len(missing), -1)
            self.write(missing, vectors)
            store.update(zip(missing, vectors))
        return np.stack([store[k] for k in keys]) if keys else np.zeros((0, 0))
