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


# --- CommVQA (notebook 07) -------------------------------------------------------------

def protocol_comparison(steps: pd.DataFrame, *, metrics: list[str], title: str) -> plt.Figure:
    """CommVQA Table 1 under the authors' and the corrected protocol, beside the paper's values.

    ``steps`` has model, condition, metric, authors, corrected_all_rows, ci_low, ci_high and
    paper. One panel per metric; one row per model and condition.
    """
    use_style()
    colors = sns.color_palette(PALETTE, n_colors=3)
    rows = list(dict.fromkeys(zip(steps["model"], steps["condition"])))
    labels = [f"{m} ({c})" for m, c in rows]
    fig, axes = plt.subplots(1, len(metrics), figsize=(3.1 * len(metrics), 0.55 * len(rows) + 1.9), sharey=True,
                             squeeze=False)
    for ax, metric in zip(axes[0], metrics):
        part = steps[steps["metric"] == metric].set_index(["model", "condition"]).reindex(rows)
        y = list(range(len(rows)))
        ax.errorbar(part["corrected_all_rows"], [v - 0.15 for v in y],
                    xerr=[part["corrected_all_rows"] - part["ci_low"], part["ci_high"] - part["corrected_all_rows"]],
                    fmt="s", color=colors[0], capsize=3, label="corrected: all rows, 95% CI")
        ax.plot(part["authors"], [v + 0.15 for v in y], "o", color=colors[1], label="authors' protocol")
        ax.plot(part["paper"], [v + 0.15 for v in y], "x", color="black", markersize=8, label="paper (Table 1)")
        ax.set_title(metric)
        ax.set_yticks(y, labels)
        ax.set_xlabel("score")
    axes[0][0].invert_yaxis()  # shared y: first row on top, as in the paper's table
    axes[0][-1].legend(fontsize=8, bbox_to_anchor=(1.02, 1), loc="upper left", frameon=False)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def accuracy_heatmap(matrix: pd.DataFrame, *, title: str, label: str = "cross-validated accuracy") -> plt.Figure:
    """Annotated heatmap of pairwise accuracies (CommVQA Figure 2); the diagonal stays empty."""
    use_style()
    fig, ax = plt.subplots(figsize=(1.2 * matrix.shape[1] + 2.5, 0.8 * matrix.shape[0] + 1.5))
    sns.heatmap(matrix, annot=True, fmt=".2f", cmap=SEQUENTIAL_CMAP, vmin=0.5, vmax=1.0, linewidths=0.5,
                square=True, ax=ax, cbar_kws={"label": label})
    ax.grid(False)  # the whitegrid style would draw lines across the empty diagonal
    ax.set_title(title)
    fig.tight_layout()
    return fig


def rates_by_context(frame: pd.DataFrame, *, value: str, group: str, title: str, xlabel: str,
                     groups: list[str] | None = None, contexts: list[str] | None = None) -> plt.Figure:
    """Grouped horizontal bars with 95% CI error bars (``ci_low``/``ci_high``): one bar per
    context within each group (CommVQA Figures 3 and 5: named entities per answer by context)."""
    use_style()
    groups = groups or list(dict.fromkeys(frame[group]))
    contexts = contexts or list(dict.fromkeys(frame["context"]))
    colors = sns.color_palette(PALETTE, n_colors=len(contexts))
    height = 0.8 / len(contexts)
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(groups) * len(contexts) * 0.35 + 1.8))
    for k, (context, color) in enumerate(zip(contexts, colors)):
        part = frame[frame["context"] == context].set_index(group).reindex(groups)
        y = [i + (k - (len(contexts) - 1) / 2) * height for i in range(len(groups))]
        ax.barh(y, part[value], height=height, color=color, label=context,
                xerr=[part[value] - part["ci_low"], part["ci_high"] - part[value]],
                error_kw={"elinewidth": 0.8, "capsize": 2})
    ax.set_yticks(range(len(groups)), groups)
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    ax.legend(title="context", fontsize=8, bbox_to_anchor=(1.02, 1), loc="upper left", frameon=False)
    fig.tight_layout()
    return fig


def description_similarity_bars(summary: pd.DataFrame, tests: pd.DataFrame, *, title: str) -> plt.Figure:
    """Mean answer-description cosine similarity per source and condition with 95% CIs and the
    baseline-vs-contextual significance marks (CommVQA Figure 4)."""
    use_style()
    conditions = ["human", "baseline", "contextual"]
    colors = dict(zip(conditions, sns.color_palette(PALETTE, n_colors=3)))
    sources = list(dict.fromkeys(summary["source"]))
    fig, ax = plt.subplots(figsize=(1.8 * len(sources) + 2.5, 4.2))
    x = 0.0
    ticks = []
    for source in sources:
        part = summary[summary["source"] == source].set_index("condition")
        present = [c for c in conditions if c in part.index]
        xs = [x + 0.4 * k for k in range(len(present))]
        for xi, c in zip(xs, present):
            r = part.loc[c]
            shown = ax.get_legend_handles_labels()[1]
            ax.bar(xi, r["mean"], width=0.38, color=colors[c], label=None if c in shown else c,
                   yerr=[[r["mean"] - r["ci_low"]], [r["ci_high"] - r["mean"]]], capsize=3)
        test = tests[tests["source"] == source]
        if len(present) == 2 and not test.empty:
            top = float(part["ci_high"].max()) + 0.02
            ax.plot(xs, [top, top], color="0.3", linewidth=0.8)
            ax.text(sum(xs) / 2, top + 0.005, test["stars"].iloc[0], ha="center", va="bottom", fontsize=10)
        ticks.append((sum(xs) / len(xs), source))
        x = xs[-1] + 0.8
    ax.set_xticks([t for t, _ in ticks], [s for _, s in ticks])
    ax.set_ylabel("cosine similarity to the description")
    ax.set_title(title)
    ax.legend(title="answers", fontsize=8, frameon=False)
    fig.tight_layout()
    return fig
