"""Figures of the compendium, as matplotlib Figures (saved by :mod:`vqalib.report`).

Each function takes a tidy table from the analysis modules and returns a Figure; none
reads or writes files.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from vqalib.report import PALETTE, SEQUENTIAL_CMAP, use_style


def stacked_shares(distribution: pd.DataFrame, *, title: str, label_order: list[str]) -> plt.Figure:
    """Horizontal stacked bars: share of each label per source (role mix, Tables 15–16)."""
    use_style()
    wide = distribution.pivot(index="source", columns="label", values="percent")
    wide = wide.reindex(index=list(dict.fromkeys(distribution["source"]))[::-1], columns=label_order)
    colors = sns.color_palette(PALETTE, n_colors=len(label_order))
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(wide) + 1.8))
    left = pd.Series(0.0, index=wide.index)
    for color, label in zip(colors, label_order):
        ax.barh(wide.index, wide[label], left=left, color=color, label=label, edgecolor="white", linewidth=0.6)
        for y, (x0, w) in enumerate(zip(left, wide[label])):
            if w >= 6:  # label segments wide enough to hold the number
                ax.text(x0 + w / 2, y, f"{w:.0f}", ha="center", va="center", fontsize=8,
                        color="white" if sum(color[:3]) < 1.6 else "black")
        left = left + wide[label]
    ax.set_xlim(0, 100)
    ax.set_xlabel("share of annotations (%)")
    ax.set_ylabel("")
    ax.set_title(title)
    ax.legend(ncol=4, bbox_to_anchor=(0.5, -0.18), loc="upper center", frameon=False, fontsize=9)
    fig.tight_layout()
    return fig


def heatmap(matrix: pd.DataFrame, *, title: str, xlabel: str, ylabel: str, fmt: str = "d") -> plt.Figure:
    """Annotated heatmap of a count matrix (role x information source, Fig. 5)."""
    use_style()
    fig, ax = plt.subplots(figsize=(1.6 * matrix.shape[1] + 3, 0.5 * matrix.shape[0] + 1.5))
    sns.heatmap(matrix, annot=True, fmt=fmt, cmap=SEQUENTIAL_CMAP, linewidths=0.5, ax=ax,
                cbar_kws={"label": "sentences"})
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    fig.tight_layout()
    return fig


def paper_agreement(comparison: pd.DataFrame, *, title: str, unit: str, tolerance: float,
                    hue: str | None = None) -> plt.Figure:
    """Reproduced against reported values, one point per cell, with the tolerance band."""
    use_style()
    data = comparison.dropna(subset=["reproduced", "paper"]).copy()
    data["within tolerance"] = data["within_tolerance"].map({True: "yes", False: "no"})
    lo = float(min(data["reproduced"].min(), data["paper"].min()))
    hi = float(max(data["reproduced"].max(), data["paper"].max()))
    fig, ax = plt.subplots(figsize=(6, 5.5))
    ax.fill_between([lo, hi], [lo - tolerance, hi - tolerance], [lo + tolerance, hi + tolerance],
                    color="0.85", label=f"±{tolerance:g} (tolerance)")
    ax.plot([lo, hi], [lo, hi], color="0.4", linewidth=0.8)
    sns.scatterplot(data=data, x="paper", y="reproduced", hue=hue, style="within tolerance",
                    style_order=["yes", "no"], markers={"yes": "o", "no": "X"}, s=45, ax=ax, palette=PALETTE)
    ax.set_xlabel(f"reported in the paper ({unit})")
    ax.set_ylabel(f"reproduced here ({unit})")
    ax.set_title(title)
    ax.legend(fontsize=8, loc="upper left", frameon=True)
    fig.tight_layout()
    return fig
