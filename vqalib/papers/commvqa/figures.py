"""CommVQA figures: Figures 2-5 (notebook 07) and Table 1 under the two protocols (notebook 08)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from vqalib.core.plots.style import (BAR_LEGEND, DISPLAY_WIDTH_IN, SEQUENTIAL_CMAP, _bar_legend_handles, _bar_style, _label_cells,
                                     colours, use_style)


def protocol_comparison(steps: pd.DataFrame, *, metrics: list[str], title: str) -> plt.Figure:
    """CommVQA Table 1 under the authors' and the corrected protocol, beside the paper's values (not saved).

    Parameters
    ----------
    steps : pandas.DataFrame
        :func:`~vqalib.papers.commvqa.table1.protocol_steps` output with ``paper``.
    metrics : list of str
        One panel per metric, in this order.
    title : str
    """
    use_style()
    faces = colours(2)
    rows = list(dict.fromkeys(zip(steps["model"], steps["condition"])))
    labels = [f"{m} ({c})" for m, c in rows]
    ncols = min(2, len(metrics))  # two panels a row, so the figure fits the display width
    nrows = -(-len(metrics) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(DISPLAY_WIDTH_IN - 0.2, nrows * (0.4 * len(rows) + 1.1) + 1.3),
                             sharey=True, squeeze=False, layout="constrained")
    for ax in axes.flat[len(metrics):]:
        ax.set_visible(False)
    for ax, metric in zip(axes.flat, metrics):
        part = steps[steps["metric"] == metric].set_index(["model", "condition"]).reindex(rows)
        y = list(range(len(rows)))
        ax.errorbar(part["corrected_all_rows"], [v - 0.15 for v in y],
                    xerr=[part["corrected_all_rows"] - part["ci_low"], part["ci_high"] - part["corrected_all_rows"]],
                    fmt="s", color=faces[0], capsize=3, label="corrected: all rows, 95% CI")
        ax.plot(part["authors"], [v + 0.15 for v in y], "o", color=faces[1], label="authors' protocol")
        ax.plot(part["paper"], [v + 0.15 for v in y], "x", color="black", markersize=8, label="paper (Table 1)")
        ax.set_title(metric)
        ax.set_yticks(y, labels)
        ax.set_xlabel("score")
    # shared y, first row on top as in the paper's table; half a row of room so no marker is cut at the edge
    axes[0][0].set_ylim(len(rows) - 0.4, -0.6)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=2, frameon=False)
    fig.suptitle(title)
    return fig


def accuracy_heatmap(matrix: pd.DataFrame, *, title: str, label: str = "cross-validated accuracy") -> plt.Figure:
    """Annotated heatmap of pairwise accuracies, diagonal empty (CommVQA Figure 2; not saved).

    Parameters
    ----------
    matrix : pandas.DataFrame
        Square matrix of accuracies between 0.5 and 1.
    title : str
    label : str, default "cross-validated accuracy"
        Colour-bar label.
    """
    use_style()
    fig, ax = plt.subplots(figsize=(1.2 * matrix.shape[1] + 2.5, 0.8 * matrix.shape[0] + 1.5))
    sns.heatmap(matrix, annot=True, fmt=".2f", cmap=SEQUENTIAL_CMAP, vmin=0.5, vmax=1.0, linewidths=0.5,
                square=True, ax=ax, cbar_kws={"label": label})
    _label_cells(ax)
    ax.grid(False)  # the whitegrid style would draw lines across the empty diagonal
    ax.set_title(title)
    fig.tight_layout()
    return fig


def rates_by_context(frame: pd.DataFrame, *, value: str, group: str, title: str, xlabel: str,
                     groups: list[str] | None = None, contexts: list[str] | None = None) -> plt.Figure:
    """Grouped horizontal bars with 95% CIs, one bar per context in each group (CommVQA Figures 3 and 5; not saved).

    Parameters
    ----------
    frame : pandas.DataFrame
        Columns ``context``, ``ci_low``, ``ci_high``, ``group`` and ``value``.
    value, group : str
        Column of the bar lengths, and of the groups on the vertical axis.
    title, xlabel : str
    groups, contexts : list of str, optional
        Order of the groups and contexts (default: order of appearance).
    """
    use_style()
    groups = groups or list(dict.fromkeys(frame[group]))
    contexts = contexts or list(dict.fromkeys(frame["context"]))
    faces = colours(len(contexts))
    height = 0.8 / len(contexts)
    fig, ax = plt.subplots(figsize=(DISPLAY_WIDTH_IN - 0.3, 0.45 * len(groups) * len(contexts) * 0.35 + 1.8))
    for k, (context, face) in enumerate(zip(contexts, faces)):
        part = frame[frame["context"] == context].set_index(group).reindex(groups)
        y = [i + (k - (len(contexts) - 1) / 2) * height for i in range(len(groups))]
        ax.barh(y, part[value], height=height, label=context, **_bar_style(k, face),
                xerr=[part[value] - part["ci_low"], part["ci_high"] - part[value]],
                error_kw={"elinewidth": 0.8, "capsize": 2})
    ax.set_yticks(range(len(groups)), groups)
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    ax.legend(handles=_bar_legend_handles(contexts, faces), title="context", fontsize=9, bbox_to_anchor=(1.02, 1),
              loc="upper left", frameon=False, **BAR_LEGEND)
    fig.tight_layout()
    return fig


def description_similarity_bars(summary: pd.DataFrame, tests: pd.DataFrame, *, title: str) -> plt.Figure:
    """Mean answer-description similarity per source and condition, CIs and significance marks (Figure 4; not saved).

    Parameters
    ----------
    summary : pandas.DataFrame
        :func:`~vqalib.papers.commvqa.context.similarity_summary` output.
    tests : pandas.DataFrame
        Columns ``source`` and ``stars``.
    title : str
    """
    use_style()
    conditions = ["human", "baseline", "contextual"]
    faces = dict(zip(conditions, colours(len(conditions))))
    sources = list(dict.fromkeys(summary["source"]))
    fig, ax = plt.subplots(figsize=(DISPLAY_WIDTH_IN - 0.2, 4.4))
    x = 0.0
    ticks, centres = [], []
    for source in sources:
        part = summary[summary["source"] == source].set_index("condition")
        present = [c for c in conditions if c in part.index]
        xs = [x + 0.4 * k for k in range(len(present))]
        for xi, c in zip(xs, present):
            r = part.loc[c]
            ax.bar(xi, r["mean"], width=0.38, yerr=[[r["mean"] - r["ci_low"]], [r["ci_high"] - r["mean"]]],
                   capsize=3, **_bar_style(conditions.index(c), faces[c]))
            ticks.append(xi)
        test = tests[tests["source"] == source]
        if len(present) == 2 and not test.empty:
            top = float(part["ci_high"].max()) + 0.02
            ax.plot(xs, [top, top], color="0.3", linewidth=0.8)
            ax.text(sum(xs) / 2, top + 0.005, test["stars"].iloc[0], ha="center", va="bottom", fontsize=10)
        centres.append((sum(xs) / len(xs), source))
        x = xs[-1] + 0.8
    ax.set_xticks([c for c, _ in centres], [s for _, s in centres])  # the legend names each bar's answers
    ax.set_xlim(ticks[0] - 0.4, ticks[-1] + 0.4)
    ax.set_ylim(0, float(summary["ci_high"].max()) + 0.08)  # room for the highest bracket and its stars
    ax.set_ylabel("cosine similarity to the description")
    ax.set_title(title)
    shown = [c for c in conditions if c in set(summary["condition"])]
    ax.legend(handles=_bar_legend_handles(shown, [faces[c] for c in shown], [conditions.index(c) for c in shown]),
              title="answers", fontsize=9, frameon=False, **BAR_LEGEND)
    fig.tight_layout()
    return fig
