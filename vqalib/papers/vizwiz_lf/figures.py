"""VizWiz-LF figures (notebooks 02-05): role mixes (Tables 15-16, Fig. 3), Fig. 5's heatmap, paper agreement
(Tables 2-3), the reference shift (Table 4, §5) and the human-evaluation bars (Fig. 2, §6); none is saved here."""

from __future__ import annotations

import math
import textwrap

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
from matplotlib.patches import Rectangle

from vqalib.core.plots.contrast import text_colour_on
from vqalib.core.plots.style import (BANNER_FACE, BAR_LEGEND, DISPLAY_WIDTH_IN, MARKERS, SEQUENTIAL_CMAP, _bar_legend_handles,
                                     _bar_style, _label_cells, colours, use_style)


def stacked_shares(distribution: pd.DataFrame, *, title: str, label_order: list[str]) -> plt.Figure:
    """Horizontal stacked bars of each label's share per source (Tables 15-16; Fig. 3), wide segments labelled in %.

    Parameters
    ----------
    distribution : pandas.DataFrame
        ``source``, ``label`` and ``percent``; sources drawn top-down in order of appearance.
    title : str
    label_order : list of str
        Labels in stacking and legend order (at most eight).
    """
    use_style()
    wide = distribution.pivot(index="source", columns="label", values="percent")
    wide = wide.reindex(index=list(dict.fromkeys(distribution["source"]))[::-1], columns=label_order).fillna(0.0)
    faces = colours(len(label_order))
    height = 0.45 * len(wide) + 2.4
    fig, ax = plt.subplots(figsize=(DISPLAY_WIDTH_IN, height))
    left = pd.Series(0.0, index=wide.index)
    for k, (face, label) in enumerate(zip(faces, label_order)):
        ax.barh(wide.index, wide[label], left=left, label=label,
                **{**_bar_style(k, face), "edgecolor": "white", "linewidth": 0.6})  # white seams between segments
        for y, (x0, w) in enumerate(zip(left, wide[label])):
            if w >= 6:  # label segments wide enough to hold the number
                ax.text(x0 + w / 2, y, f"{w:.0f}", ha="center", va="center", fontsize=9, color=text_colour_on(face),
                        bbox={"boxstyle": "round,pad=0.2", "facecolor": face, "edgecolor": "none"})
        left = left + wide[label]
    ax.set_xlim(0, 100)
    ax.set_xlabel("share of annotations (%)")
    ax.set_ylabel("")
    ax.set_title(title)
    legend_rows = math.ceil(len(label_order) / 3)
    fig.legend(handles=_bar_legend_handles(label_order, faces), ncol=3, loc="lower center", bbox_to_anchor=(0.5, 0.01),
               frameon=False, fontsize=9, **BAR_LEGEND)
    fig.tight_layout(rect=(0, (0.05 + 0.25 * legend_rows) / height, 1, 1))  # room for the legend below the axes
    return fig


def heatmap(matrix: pd.DataFrame, *, title: str, xlabel: str, ylabel: str, fmt: str = "d") -> plt.Figure:
    """Annotated heatmap of a count matrix (role x information source, VizWiz-LF Fig. 5).

    Parameters
    ----------
    matrix : pandas.DataFrame
        Counts, rows and columns as labelled on the axes.
    title, xlabel, ylabel : str
    fmt : str, default "d"
    """
    use_style()
    fig, ax = plt.subplots(figsize=(min(DISPLAY_WIDTH_IN - 0.4, 1.6 * matrix.shape[1] + 3), 0.5 * matrix.shape[0] + 1.5))
    sns.heatmap(matrix, annot=True, fmt=fmt, cmap=SEQUENTIAL_CMAP, linewidths=0.5, ax=ax,
                cbar_kws={"label": "sentences"})
    _label_cells(ax)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    fig.tight_layout()
    return fig


