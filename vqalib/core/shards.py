"""Content-addressed on-disk store of float64 rows: the cache behind the embedding service
(:func:`vqalib.core.encoders.embed`) and the per-pair metric scores of VizWiz-LF Table 4
(:func:`vqalib.core.metrics.cache.cached_scores`).

A store is a folder of ``shard-<hash>.npz`` files, each holding ``keys`` (SHA-256 hex digests as
64-byte strings) and ``vectors`` (float64, one row per key). Shards are only ever added, each
written atomically under a name derived from its keys, so concurrent writers (two notebooks of
``make reproduce``) never overwrite each other. Each shard is a sealed entry of
:mod:`vqalib.core.caches` (its SHA-256 checked when read), read with ``allow_pickle=False``: a
cache file is data, never code; a file that fails its seal (truncated, edited, planted, not a regular
file) or is not exactly such a pair of arrays (a pickle, an object array) is discarded with a warning
naming it, and its rows are computed again. A shard that cannot be written (full disk) warns; the
computed rows are still returned.
"""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import numpy as np


def item_key(*parts: str) -> str:
    """SHA-256 naming one item: a single text by its UTF-8 bytes, several texts (a reference and a
    candidate) by their JSON list, so no two different tuples share a key.

    Parameters
    ----------
    *parts : str
        The texts naming the item (at least one).

    Returns
    -------
    str
        The SHA-256 hex digest (64 characters).
    """
    data = parts[0] if len(parts) == 1 else json.dumps(list(parts), ensure_ascii=False)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


class ShardStore:
    """The rows stored in ``folder`` (see the module docstring). ``kind`` names the cache in warnings."""

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
        """Add ``vectors`` (one float64 row per key) as a new sealed shard; nothing is written when ``keys`` is
        empty, and a shard the disk refuses is only warned about (:func:`vqalib.core.caches.write_entry`).

        Parameters
        ----------
        keys : list of str
            The rows' keys (:func:`item_key` digests).
        vectors : ndarray
            One row per key, stored as float64.
        """
        from vqalib.core.caches import write_entry

        if not keys:
            return
        buffer = io.BytesIO()
        names = np.array(keys, dtype="S64")
        np.savez(buffer, keys=names, vectors=np.asarray(vectors, dtype=np.float64).reshape(len(keys), -1))
        shard = hashlib.sha256(names.tobytes()).hexdigest()[:16]
        write_entry(self.folder / f"shard-{shard}.npz", buffer.getvalue(), kind=self.kind)

    def rows(self, keys: list[str], compute) -> np.ndarray:
        """The rows of ``keys`` (aligned, repeats allowed): stored ones read, the distinct missing ones
        computed by ``compute(missing_keys) -> array`` in one call and stored as one shard. Missing keys
        are passed sorted, so what is computed, and the shard's name, do not depend on the request's order.

        Parameters
        ----------
        keys : list of str
            The keys wanted, in the order of the rows returned.
        compute : callable
            ``compute(missing_keys)`` returns one row per missing key; called at most once.

        Returns
        -------
        ndarray
            float64, one row per key of ``keys``; an empty ``(0, 0)`` array when ``keys`` is empty.
        """
        store = self.read()
        missing = sorted({k for k in keys if k not in store})
        if missing:
            vectors = np.asarray(compute(missing), dtype=np.float64).reshape(len(missing), -1)
            self.write(missing, vectors)
            store.update(zip(missing, vectors))
        return np.stack([store[k] for k in keys]) if keys else np.zeros((0, 0))
