"""Statistical helpers the three papers' analyses share: the t interval of a mean, percentile bootstrap
intervals of many means at once and significance marks, written once here so that every paper's analysis
computes them the same way.

Each paper prints its own marks, so the levels are a parameter: VizWiz-LF Fig. 2 and CommVQA Fig. 4 use
``***``/``**``/``*`` at .001/.01/.05 (:data:`THREE_LEVELS`; Fig. 4 writes "n.s." otherwise), VizWiz-LF
Table 18 ``**``/``*`` at .01/.05 (:data:`TWO_LEVELS`).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as scistats

THREE_LEVELS: tuple[tuple[float, str], ...] = ((0.001, "***"), (0.01, "**"), (0.05, "*"))
TWO_LEVELS: tuple[tuple[float, str], ...] = ((0.01, "**"), (0.05, "*"))


def star_mark(p: float | None, *, levels: tuple[tuple[float, str], ...] = THREE_LEVELS,
                       otherwise: str = "") -> str:
    """The mark of the first level ``p`` is below, else ``otherwise`` (also for a missing p).

    Parameters
    ----------
    p : float or None
        The p-value; None or NaN counts as missing.
    levels : tuple of (float, str), default THREE_LEVELS
        (threshold, mark) pairs, smallest threshold first; ``p`` must be strictly below a threshold.
    otherwise : str, default ""
        What a p-value above every level (or missing) gets.

    Returns
    -------
    str
        The mark.
    """
    if p is None or not np.isfinite(p):
        return otherwise
    return next((mark for level, mark in levels if p < level), otherwise)


def mean_ci(values, *, confidence: float = 0.95) -> tuple[float, float, float, float]:
    """Mean, SD (ddof 1) and the t interval of the mean (CommVQA Figs. 3-5, answer lengths; Fig. 4).

    Parameters
    ----------
    values : array-like of float
        The sample.
    confidence : float, default 0.95
        Coverage of the two-sided t interval.

    Returns
    -------
    (mean, sd, ci_low, ci_high) : tuple of float
        With one value the SD is NaN; with no spread the interval is the mean itself.
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
    """Percentile bootstrap intervals of the mean of many samples at once (VizWiz-LF Table 4, the scorecard's
    paired differences): for each sample exactly what ``scipy.stats.bootstrap((sample,), np.mean,
    method="percentile", random_state=np.random.default_rng(seed))`` returns, bit for bit.

    scipy draws one index matrix ``default_rng(seed).integers(0, n, (n_resamples, n))`` per sample, so every
    sample of the same size ``n`` gets the same matrix: here it is drawn once per size, and the intervals of
    all samples are ``scipy.stats.quantile`` along the last axis of one (samples, resamples) array of means.

    Parameters
    ----------
    samples : list of numpy.ndarray
        One-dimensional float samples, each with at least two values.
    n_resamples : int, default 1000
        Bootstrap resamples.
    confidence : float, default 0.95
        Coverage of the two-sided interval.
    seed : int, default 0
        Seed of each sample's generator.

    Returns
    -------
    numpy.ndarray of shape (len(samples), 2)
        Lower and upper bound per sample.
    """
    out = np.full((len(samples), 2), np.nan)
    alpha = np.asarray((1 - confidence) / 2)
    interval = np.stack((alpha, 1 - alpha), axis=-1)  # as scipy forms it
    by_size: dict[int, list[int]] = {}
    for i, sample in enumerate(samples):
        by_size.setdefault(len(sample), []).append(i)
    for n, members in by_size.items():
        index = np.random.default_rng(seed).integers(0, n, (n_resamples, n), dtype=np.int64)
        # each sample's (resamples, n) draws averaged along the last axis, as scipy does: the same bits (a 3-D
        # mean over all samples at once adds in another order)
        means = np.stack([np.asarray(samples[i], dtype=float)[index].mean(axis=-1) for i in members])
        out[members] = scistats.quantile(means, interval, axis=-1)
    return out
