"""The leaderboard's figures: per headline measure each model's estimate with its 95% interval, best first, tier in the
label (:mod:`vqalib.compendium.leaderboard`; notebook 10, ``vqalib leaderboard``, the reviewer site)."""

from __future__ import annotations

import re

import matplotlib.pyplot as plt
import pandas as pd

from vqalib.compendium import leaderboard
from vqalib.core import figure_files
from vqalib.core.plots.style import DISPLAY_WIDTH_IN, MARKERS, PALETTE
from vqalib.papers.vizwiz_lf import leaderboard_measures as measures

# the ranked measures and answer length; BLEU (corpus-level, never ranked), the role shares and AFGV's tier
# accuracy (scorecards only, no registered figure) stay in the table only
HEADLINE = {"vizwiz-lf": ("ROUGE", "METEOR", "BERTScore", measures.ABSTENTION, leaderboard.WORDS),
            "commvqa": ("METEOR", "ROUGE", "CIDEr")}
TITLES = leaderboard.TITLES
REFERENCES = {"s_r": "against the short references (s_r)", "l_r": "against the long references (l_r)",
              measures.RELEASED_LABELS: "on the released role labels (released models only)",
              measures.CLASSIFIER_LABELS: "on the offline classifier's role labels (every model)"}
KINDS = ("released", "scorecard")  # colour and marker of each kind of row


def figure_name(dataset: str, metric: str) -> str:
    """The figure's file stem, e.g. ``leaderboard_vizwiz-lf_answer-words`` (a registry entry per name)."""
    return f"leaderboard_{dataset}_{re.sub(r'[^a-z0-9]+', '-', metric.lower()).strip('-')}"


def _label(model: str, tier) -> str:
    return f"{model} · tier {tier}" if isinstance(tier, str) and tier else model


def _part(table: pd.DataFrame, metric: str) -> pd.DataFrame:
    part = table[table["metric"] == metric].copy()
    part["reference"] = part["reference"].fillna("").astype(str)
    part["tier"] = part["tier"].map(lambda t: "" if pd.isna(t) else str(t).removesuffix(".0"))
    return part


def measure_figure(table: pd.DataFrame, *, dataset: str, metric: str) -> plt.Figure:
    """One measure of a leaderboard: per reference a panel, each model's estimate and 95% interval, best first.

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`vqalib.compendium.leaderboard.leaderboard`'s ``table`` (or its saved CSV).
    dataset : str
    metric : str
        One of :data:`HEADLINE`'s measures.
    """
    figure_files.use_style()
    part = _part(table, metric)
    if part.empty:
        raise ValueError(f"{dataset} leaderboard: no rows for the measure {metric!r}")
    panels = list(dict.fromkeys(part["reference"]))
    heights = [len(part[part["reference"] == r]) * 0.34 + 0.9 for r in panels]
    fig, axes = plt.subplots(len(panels), 1, figsize=(DISPLAY_WIDTH_IN - 0.3, sum(heights) + 0.6), squeeze=False,
                             gridspec_kw={"height_ratios": heights}, layout="constrained")
    for ax, reference in zip(axes[:, 0], panels):
        rows = part[part["reference"] == reference].reset_index(drop=True)  # already best first
        y = range(len(rows))[::-1]
        for k, kind in enumerate(KINDS):
            mine = rows["kind"] == kind
            if mine.any():
                ax.errorbar(rows.loc[mine, "value"], [y[i] for i in rows.index[mine]],
                            xerr=[rows.loc[mine, "value"] - rows.loc[mine, "ci_low"],
                                  rows.loc[mine, "ci_high"] - rows.loc[mine, "value"]],
                            fmt=MARKERS[k], color=PALETTE[k], ecolor="0.2", elinewidth=1.2, capsize=3, markersize=7,
                            linestyle="none", label=f"{kind} model" if k == 0 else f"{kind} (vqalib score)")
        for i in range(1, len(rows)):  # a dashed rule where the next tier opens
            if rows.loc[i, "tier"] and rows.loc[i - 1, "tier"] and rows.loc[i, "tier"] != rows.loc[i - 1, "tier"]:
                ax.axhline(y[i] + 0.5, color="0.45", linestyle="--", linewidth=0.8)
        ax.set_yticks(list(y), [_label(m, t) for m, t in zip(rows["model"], rows["tier"])])
        ax.set_ylim(-0.6, len(rows) - 0.4)
        ax.set_title(REFERENCES.get(reference, "") or f"{TITLES[dataset]}: {metric}", fontsize=11, loc="left")
        ax.set_xlabel(f"{metric}: estimate and 95% interval" if metric != leaderboard.WORDS
                      else "answer words: mean and 95% interval (not ranked)")
        if (rows["kind"] != "released").any():
            ax.legend(loc="lower right", fontsize=9)
    if len(panels) > 1:
        what = "" if metric == measures.ABSTENTION else " of the whole answer (l_c)"
        fig.suptitle(f"{TITLES[dataset]}: {metric}{what}", fontsize=12)
    return fig


def alt_text(table: pd.DataFrame, *, dataset: str, metric: str) -> str:
    """The figure's long description, from the leaderboard's own rows (every number is in its CSV).

    Parameters
    ----------
    table : pandas.DataFrame
    dataset, metric : str
    """
    part = _part(table, metric)
    text = [f"{TITLES[dataset]} leaderboard, {metric}: each model's estimate as a point with its 95% interval as a "
            "horizontal line, best first; the label gives the tier and a dashed line separates tiers (models in one "
            "tier are not told apart by the paired tests)."]
    for reference, rows in part.groupby("reference", sort=False):
        where = f" {REFERENCES[reference].capitalize()}:" if reference in REFERENCES else ""
        listed = "; ".join(f"{r.model}{', tier ' + r.tier if r.tier else ''}: {r.value:.3f} (interval {r.ci_low:.3f} "
                           f"to {r.ci_high:.3f})" for r in rows.itertuples(index=False))
        text.append(f"{where} {listed}.")
    if metric == leaderboard.WORDS:
        text.append(" Answer length is reported, not ranked.")
    return "".join(text)


def save_figures(table: pd.DataFrame, *, dataset: str, directory=None) -> list[figure_files.SavedFigure]:
    """Draw and save every headline measure's figure of one dataset's leaderboard (PNG, PDF, alt text).

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`vqalib.compendium.leaderboard.leaderboard`'s ``table``.
    dataset : str
    directory : str or Path, optional
        Default ``figures/``.
    """
    return [figure_files.save_figure(measure_figure(table, dataset=dataset, metric=m), figure_name(dataset, m),
                                     alt_text=alt_text(table, dataset=dataset, metric=m), directory=directory)
            for m in HEADLINE.get(dataset, ()) if (table["metric"] == m).any()]