def paper_agreement(comparison: pd.DataFrame, *, title: str, unit: str, tolerance: float,
                    hue: str | None = None) -> plt.Figure:
    """Reproduced against reported values, one point per cell, with the tolerance band (Tables 2-3).

    Parameters
    ----------
    comparison : pandas.DataFrame
        ``reproduced``, ``paper`` and ``within_tolerance``; rows missing a value are left out.
    title, unit : str
    tolerance : float
        Half-width of the shaded band around the diagonal.
    hue : str, optional
        Column whose levels get their own colour and marker.
    """
    use_style()
    data = comparison.dropna(subset=["reproduced", "paper"])
    levels = list(dict.fromkeys(data[hue])) if hue else [None]
    lo = float(min(data["reproduced"].min(), data["paper"].min()))
    hi = float(max(data["reproduced"].max(), data["paper"].max()))
    fig, ax = plt.subplots(figsize=(6, 5.5))
    ax.fill_between([lo, hi], [lo - tolerance, hi - tolerance], [lo + tolerance, hi + tolerance],
                    color="0.85", label=f"±{tolerance:g} (tolerance)")
    ax.plot([lo, hi], [lo, hi], color="0.4", linewidth=0.8)
    for k, (level, face) in enumerate(zip(levels, colours(len(levels)))):
        part = data if level is None else data[data[hue] == level]
        ax.scatter(part["paper"], part["reproduced"], marker=MARKERS[k], s=40, color=face, edgecolor="white",
                   linewidth=0.5, zorder=3, label="cell" if level is None else str(level))
    outside = data[data["within_tolerance"].eq(False)]
    if len(outside):
        ax.scatter(outside["paper"], outside["reproduced"], marker="o", s=220, facecolor="none", edgecolor="black",
                   linewidth=1.3, zorder=4, label="outside tolerance")
    if len(outside) <= 5:  # direct labels while they fit
        for row in outside.itertuples():
            prefix = f"{getattr(row, hue)}: " if hue else ""
            ax.annotate(f"{prefix}{row.paper:g} reported, {row.reproduced:.3g} here", (row.paper, row.reproduced),
                        xytext=(12, 0), textcoords="offset points", va="center", fontsize=9, zorder=5,
                        bbox={"boxstyle": "round,pad=0.2", "facecolor": "white", "edgecolor": "0.6", "linewidth": 0.5})
    ax.set_xlabel(f"reported in the paper ({unit})")
    ax.set_ylabel(f"reproduced here ({unit})")
    ax.set_title(title)
    ax.legend(fontsize=9, loc="upper left", frameon=True)
    fig.tight_layout()
    return fig


