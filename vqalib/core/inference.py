"""Statistical helpers the papers' analyses share: t intervals, bootstrap intervals of many means and of grouped
multi-label F1, significance marks and printed p-values. Each paper prints its own marks, so the levels are a
parameter (:data:`THREE_LEVELS`, :data:`TWO_LEVELS`)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats as scistats

THREE_LEVELS: tuple[tuple[float, str], ...] = ((0.001, "***"), (0.01, "**"), (0.05, "*"))
TWO_LEVELS: tuple[tuple[float, str], ...] = ((0.01, "**"), (0.05, "*"))


def star_mark(p: float | None, *, levels: tuple[tuple[float, str], ...] = THREE_LEVELS,
                       otherwise: str = "") -> str:
    """The mark of the first level ``p`` is below, else ``otherwise`` (also for a missing p: None or NaN).

    Parameters
    ----------
    p : float or None
    levels : tuple of (float, str), default THREE_LEVELS
        (threshold, mark) pairs, smallest threshold first; ``p`` must be strictly below a threshold.
    otherwise : str, default ""
    """
    if p is None or not np.isfinite(p):
        return otherwise
    return next((mark for level, mark in levels if p < level), otherwise)


def p_value_text(p: float | None, *, decimals: int = 4) -> str:
    """A p-value as printed: ``decimals`` decimals, ``< 0.0001`` below the smallest printable value, "" when missing.

    Parameters
    ----------
    p : float or None
    decimals : int, default 4
    """
    if p is None or not np.isfinite(p):
        return ""
    floor = 10.0 ** -decimals
    return f"< {floor:.{decimals}f}" if p < floor else f"{p:.{decimals}f}"


def mean_ci(values, *, confidence: float = 0.95) -> tuple[float, float, float, float]:
    """Mean, SD (ddof 1) and two-sided t interval of the mean: ``(mean, sd, ci_low, ci_high)``; with one value the SD
    is NaN, with no spread the interval is the mean itself.

    Parameters
    ----------
    values : array-like of float
    confidence : float, default 0.95
    """
    values = np.asarray(values, dtype=float)
    n = len(values)
    mean = float(values.mean()) if n else math.nan
    sd = float(values.std(ddof=1)) if n > 1 else math.nan
    if n > 1 and sd > 0:
        lo, hi = scistats.t.interval(confidence, n - 1, loc=mean, scale=sd / math.sqrt(n))
    else:
        lo = hi = mean
    return mean, sd, float(lo), float(hi)


def bootstrap_mean_cis(samples: list[np.ndarray], *, n_resamples: int = 1000, confidence: float = 0.95,
                       seed: int = 0) -> np.ndarray:
    """Percentile bootstrap intervals (lower, upper per sample) of the means of many samples at once, bit for bit
    ``scipy.stats.bootstrap``'s (``method="percentile"``, ``default_rng(seed)`` per sample).

    Parameters
    ----------
    samples : list of numpy.ndarray
        One-dimensional float samples, each with at least two values.
    n_resamples : int, default 1000
    confidence : float, default 0.95
    seed : int, default 0
    """
    out = np.full((len(samples), 2), np.nan)
    alpha = np.asarray((1 - confidence) / 2)
    interval = np.stack((alpha, 1 - alpha), axis=-1)  # as scipy forms it
    by_size: dict[int, list[int]] = {}
    for i, sample in enumerate(samples):
        by_size.setdefault(len(sample), []).append(i)
    for n, members in by_size.items():
        index = np.random.default_rng(seed).integers(0, n, (n_resamples, n), dtype=np.int64)
        # averaged per sample along the last axis, as scipy does (a 3-D mean adds in another order: other bits)
        means = np.stack([np.asarray(samples[i], dtype=float)[index].mean(axis=-1) for i in members])
        out[members] = scistats.quantile(means, interval, axis=-1)
    return out


def grouped_f1_intervals(truth: np.ndarray, predicted: np.ndarray, *, groups, labels: tuple[str, ...], n_boot: int = 1000,
                 confidence: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """Percentile bootstrap intervals (``name``, ``ci_low``, ``ci_high``) of per-label and support-weighted F1 of
    multi-label predictions, resampling whole groups; F1 from the resampled counts (0 where a label has none),
    weighted as scikit-learn's ``average="weighted"``.

    Parameters
    ----------
    truth, predicted : numpy.ndarray of shape (n_rows, n_labels)
        0/1 true and predicted labels.
    groups : array-like of shape (n_rows,)
    labels : tuple of str
        Names of the label columns, then one for the weighted average.
    n_boot : int, default 1000
    confidence : float, default 0.95
    seed : int, default 0
    """
    truth, predicted = np.asarray(truth, dtype=np.int64), np.asarray(predicted, dtype=np.int64)
    codes, uniques = pd.factorize(pd.Series(np.asarray(groups)), sort=True)
    counts = np.zeros((len(uniques), truth.shape[1], 3), dtype=np.int64)  # per question: tp, fp, fn
    np.add.at(counts[:, :, 0], codes, truth & predicted)
    np.add.at(counts[:, :, 1], codes, (1 - truth) & predicted)
    np.add.at(counts[:, :, 2], codes, truth & (1 - predicted))
    rng = np.random.default_rng(seed)
    draws = np.stack([np.bincount(rng.integers(0, len(uniques), len(uniques)), minlength=len(uniques))
                      for _ in range(n_boot)])
    tp, fp, fn = (np.einsum("bq,ql->bl", draws, counts[:, :, k]) for k in range(3))
    denominator = 2 * tp + fp + fn
    f1 = np.divide(2 * tp, denominator, out=np.zeros(tp.shape), where=denominator > 0)
    support = tp + fn
    total = support.sum(axis=1)
    weighted = np.divide((f1 * support).sum(axis=1), total, out=np.zeros(n_boot), where=total > 0)
    values = np.column_stack([f1, weighted])
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail], axis=0)
    return pd.DataFrame({"name": list(labels), "ci_low": low, "ci_high": high})
