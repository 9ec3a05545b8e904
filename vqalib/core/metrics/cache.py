"""The per-pair score cache of the text metrics (not a metric): each (reference, candidate) pair is scored once,
in a content-addressed ``.npz`` store named by the metric and its implementation's versions."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from vqalib.core import config
from vqalib.core.io import cache_root
from vqalib.core.metrics.bertscore import Backbone
from vqalib.core.metrics.catalog import metric as metric_spec
from vqalib.core.encoders import DECIMALS, model_identity, packaged_minilm_path
from vqalib.core.shards import ShardStore, item_key


def _score_texts(metric: str, references: tuple[str, ...], candidates: tuple[str, ...],
                 backbone: Backbone | None) -> np.ndarray:
    """Scores of one metric for aligned text pairs (bump :data:`SCORE_CACHE_VERSION` when this changes)."""
    config.model_call(f"{metric} on {len(references)} pairs")
    return metric_spec(metric).score_texts(references, candidates, backbone)

SCORE_CACHE_VERSION = "2"  # 2: scores stored per pair; bump when _score_texts changes, so cached scores are not reused


def score_cache_key(metric: str, backbone: Backbone | None) -> str:
    """SHA-256 (64 hex digits) naming one metric's score store: metric, library versions, backbone (None but
    for BERTScore), rounding."""
    from importlib.metadata import PackageNotFoundError, version

    def installed(package: str) -> str:
        try:
            return version(package)
        except PackageNotFoundError:
            return "absent"

    model = None
    if backbone is not None:
        identity = (model_identity(None)[1] if backbone.model_type == packaged_minilm_path()
                    else backbone.model_type)
        model = [identity, backbone.num_layers]
    settings = {"metric": metric, "cache_version": SCORE_CACHE_VERSION, "decimals": DECIMALS, "backbone": model,
                "packages": {p: installed(p) for p in metric_spec(metric).packages}}
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode("utf-8")).hexdigest()


def cached_scores(metric: str, references: tuple[str, ...], candidates: tuple[str, ...],
                  backbone: Backbone | None, *, cache_dir: Path | None = None) -> np.ndarray:
    """Scores (float64) of each (reference, candidate) pair from the per-pair cache; missing pairs scored at once.

    Parameters
    ----------
    metric : str
        ``rouge``, ``meteor``, ``meteor_nltk`` or ``bertscore``.
    references, candidates : tuple of str
        Aligned raw texts.
    backbone : Backbone or None
        The BERTScore backbone (None for the other metrics).
    cache_dir : Path, optional
        Cache folder; default ``cache_root("metrics")``.
    """
    if not references:
        return np.array([], dtype=np.float64)
    store = ShardStore(Path(cache_dir or cache_root("metrics")) / metric / score_cache_key(metric, backbone)[:16],
                       kind="metric cache")
    keys = [item_key(r, c) for r, c in zip(references, candidates)]
    pair_of = dict(zip(keys, zip(references, candidates)))

    def compute(missing: list[str]) -> np.ndarray:
        refs, cands = zip(*(pair_of[k] for k in missing))
        return _score_texts(metric, tuple(refs), tuple(cands), backbone)

    return store.rows(keys, compute)[:, 0]
