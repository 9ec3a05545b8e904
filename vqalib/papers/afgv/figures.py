"""AFGV figure (notebook 06): :func:`tier_distribution`, FK grade by tier (AFGV Table 2).

Its value axis is cut by :func:`~vqalib.core.plots.axes.clipped` so that one absurd grade does not
squash the boxes.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from vqalib.core.plots.axes import Clip, clipped
from vqalib.core.plots.style import PALETTE, use_style


def tier_distribution(frame: pd.DataFrame, *, value: str, by: str, title: str, ylabel: str,
                      clip: bool | Clip = True) -> plt.Figure:
    """Box plots of ``value`` per AFGV tier, one panel per ``by`` group (FK grade by tier, AFGV Table 2).

    With ``clip`` true, the shared value axis stops at :func:`clipped`'s limits over all boxes
    (``clipped(frame[value], groups=[frame[by], frame["tier"]])``), so one absurd value (a CommVQA
    question "ghhhh…" has grade 197) does not squash the boxes; pass that :class:`Clip` itself to
    quote the same numbers in the alt text, or ``False`` for the full range. The boxes and means
    still use every value. Each box with values off the axis says how many, and a note under the
    figure gives :meth:`Clip.note`.

    Parameters
    ----------
    frame : pandas.DataFrame
        One row per question and tier: columns ``tier``, ``question_id`` and those named by ``by`` and ``value``.
    value : str
        Column on the value axis, e.g. the FK grade.
    by : str
        Column whose groups get one panel each.
    title, ylabel : str
        Figure title and value-axis label.
    clip : bool or Clip, default True
        Cut the value axis at :func:`clipped`'s limits, at the given limits, or not at all.

    Returns
    -------
    matplotlib.figure.Figure
        The figure, not saved (:func:`vqalib.core.figure_files.save_figure` saves it).
    """
    use_style()
    tiers = ["simplified", "baseline", "complex"]
    groups = list(dict.fromkeys(frame[by]))
    if isinstance(clip, Clip):
        limits = clip
    else:
        limits = clipped(frame[value], groups=[frame[by], frame["tier"]]) if clip else None
    fig, axes = plt.subplots(1, len(groups), figsize=(4.5 * len(groups), 4.2 + 0.3 * bool(limits and limits.n_clipped)),
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
