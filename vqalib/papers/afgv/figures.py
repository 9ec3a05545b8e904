"""AFGV figure of notebook 06: FK grade by tier as box plots (AFGV Table 2)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from vqalib.core.plots.axes import Clip, clipped
from vqalib.core.plots.style import DISPLAY_WIDTH_IN, PALETTE, use_style


def tier_distribution(frame: pd.DataFrame, *, value: str, by: str, title: str, ylabel: str,
                      clip: bool | Clip = True) -> plt.Figure:
    """Box plots of ``value`` per AFGV tier, one panel per ``by`` group (FK grade by tier, AFGV Table 2); not saved.

    The axis is clipped so one absurd value (a CommVQA grade of 197) cannot squash the boxes; each box counts its
    values off the axis.

    Parameters
    ----------
    frame : pandas.DataFrame
        One row per question and tier: ``tier``, ``question_id``, ``by`` and ``value`` columns.
    value : str
        Column on the value axis, e.g. the FK grade.
    by : str
        Column whose groups get one panel each.
    title, ylabel : str
    clip : bool or Clip, default True
        Cut the value axis at :func:`clipped`'s limits, at the given limits, or not at all.
    """
    use_style()
    tiers = ["simplified", "baseline", "complex"]
    groups = list(dict.fromkeys(frame[by]))
    if isinstance(clip, Clip):
        limits = clip
    else:
        limits = clipped(frame[value], groups=[frame[by], frame["tier"]]) if clip else None
    width = DISPLAY_WIDTH_IN * min(1.0, 0.48 * len(groups))
    fig, axes = plt.subplots(1, len(groups), figsize=(width, 4.2 + 0.3 * bool(limits and limits.n_clipped)),
                             sharey=True, squeeze=False)
    for ax, group in zip(axes[0], groups):
        part = frame[frame[by] == group]
        sns.boxplot(data=part, x="tier", y=value, hue="tier", ax=ax, palette=PALETTE[:len(tiers)], legend=False,
                    order=tiers, hue_order=tiers, showmeans=True,
                    meanprops={"marker": "D", "markerfacecolor": "white", "markeredgecolor": "black"})
        ax.set_title(f"{group} (n = {part['question_id'].nunique()})")
        ax.set_xlabel("tier")
        ax.set_ylabel(ylabel)
        if limits is not None:  # under each box, how many of its values are off the axis (not over its fliers)
            labels = []
            for tier in tiers:
                values = part.loc[part["tier"] == tier, value]
                off = [f"{arrow} {n} off scale" for n, arrow in ((int((values > limits.high).sum()), "↑"),
                                                                  (int((values < limits.low).sum()), "↓")) if n]
                labels.append("\n".join([tier, *off]))
            ax.set_xticks(range(len(tiers)), labels)
    if limits is not None:
        axes[0][0].set_ylim(limits.low, limits.high)
    fig.suptitle(title)
    if limits is not None and limits.n_clipped:
        fig.text(0.01, 0.01, f"Axis cut to keep the boxes readable: {limits.note()}.", ha="left", va="bottom",
                 fontsize=9, color="0.15")
        fig.tight_layout(rect=(0, 0.05, 1, 1))
    else:
        fig.tight_layout()
    return fig
