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


def tier_distribution(frame: pd.DataFrame, *, value: str, by: str, title: str, ylabel: str) -> plt.Figure:
    """Box plots of ``value`` per AFGV tier, one panel per ``by`` group (FK grade by tier)."""
    use_style()
    groups = list(dict.fromkeys(frame[by]))
    fig, axes = plt.subplots(1, len(groups), figsize=(4.5 * len(groups), 4.2), sharey=True, squeeze=False)
    for ax, group in zip(axes[0], groups):
        part = frame[frame[by] == group]
        sns.boxplot(data=part, x="tier", y=value, hue="tier", ax=ax, palette=PALETTE, legend=False,
                    order=["simplified", "baseline", "complex"], showmeans=True,
                    meanprops={"marker": "D", "markerfacecolor": "white", "markeredgecolor": "black"})
        ax.set_title(f"{group} (n = {part['question_id'].nunique()})")
        ax.set_xlabel("tier")
        ax.set_ylabel(ylabel)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def human_eval_bars(means: pd.DataFrame, marks: pd.DataFrame, *, title: str, watermark: str | None = None) -> plt.Figure:
    """Normalised rankings and ratings per answer source, groups x criteria, with 95% CIs and
    Bonferroni-corrected significance stars (VizWiz-LF Fig. 2, §6).

    ``means`` comes from ``stats.source_means`` (one bar per row), ``marks`` from
    ``stats.significance_marks`` (a bracket with stars for each row whose ``shown`` is
    true). Rows of panels are groups, columns criteria; ``watermark`` (e.g. ``SIMULATED``)
    is written across the figure.
    """
    use_style()
    groups = list(dict.fromkeys(means["group"]))
    criteria = list(dict.fromkeys(means["criterion"]))
    sources = list(dict.fromkeys(means["source"]))
    colors = dict(zip(sources, sns.color_palette(PALETTE, n_colors=len(sources))))
    fig, axes = plt.subplots(len(groups), len(criteria), figsize=(2.5 * len(criteria) + 1.2, 2.3 * len(groups) + 1.2),
                             sharey=True, squeeze=False)
    for i, group in enumerate(groups):
        for j, criterion in enumerate(criteria):
            ax = axes[i][j]
            part = means[(means["group"] == group) & (means["criterion"] == criterion)].set_index("source")
            part = part.reindex(sources)
            x = list(range(len(sources)))
            ax.bar(x, part["mean"], color=[colors[s] for s in sources], edgecolor="0.2", linewidth=0.5, width=0.7)
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
            ax.set_ylim(0, 1.5)
            ax.set_yticks([0, 0.25, 0.5, 0.75, 1.0])
            ax.set_xticks(x, sources if i == len(groups) - 1 else [""] * len(sources), rotation=30, fontsize=8)
            label = part["criterion_label"].dropna().iloc[0]
            top_label = means.loc[means["criterion"] == criterion, "criterion_label"].iloc[0]
            if i == 0 or label != top_label:  # the S+I row rates Correctness in the Plausibility column
                ax.set_title(label, fontsize=10)
            if j == 0:
                ax.set_ylabel(f"{group}: {part['group_name'].dropna().iloc[0]}\nmean score (0-1)", fontsize=8)
    if watermark:
        fig.text(0.5, 0.5, watermark, fontsize=72, color="0.5", alpha=0.18, ha="center", va="center",
                 rotation=30, zorder=0)
    handles = [plt.Rectangle((0, 0), 1, 1, color=colors[s]) for s in sources]
    fig.legend(handles, sources, ncol=len(sources), loc="lower center", frameon=False, bbox_to_anchor=(0.5, -0.01))
    fig.suptitle(title, fontsize=11)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    return fig
