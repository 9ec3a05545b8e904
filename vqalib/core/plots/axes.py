"""Robust axes: limits that one extreme value cannot squash (:func:`clipped`), and a note saying what was cut."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

FAR_OUT = 3.0  # clipped(): Tukey's "far out" fence, Q3 + 3 IQR (box-plot whiskers stop at 1.5 IQR)
AXIS_PAD = 0.05  # clipped(): share of the kept range added on each side


class Clip(NamedTuple):
    """Axis limits that leave out far outliers, and what they leave out (see :func:`clipped`)."""

    low: float
    high: float
    n_below: int
    n_above: int
    smallest: float  # the smallest value of all (below ``low`` when n_below > 0)
    largest: float  # the largest value of all (above ``high`` when n_above > 0)

    @property
    def n_clipped(self) -> int:
        return self.n_below + self.n_above

    def note(self, decimals: int = 1) -> str:
        """What the limits leave out, e.g. ``"5 values above 21.7 not shown (largest 197.2)"``; ``""`` if nothing.

        Parameters
        ----------
        decimals : int, default 1
            Decimals of the limits and extremes printed.
        """
        parts = []
        if self.n_above:
            parts.append(f"{self.n_above} value{'s' * (self.n_above != 1)} above {self.high:.{decimals}f} not shown "
                         f"(largest {self.largest:.{decimals}f})")
        if self.n_below:
            parts.append(f"{self.n_below} value{'s' * (self.n_below != 1)} below {self.low:.{decimals}f} not shown "
                         f"(smallest {self.smallest:.{decimals}f})")
        return "; ".join(parts)


def clipped(values, *, groups=None, k: float = FAR_OUT, pad: float = AXIS_PAD) -> Clip:
    """Robust axis limits for box plots of ``values``: the lowest to highest Tukey fence (Q1 - k IQR, Q3 + k IQR), and
    the counts left out below and above. With ``k = 3`` only values "far out" of all boxes are left out; a box with IQR
    0 keeps its range.

    Parameters
    ----------
    values : array-like of float
        All values of all boxes; missing values are dropped.
    groups : optional
        One key per box, as :meth:`pandas.Series.groupby` takes (``None``: one box).
    k : float, default :data:`FAR_OUT`
        Fence distance in IQRs.
    pad : float, default :data:`AXIS_PAD`
        Share of the kept range added on each side.
    """
    values = pd.Series(values, dtype=float).dropna()
    if values.empty:
        raise ValueError("clipped: no values")
    grouped = values.groupby(groups if groups is not None else np.zeros(len(values)), observed=True, sort=False)
    q1, q3 = grouped.quantile(0.25), grouped.quantile(0.75)
    spread = (q3 - q1) > 0  # a box without spread gives no scale for "far out": all its values stay
    lower = max(float((q1 - k * (q3 - q1)).where(spread, grouped.min()).min()), float(values.min()))
    upper = min(float((q3 + k * (q3 - q1)).where(spread, grouped.max()).max()), float(values.max()))
    margin = pad * (upper - lower) if upper > lower else 0.5
    low, high = lower - margin, upper + margin
    return Clip(low=low, high=high, n_below=int((values < low).sum()), n_above=int((values > high).sum()),
                smallest=float(values.min()), largest=float(values.max()))
