"""AFGV tier statistics (Table 1): accuracy with Wald CIs, z-scores and CI separations against the baseline, Table 1
recomputed from its accuracies, the sample size a CI implies, and the intent-preserved vs shifted "2.8x" analysis."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

Z95 = 1.959963984540054


def wald_ci(p: np.ndarray | float, n: np.ndarray | int, *, z: float = Z95) -> tuple[np.ndarray, np.ndarray]:
    """Wald 95% CI ``(low, high)`` of a binomial proportion, p ± z·sqrt(p(1-p)/n), unclipped (AFGV Table 1)."""
    p, n = np.asarray(p, dtype=float), np.asarray(n, dtype=float)
    half = z * np.sqrt(p * (1 - p) / n)
    return p - half, p + half


def z_vs_baseline(p: np.ndarray | float, p0: np.ndarray | float, n: np.ndarray | int,
                  n0: np.ndarray | int | None = None) -> np.ndarray:
    """Two-proportion z-score (unpooled SE, non-negative) of a tier (``p``, ``n``) against the baseline (``p0``, ``n0``,
    default ``n``; AFGV Table 1)."""
    p, p0 = np.asarray(p, dtype=float), np.asarray(p0, dtype=float)
    n = np.asarray(n, dtype=float)
    n0 = n if n0 is None else np.asarray(n0, dtype=float)
    return np.abs(p0 - p) / np.sqrt(p * (1 - p) / n + p0 * (1 - p0) / n0)


def min_ci_separation(p: np.ndarray | float, p0: np.ndarray | float, n, n0=None) -> np.ndarray:
    """Gap between the Wald CIs of a tier and the baseline, in points, negative when they overlap (AFGV Table 1)."""
    low0, high0 = wald_ci(p0, n if n0 is None else n0)
    low, high = wald_ci(p, n)
    gap = np.where(np.asarray(p) < np.asarray(p0), low0 - high, low - high0)
    return 100 * gap


def table1_from_accuracies(table: pd.DataFrame, *, n: int) -> pd.DataFrame:
    """AFGV Table 1's CI, delta, z and CI-separation columns recomputed from its accuracies and N, per model and tier.

    Parameters
    ----------
    table : pandas.DataFrame
        ``model``, ``tier``, ``accuracy`` (proportion); each model needs a ``Baseline`` tier.
    n : int
        Questions per tier.
    """
    rows = []
    for model, group in table.groupby("model", sort=False):
        base = float(group.loc[group["tier"] == "Baseline", "accuracy"].iloc[0])
        for r in group.itertuples(index=False):
            low, high = wald_ci(r.accuracy, n)
            row = {"model": model, "tier": r.tier, "accuracy": r.accuracy, "ci95_low": float(low), "ci95_high": float(high)}
            if r.tier != "Baseline":
                row.update(delta_vs_baseline=r.accuracy - base, z_score=float(z_vs_baseline(r.accuracy, base, n)),
                           min_ci_separation=float(min_ci_separation(r.accuracy, base, n)))
            rows.append(row)
    return pd.DataFrame(rows)


def normalize_answer(text: str) -> str:
    """Exact-match normal form: lower-case, punctuation and articles removed, spaces folded (AFGV Table 1)."""
    text = re.sub(r"[^\w\s]", " ", str(text).lower())
    return " ".join(w for w in text.split() if w not in ("a", "an", "the"))


def tier_accuracy(predictions: pd.DataFrame, *, by: tuple[str, ...] = ("model", "tier")) -> pd.DataFrame:
    """Exact-match accuracy per model and tier with Wald CI, z and CI separation vs baseline (AFGV Table 1).

    Parameters
    ----------
    predictions : pandas.DataFrame
        ``question_id``, ``tier`` (baseline as ``baseline``), ``model``, ``prediction``, ``answer``.
    by : tuple of str, default ("model", "tier")
        Grouping columns; must include ``tier``.
    """
    p = predictions.assign(correct=[normalize_answer(a) == normalize_answer(b)
                                    for a, b in zip(predictions["prediction"], predictions["answer"])])
    acc = p.groupby(list(by), observed=True, sort=False)["correct"].agg(accuracy="mean", n="size").reset_index()
    low, high = wald_ci(acc["accuracy"], acc["n"])
    acc["ci95_low"], acc["ci95_high"] = low, high
    base = acc[acc["tier"] == "baseline"].set_index([c for c in by if c != "tier"])
    keyed = acc.set_index([c for c in by if c != "tier"])
    p0 = base["accuracy"].reindex(keyed.index).to_numpy()
    n0 = base["n"].reindex(keyed.index).to_numpy()
    acc["delta_vs_baseline"] = acc["accuracy"].to_numpy() - p0
    acc["z_score"] = z_vs_baseline(acc["accuracy"], p0, acc["n"], n0)
    acc["min_ci_separation"] = min_ci_separation(acc["accuracy"], p0, acc["n"], n0)
    acc.loc[acc["tier"] == "baseline", ["delta_vs_baseline", "z_score", "min_ci_separation"]] = np.nan
    return acc


def implied_n(accuracy, ci_low, ci_high, *, z: float = Z95) -> np.ndarray:
    """The sample size a printed Wald CI implies: p(1-p)(z / half-width)^2 (AFGV Table 1 check).

    Parameters
    ----------
    accuracy, ci_low, ci_high : float or array of float
        The printed accuracy and interval (proportions).
    z : float, default Z95
    """
    p = np.asarray(accuracy, dtype=float)
    half = (np.asarray(ci_high, dtype=float) - np.asarray(ci_low, dtype=float)) / 2
    return p * (1 - p) * (z / half) ** 2


def intent_deltas(predictions: pd.DataFrame, *, threshold: float = 0.80) -> pd.DataFrame:
    """Accuracy change vs baseline of intent-preserved and intent-shifted rewrites (the "2.8x" analysis, AFGV Table 1).

    Parameters
    ----------
    predictions : pandas.DataFrame
        Predictions of every tier, with ``intent_similarity`` on rewrites.
    threshold : float, default 0.80
        MiniLM cosine at or above which a rewrite preserves the intent.

    Returns
    -------
    pandas.DataFrame
        Per model, tier and subset: ``n``, ``delta_vs_baseline`` and ``shifted_to_preserved_ratio``.
    """
    p = predictions.assign(correct=[normalize_answer(a) == normalize_answer(b)
                                    for a, b in zip(predictions["prediction"], predictions["answer"])])
    base = p[p["tier"] == "baseline"].set_index(["model", "question_id"])["correct"]
    rows = []
    rewritten = p[p["tier"] != "baseline"]
    for (model, tier), group in rewritten.groupby(["model", "tier"], observed=True, sort=False):
        b = base.reindex(pd.MultiIndex.from_arrays([group["model"], group["question_id"]])).to_numpy(dtype=float)
        kept = group["intent_similarity"].to_numpy() >= threshold
        for label, mask in (("intent preserved", kept), ("intent shifted", ~kept)):
            if mask.any():
                rows.append({"model": model, "tier": tier, "subset": label, "n": int(mask.sum()),
                             "delta_vs_baseline": float(group["correct"].to_numpy()[mask].mean() - np.nanmean(b[mask]))})
    out = pd.DataFrame(rows)
    if not out.empty:
        wide = out.pivot_table(index=["model", "tier"], columns="subset", values="delta_vs_baseline", observed=True)
        if {"intent preserved", "intent shifted"} <= set(wide.columns):
            ratio = (wide["intent shifted"] / wide["intent preserved"]).rename("shifted_to_preserved_ratio")
            out = out.merge(ratio.reset_index(), on=["model", "tier"], how="left")
    return out
