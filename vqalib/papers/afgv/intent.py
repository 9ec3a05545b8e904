"""AFGV intent and answer similarity through the shared embedding service
(:func:`vqalib.encoders.embed`, MiniLM): the intent filter of the rewrites (Methods, threshold 0.80)
and the Answer Semantic Similarity of predictions (Metrics, Table 1 from predictions).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from vqalib.encoders import embed


def embed_texts(texts, *, model_path: str | None = None, cache_dir: Path | None = None) -> np.ndarray:
    """Unit-length sentence embeddings (MiniLM by default) from the shared embedding service
    (:func:`vqalib.encoders.embed`: float64, rounded, cached on disk per text)."""
    return embed(list(texts), model=model_path, cache_dir=cache_dir)


def intent_similarity(rewrites: pd.DataFrame, *, model_path: str | None = None,
                      cache_dir: Path | None = None) -> pd.Series:
    """MiniLM cosine similarity between each rewrite and its original (intent filter)."""
    texts = sorted(set(rewrites["original"]) | set(rewrites["question"]))
    emb = embed_texts(texts, model_path=model_path, cache_dir=cache_dir)
    lookup = {t: k for k, t in enumerate(texts)}
    a = emb[[lookup[t] for t in rewrites["original"]]]
    b = emb[[lookup[t] for t in rewrites["question"]]]
    return pd.Series((a * b).sum(axis=1), index=rewrites.index, name="intent_similarity")


def intent_filter_table(rewrites: pd.DataFrame, *, threshold: float = 0.80) -> pd.DataFrame:
    """Share of rewritten questions whose intent similarity falls below ``threshold``, per tier."""
    r = rewrites[rewrites["status"] == "rewritten"]
    g = r.assign(removed=r["intent_similarity"] < threshold).groupby("tier", observed=True)
    return pd.DataFrame({"rewritten": g.size(), "removed": g["removed"].sum(), "share_removed": g["removed"].mean(),
                         "mean_similarity": g["intent_similarity"].mean()}).reset_index().assign(threshold=threshold)


def answer_similarity(predictions: pd.DataFrame, *, model_path: str | None = None,
                      cache_dir: Path | None = None) -> pd.Series:
    """Answer Semantic Similarity: MiniLM cosine between each prediction and its answer (Metrics)."""
    texts = sorted(set(map(str, predictions["prediction"])) | set(map(str, predictions["answer"])))
    emb = embed_texts(texts, model_path=model_path, cache_dir=cache_dir)
    lookup = {t: k for k, t in enumerate(texts)}
    a = emb[[lookup[str(t)] for t in predictions["prediction"]]]
    b = emb[[lookup[str(t)] for t in predictions["answer"]]]
    return pd.Series((a * b).sum(axis=1), index=predictions.index, name="answer_similarity")


def intent_filter_by_set(rewrites: dict[str, pd.DataFrame], *, threshold: float = 0.80) -> pd.DataFrame:
    """:func:`intent_filter_table` of every question set, named in ``question_set`` (intent filter, Methods).

    Parameters
    ----------
    rewrites : dict
        Name -> rewrite rows with ``intent_similarity``.
    threshold : float
        MiniLM cosine below which a rewrite is removed.

    Returns
    -------
    DataFrame
    """
    return pd.concat([intent_filter_table(r, threshold=threshold).assign(question_set=name)
                      for name, r in rewrites.items()], ignore_index=True)
