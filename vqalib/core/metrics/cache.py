"""The per-pair score cache of the text metrics: each (reference, candidate) pair is scored once.

Not a metric; no citation. Scores are stored per pair in a content-addressed store
(:class:`vqalib.core.shards.ShardStore`) of ``.npz`` arrays read with ``allow_pickle=False`` (a cache file is data,
never code), named by a SHA-256 of the metric, its implementation (library versions, backbone,
:data:`SCORE_CACHE_VERSION`, rounding) and keyed inside by the two texts, so a second ``make reproduce`` does
not recompute them (:func:`cached_scores`). :func:`_score_texts` is the unit of work: the metric's
:meth:`vqalib.core.metrics.registry.Metric.score_texts` (PTB tokenization where declared, then ROUGE-L,
METEOR 1.5 or NLTK METEOR; or BERTScore F1).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from vqalib.core import config
from vqalib.core.io import cache_root
from vqalib.core.metrics.bertscore import Backbone
from vqalib.core.metrics.registry import metric as metric_spec
from vqalib.core.encoders import DECIMALS, model_identity, packaged_minilm_path
from vqalib.core.shards import ShardStore, item_key


def _score_texts(metric: str, references: tuple[str, ...], candidates: tuple[str, ...],
                 backbone: Backbone | None) -> np.ndarray:
    """Scores of one metric for aligned text pairs (the cached unit of work of :func:`cached_scores`;
    bump :data:`SCORE_CACHE_VERSION` when this computation changes)."""
    config.model_call(f"{metric} on {len(references)} pairs")
    return metric_spec(metric).score_texts(references, candidates, backbone)

SCORE_CACHE_VERSION = "2"  # 2: scores stored per pair. Bump when _score_texts changes: cached scores are then not reused


def score_cache_key(metric: str, backbone: Backbone | None) -> str:
    """SHA-256 naming the store of one metric's cached pair scores (Table 4 inputs): the metric, the
    versions of the libraries computing it, the backbone (the packaged MiniLM by its package version,
    not its folder) and layer, the rounding and :data:`SCORE_CACHE_VERSION`. Each pair inside the
    store is keyed by its two texts (:func:`vqalib.core.shards.item_key`).

    Parameters
    ----------
    metric : str
        ``rouge``, ``meteor``, ``meteor_nltk`` or ``bertscore``.
    backbone : Backbone or None
        The BERTScore backbone (None for the other metrics).

    Returns
    -------
    str
        64 hexadecimal digits; its first 16 name the store's folder.
    """
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
    """:func:`_score_texts` of each (reference, candidate) pair, stored per pair in a content-addressed
    store (:class:`vqalib.core.shards.ShardStore` under ``<cache_dir>/<metric>/<settings key>``). Every metric
    here scores a pair on its own (BERTScore without IDF, METEOR's segment score, ROUGE-L, NLTK METEOR),
    so a pair scored once, by any notebook or rule, is never scored again, and repeated pairs are scored
    once. The missing pairs are scored in one call (BERTScore then embeds each distinct text once).

    Parameters
    ----------
    metric : str
        ``rouge``, ``meteor``, ``meteor_nltk`` or ``bertscore``.
    references, candidates : tuple of str
        Aligned raw texts.
    backbone : Backbone or None
        The BERTScore backbone (None for the other metrics).
    cache_dir : Path, optional
        Cache folder (default ``cache_root("metrics")``, :func:`vqalib.core.io.cache_root`).

    Returns
    -------
    ndarray
        One float64 score per pair, in input order.
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