def reference_shift(summary: pd.DataFrame, *, metrics: list[str], metric_names: dict[str, str],
                    title: str) -> plt.Figure:
    """Mean score with short (s_r) vs long (l_r) references, per source and metric, with 95% CIs (Table 4, §5).

    Parameters
    ----------
    summary : pandas.DataFrame
        ``metric``, ``source``, ``candidate_kind``, ``reference_kind``, ``mean``, ``ci_low``, ``ci_high``.
    metrics : list of str
        One panel per metric, in this order.
    metric_names : dict of str to str
    title : str
    """
    use_style()
    data = summary[summary["metric"].isin(metrics) & summary["reference_kind"].isin(["s_r", "l_r"])]
    sources = [s for s in dict.fromkeys(data["source"]) if (data["source"].eq(s) & data["reference_kind"].eq("l_r")).any()]
    faces = dict(zip(sources, colours(len(sources))))
    fig, axes = plt.subplots(1, len(metrics), figsize=(DISPLAY_WIDTH_IN - 0.2, 4.6), sharey=False, squeeze=False,
                             layout="constrained")
    for ax, metric in zip(axes[0], metrics):
        for k, source in enumerate(sources):
            nudge = 0.04 * (k - (len(sources) - 1) / 2)
            for cand, style in (("l_c", "-"), ("l_c_prime", "--")):
                part = data[(data["metric"] == metric) & (data["source"] == source) & (data["candidate_kind"] == cand)]
                part = part.set_index("reference_kind").reindex(["s_r", "l_r"])
                ax.errorbar([nudge, 1 + nudge], part["mean"],
                            yerr=[part["mean"] - part["ci_low"], part["ci_high"] - part["mean"]],
                            color=faces[source], linestyle=style, marker=MARKERS[k], markersize=6,
                            markerfacecolor=faces[source] if cand == "l_c" else "white", markeredgewidth=1.2,
                            capsize=3, linewidth=1.4, label=f"{source}, {'l_c' if cand == 'l_c' else 'l′_c'}")
        ax.set_xticks([0, 1], ["short\nref. s_r", "long\nref. l_r"])
        ax.set_xlim(-0.3, 1.3)
        ax.set_title(textwrap.fill(metric_names.get(metric, metric), 22))  # a panel is 2.5 in wide
        ax.set_ylabel("mean score (95% CI)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=3, frameon=False)
    fig.suptitle(textwrap.fill(title, 60))
    return fig


def human_eval_bars(means: pd.DataFrame, marks: pd.DataFrame, *, title: str, watermark: str | None = None) -> plt.Figure:
    """Normalised rankings and ratings per source, groups x criteria, with 95% CIs and stars (VizWiz-LF Fig. 2, §6).
    ``watermark`` goes in a banner and inside every panel, so no crop of the figure loses it.

    Parameters
    ----------
    means : pandas.DataFrame
        ``source_means`` output (one bar per row).
    marks : pandas.DataFrame
        ``significance_marks`` output (a bracket for each ``shown`` row).
    title : str
    watermark : str, optional
        Banner and per-panel label text, e.g. ``"SIMULATED"``.
    """
    use_style()
    groups = list(dict.fromkeys(means["group"]))
    criteria = list(dict.fromkeys(means["criterion"]))
    sources = list(dict.fromkeys(means["source"]))
    faces = colours(len(sources))
    height = 2.3 * len(groups) + 1.2 + 0.45 * bool(watermark)
    fig, axes = plt.subplots(len(groups), len(criteria), figsize=(DISPLAY_WIDTH_IN - 0.35, height),
                             sharey=True, squeeze=False)
    for i, group in enumerate(groups):
        for j, criterion in enumerate(criteria):
            ax = axes[i][j]
            part = means[(means["group"] == group) & (means["criterion"] == criterion)].set_index("source")
            part = part.reindex(sources)
            x = list(range(len(sources)))
            for k, face in enumerate(faces):
                ax.bar(x[k], part["mean"].iloc[k], width=0.7, **_bar_style(k, face))
            ax.errorbar(x, part["mean"], yerr=[part["mean"] - part["ci_low"], part["ci_high"] - part["mean"]],
                        fmt="none", ecolor="0.15", elinewidth=1, capsize=3)
            shown = marks[(marks["group"] == group) & (marks["criterion"] == criterion) & marks["shown"]]
            level = 1.04
            spans = sorted((abs(sources.index(r.source_b) - sources.index(r.source_a)),
                            min(sources.index(r.source_a), sources.index(r.source_b)), r) for r in shown.itertuples())
            for _, _, row in spans:  # narrow brackets first, the widest on top
                a, b = sources.index(row.source_a), sources.index(row.source_b)
                ax.plot([a, a, b, b], [level, level + 0.03, level + 0.03, level], color="0.15", linewidth=0.8)
                ax.text((a + b) / 2, level + 0.025, row.stars, ha="center", va="bottom", fontsize=9)
                level += 0.14
            ax.set_ylim(0, 1.62 if watermark else 1.5)  # room for the panel's label above the brackets
            ax.set_yticks([0, 0.25, 0.5, 0.75, 1.0])
            ax.set_xticks(x, sources if i == len(groups) - 1 else [""] * len(sources), rotation=90, fontsize=9)
            label = part["criterion_label"].dropna().iloc[0]
            top_label = means.loc[means["criterion"] == criterion, "criterion_label"].iloc[0]
            if i == 0 or label != top_label:  # the S+I row rates Correctness in the Plausibility column
                ax.set_title(label, fontsize=10)
            if j == 0:
                ax.set_ylabel(f"{group}: {part['group_name'].dropna().iloc[0]}\nmean score (0-1)", fontsize=9)
            if watermark:
                ax.text(0.98, 0.97, watermark, transform=ax.transAxes, ha="right", va="top", fontsize=9,
                        fontweight="bold", color=text_colour_on(BANNER_FACE), zorder=5,
                        bbox={"boxstyle": "square,pad=0.25", "facecolor": BANNER_FACE, "edgecolor": "black",
                              "linewidth": 0.6})
    fig.legend(handles=_bar_legend_handles(sources, faces), ncol=len(sources), loc="lower center", frameon=False,
               bbox_to_anchor=(0.5, -0.01), **BAR_LEGEND)
    top = 1.0
    if watermark:
        band = 0.42 / height  # a 0.42-inch band, whatever the number of rows
        top = 1 - band
        fig.add_artist(Rectangle((0, top), 1, band, transform=fig.transFigure, facecolor=BANNER_FACE,
                                 edgecolor="black", linewidth=1.0))
        fig.text(0.5, 1 - band / 2, f"{watermark} DATA – NOT THE PAPER'S RESULTS", ha="center", va="center",
                 fontsize=14, fontweight="bold", color=text_colour_on(BANNER_FACE))
    fig.suptitle(textwrap.fill(title, 72), fontsize=11, y=top - 0.06 / height, va="top")
    fig.tight_layout(rect=(0, 0.03, 1, top))  # tight_layout keeps the axes below the suptitle
    return fig
