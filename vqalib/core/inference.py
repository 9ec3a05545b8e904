"""Statistical helpers the three papers' analyses share: the t interval of a mean and significance
marks, written once here so that every paper's analysis computes them the same way.

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
