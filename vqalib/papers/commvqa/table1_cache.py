"""CommVQA Table 1 scores of one protocol (:class:`ProtocolScores`) and their on-disk cache (§5, Table 1): keyed
by content, Parquet and ``.npz`` (no pickle) with a ``SHA256SUMS`` manifest; a damaged folder is scored again."""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from vqalib.core.caches import discard, verify_manifest, write_manifest

@dataclass
class ProtocolScores:
    """Scores of one protocol (Table 1): per cell, per authors' subset, per question, and bootstrap ``resamples``."""

    protocol: str
    scores: pd.DataFrame
    subsets: pd.DataFrame
    per_question: pd.DataFrame
    resamples: dict = field(default_factory=dict)


PROTOCOL_CACHE_VERSION = "2"  # bump when the scoring code changes what it returns


def protocol_cache_key(inputs: pd.DataFrame, **settings) -> str:
    """Content key (32 hex digits) of one protocol's scoring: inputs, ``settings`` and scorer versions (Table 1)."""
    import hashlib
    import importlib.metadata
    import json

    payload = {"version": PROTOCOL_CACHE_VERSION, "pycocoevalcap": importlib.metadata.version("pycocoevalcap"),
               "settings": {k: list(v) if isinstance(v, tuple) else v for k, v in sorted(settings.items())},
               "rows": [[str(m), str(c), int(r), None if pd.isna(q) else int(q), list(refs), str(cand)]
                        for m, c, r, q, refs, cand in inputs[["model", "condition", "row", "question_id", "references",
                                                              "candidate"]].itertuples(index=False)]}
    return hashlib.sha256(json.dumps(payload, ensure_ascii=False).encode("utf-8")).hexdigest()[:32]


_PROTOCOL_FRAMES = ("scores", "subsets", "per_question")


def save_protocol_scores(folder: Path, scored: ProtocolScores) -> None:
    """Write a protocol's scores into ``folder`` atomically, so a reader never meets half a result (Table 1); a failed
    write (full disk) warns and leaves the caller its scores."""
    import shutil
    import tempfile

    tmp = None
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
        tmp.chmod(0o755)  # mkdtemp's 0700 would hide a shared cache from its other users
        for name in _PROTOCOL_FRAMES:
            getattr(scored, name).to_parquet(tmp / f"{name}.parquet", index=False)
        np.savez(tmp / "resamples.npz", **{"|".join(k): v for k, v in scored.resamples.items()})
        write_manifest(tmp)
        os.replace(tmp, folder)
    except OSError as err:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        if not folder.is_dir():
            warnings.warn(f"could not write CommVQA Table 1 cache entry {folder} ({type(err).__name__}: {err}); "
                          "the scores are used but not cached", stacklevel=2)


def load_protocol_scores(folder: Path, *, protocol: str) -> ProtocolScores | None:
    """The cached scores of :func:`save_protocol_scores`, or None when there are none or they fail their manifest (the
    folder is then discarded with a warning; CommVQA Table 1)."""
    if not folder.exists():
        return None
    names = (*(f"{name}.parquet" for name in _PROTOCOL_FRAMES), "resamples.npz")
    problem = verify_manifest(folder, names=names)
    if problem is None:
        try:
            frames = {name: pd.read_parquet(folder / f"{name}.parquet") for name in _PROTOCOL_FRAMES}
            with np.load(folder / "resamples.npz", allow_pickle=False) as arrays:
                resamples = {tuple(k.split("|")): arrays[k] for k in arrays.files}
            return ProtocolScores(protocol=protocol, resamples=resamples, **frames)
        except Exception as err:  # a file that matches its hash but is not a table: only ever read as data
            problem = f"{type(err).__name__}: {err}"
    discard(folder, kind="CommVQA Table 1 cache", why=problem)
    return None
