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


def reference_shift(summary: pd.DataFrame, *, metrics: list[str], metric_names: dict[str, str],
                    title: str) -> plt.Figure:
    """Mean score with short (s_r) vs long (l_r) references, per source and metric (Table 4, §5).

    One panel per metric; for each source a line from its s_r score to its l_r score, for
    the whole answer (l_c, solid) and its Answer sentences (l'_c, dashed), with 95% CIs.
    """
    use_style()
    data = summary[summary["metric"].isin(metrics) & summary["reference_kind"].isin(["s_r", "l_r"])]
    sources = [s for s in dict.fromkeys(data["source"]) if (data["source"].eq(s) & data["reference_kind"].eq("l_r")).any()]
    colors = dict(zip(sources, sns.color_palette(PALETTE, n_colors=len(sources))))
    fig, axes = plt.subplots(1, len(metrics), figsize=(4.2 * len(metrics), 4.6), sharey=False, squeeze=False)
    for ax, metric in zip(axes[0], metrics):
        for source in sources:
            for cand, style, marker in (("l_c", "-", "o"), ("l_c_prime", "--", "s")):
                part = data[(data["metric"] == metric) & (data["source"] == source) & (data["candidate_kind"] == cand)]
                part = part.set_index("reference_kind").reindex(["s_r", "l_r"])
                x = [0, 1]
                ax.errorbar(x, part["mean"], yerr=[part["mean"] - part["ci_low"], part["ci_high"] - part["mean"]],
                            color=colors[source], linestyle=style, marker=marker, capsize=3, linewidth=1.4,
                            label=f"{source}, {'l_c' if cand == 'l_c' else 'l′_c'}")
        ax.set_xticks([0, 1], ["short reference s_r", "long reference l_r"])
        ax.set_xlim(-0.3, 1.3)
        ax.set_title(metric_names.get(metric, metric))
        ax.set_ylabel("mean score (95% CI)")
    axes[0][-1].legend(fontsize=8, bbox_to_anchor=(1.02, 1), loc="upper left", frameon=False)
    fig.suptitle(title)
    fig.tight_layout()
    return fig
