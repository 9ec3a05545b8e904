"""AFGV intent and answer similarity (MiniLM cosines): the rewrites' intent filter (Methods, threshold 0.80) and the
Answer Semantic Similarity of predictions (Metrics, Table 1 from predictions)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from vqalib.core.encoders import embed


def _row_cosines(left: list[str], right: list[str], *, model: str | None, cache_dir: Path | None) -> np.ndarray:
    """Cosine of each aligned (left, right) text pair, each distinct text embedded once (unit vectors)."""
    texts = sorted(set(left) | set(right))
    emb = embed(texts, model=model, cache_dir=cache_dir)
    lookup = {t: k for k, t in enumerate(texts)}
    return (emb[[lookup[t] for t in left]] * emb[[lookup[t] for t in right]]).sum(axis=1)


def intent_similarity(rewrites: pd.DataFrame, *, model: str | None = None,
                      cache_dir: Path | None = None) -> pd.Series:
    """MiniLM cosine of each rewrite (``question``) with its ``original``, as ``intent_similarity`` (AFGV Methods)."""
    cosines = _row_cosines(list(rewrites["original"]), list(rewrites["question"]), model=model, cache_dir=cache_dir)
    return pd.Series(cosines, index=rewrites.index, name="intent_similarity")


def intent_filter_table(rewrites: pd.DataFrame, *, threshold: float = 0.80) -> pd.DataFrame:
    """Share of rewritten questions whose intent similarity falls below ``threshold``, per tier (AFGV Methods).

    Parameters
    ----------
    rewrites : pandas.DataFrame
        Rewrite rows with ``tier``, ``status`` and ``intent_similarity``.
    threshold : float, default 0.80
        MiniLM cosine below which a rewrite is removed.
    """
    r = rewrites[rewrites["status"] == "rewritten"]
    g = r.assign(removed=r["intent_similarity"] < threshold).groupby("tier", observed=True)
    return pd.DataFrame({"rewritten": g.size(), "removed": g["removed"].sum(), "share_removed": g["removed"].mean(),
                         "mean_similarity": g["intent_similarity"].mean()}).reset_index().assign(threshold=threshold)


def answer_similarity(predictions: pd.DataFrame, *, model: str | None = None,
                      cache_dir: Path | None = None) -> pd.Series:
    """Answer Semantic Similarity: MiniLM cosine between each ``prediction`` and its ``answer`` (AFGV Metrics)."""
    cosines = _row_cosines(list(map(str, predictions["prediction"])), list(map(str, predictions["answer"])),
                           model=model, cache_dir=cache_dir)
    return pd.Series(cosines, index=predictions.index, name="answer_similarity")


def intent_filter_by_set(rewrites: dict[str, pd.DataFrame], *, threshold: float = 0.80) -> pd.DataFrame:
    """:func:`intent_filter_table` of every question set, named in ``question_set`` (intent filter, AFGV Methods).

    Parameters
    ----------
    rewrites : dict
        Name -> rewrite rows with ``intent_similarity``.
    threshold : float
        MiniLM cosine below which a rewrite is removed.
    """
    return pd.concat([intent_filter_table(r, threshold=threshold).assign(question_set=name)
                      for name, r in rewrites.items()], ignore_index=True)
