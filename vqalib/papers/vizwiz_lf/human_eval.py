"""Statistics of VizWiz-LF's human evaluation (§6, Fig. 2): 0-1 scores (rank r -> (3 - r) / 2, rating r -> (r - 1) / 2),
a Friedman test per group x criterion over participant x question blocks, then Wilcoxon pairs, Bonferroni x 3."""

from __future__ import annotations

import itertools
import math
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as scistats

from vqalib.core import report
from vqalib.core.inference import THREE_LEVELS, star_mark
from vqalib.papers.vizwiz_lf.ratings import CORRECTNESS_GROUP, GROUP_NAMES, GROUPS, RATING_COLUMNS, SOURCES

CRITERIA: tuple[str, ...] = ("ranking", *RATING_COLUMNS)
CRITERION_LABELS: dict[str, str] = {"ranking": "Ranking", "relevance": "Relevance", "helpfulness": "Helpfulness",
                                    "plausibility": "Plausibility", "fluency": "Fluency"}
STAR_LEVELS = THREE_LEVELS
BLOCK = ["participant_id", "question_id"]


def criterion_label(criterion: str, group: str) -> str:
    """Display name of a Fig. 2 criterion for a group; S+I's plausibility column is Correctness (§6)."""
    if criterion == "plausibility" and group == CORRECTNESS_GROUP:
        return "Correctness"
    return CRITERION_LABELS[criterion]


def stars(p: float) -> str:
    """Fig. 2's marks: *** p < .001, ** p < .01, * p < .05, '' otherwise (or p missing)."""
    return star_mark(p, levels=STAR_LEVELS)


def bonferroni(p_values, *, factor: int) -> np.ndarray:
    """Bonferroni-adjusted p-values min(1, factor * p) (Fig. 2: factor 3); NaN stays NaN."""
    if factor < 1:
        raise ValueError(f"Bonferroni factor must be >= 1, got {factor}")
    return np.minimum(1.0, np.asarray(p_values, dtype=float) * factor)


def normalised_scores(ratings: pd.DataFrame) -> pd.DataFrame:
    """Long frame of 0-1 scores, one row per answer rating and criterion (Fig. 2's y axis).

    Parameters
    ----------
    ratings : pandas.DataFrame
        Ratings in :mod:`vqalib.papers.vizwiz_lf.ratings`' schema.
    """
    ids = ["participant_id", "group", "question_id", "question_category", "source"]
    wide = ratings[ids].copy()
    wide["ranking"] = (3 - ratings["rank"]) / 2
    for column in RATING_COLUMNS:
        wide[column] = (ratings[column] - 1) / 2
    long = wide.melt(id_vars=ids, value_vars=list(CRITERIA), var_name="criterion", value_name="score")
    correctness = (long["criterion"] == "plausibility") & (long["group"] == CORRECTNESS_GROUP)
    long["criterion_label"] = long["criterion"].map(CRITERION_LABELS).where(~correctness, "Correctness")
    return long[[*ids, "criterion", "criterion_label", "score"]]


def _families(scores: pd.DataFrame, sources: tuple[str, ...]):
    """(group, criterion, label, blocks x sources matrix) in Fig. 2 order; refuses incomplete blocks."""
    position = scores["source"].map({s: i for i, s in enumerate(sources)})
    if position.isna().any():
        raise ValueError(f"sources {sorted(set(scores.loc[position.isna(), 'source']))} are not in {list(sources)}")
    ordered = scores.assign(_position=position).sort_values([*BLOCK, "_position"], kind="stable")
    parts = dict(tuple(ordered.groupby(["group", "criterion"], sort=False)))
    groups = list(dict.fromkeys(g for g, _ in parts))
    groups = [g for g in GROUPS if g in groups] + [g for g in groups if g not in GROUPS]
    k = len(sources)
    for group in groups:
        for criterion in [c for c in CRITERIA if (group, c) in parts]:
            part = parts[(group, criterion)]
            blocks = part[BLOCK].drop_duplicates()
            if part.duplicated([*BLOCK, "source"]).any() or len(part) != k * len(blocks):
                raise ValueError(f"group {group}, {criterion}: every participant x question block needs exactly one "
                                 f"score per source {list(sources)}")
            matrix = pd.DataFrame(part["score"].to_numpy().reshape(-1, k), columns=list(sources),
                                  index=pd.MultiIndex.from_frame(blocks))
            yield group, criterion, criterion_label(criterion, group), matrix


def friedman_tests(scores: pd.DataFrame, *, sources: tuple[str, ...] = SOURCES) -> pd.DataFrame:
    """Friedman test across answer sources per group x criterion (Fig. 2); each block needs one score per source."""
    rows = []
    for group, criterion, label, matrix in _families(scores, sources):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # no variation at all: scipy returns nan
            result = scistats.friedmanchisquare(*(matrix[s].to_numpy() for s in sources))
        rows.append({"group": group, "criterion": criterion, "criterion_label": label, "n_blocks": len(matrix),
                     "statistic": float(result.statistic), "df": len(sources) - 1, "p": float(result.pvalue),
                     "stars": stars(float(result.pvalue))})
    return pd.DataFrame(rows)


WILCOXON_CORRECTION = True  # continuity correction of the normal approximation (see pairwise_wilcoxon)


def pairwise_wilcoxon(scores: pd.DataFrame, *, sources: tuple[str, ...] = SOURCES,
                      zero_method: str = "wilcox", correction: bool = WILCOXON_CORRECTION) -> pd.DataFrame:
    """Pairwise Wilcoxon signed-rank tests between sources, Bonferroni-corrected per group x criterion (Fig. 2). No
    software named: continuity correction on as in R's ``wilcox.test`` and pingouin (conservative; scipy's is off)."""
    pairs = list(itertools.combinations(sources, 2))
    rows = []
    for group, criterion, label, matrix in _families(scores, sources):
        for a, b in pairs:
            x, y = matrix[a].to_numpy(), matrix[b].to_numpy()
            nonzero = int(np.count_nonzero(x - y))
            if nonzero:
                result = scistats.wilcoxon(x, y, zero_method=zero_method, correction=correction)
                statistic, p = float(result.statistic), float(result.pvalue)
            else:
                statistic, p = math.nan, math.nan
            rows.append({"group": group, "criterion": criterion, "criterion_label": label, "source_a": a,
                         "source_b": b, "n_blocks": len(matrix), "n_nonzero": nonzero, "mean_a": float(x.mean()),
                         "mean_b": float(y.mean()), "mean_difference": float((x - y).mean()),
                         "statistic": statistic, "p": p})
    table = pd.DataFrame(rows)
    table["correction"] = "continuity" if correction else "none"
    table["correction_factor"] = len(pairs)
    table["p_bonferroni"] = bonferroni(table["p"], factor=len(pairs))
    table["stars"] = table["p_bonferroni"].map(stars)
    return table


def significance_marks(friedman: pd.DataFrame, pairwise: pd.DataFrame, *, alpha: float = 0.05) -> pd.DataFrame:
    """Pairwise results with ``friedman_p`` and ``shown``: a pair is starred when its Friedman p < ``alpha`` (§6)."""
    marks = pairwise.merge(friedman[["group", "criterion", "p"]].rename(columns={"p": "friedman_p"}),
                           on=["group", "criterion"], how="left")
    marks["shown"] = marks["friedman_p"].lt(alpha) & marks["stars"].ne("")
    return marks


def source_means(scores: pd.DataFrame, *, confidence: float = 0.95) -> pd.DataFrame:
    """Mean 0-1 score per group x criterion x source, t CI over participants' means, sd over ratings (Fig. 2 bars)."""
    rows = []
    sources = tuple(s for s in SOURCES if s in set(scores["source"].unique()))
    for group, criterion, label, matrix in _families(scores, sources):
        per_participant = matrix.groupby(level="participant_id").mean()
        for source in sources:
            values, by_participant = matrix[source].to_numpy(), per_participant[source].to_numpy()
            mean = float(values.mean())
            if len(by_participant) > 1 and np.ptp(by_participant) > 1e-12:  # equal means: no spread, CI = mean
                ci = scistats.ttest_1samp(by_participant, 0.0).confidence_interval(confidence)
                low, high = float(ci.low), float(ci.high)
            elif len(by_participant) > 1:
                low = high = mean
            else:
                low = high = math.nan
            rows.append({"group": group, "group_name": GROUP_NAMES.get(group, group), "criterion": criterion,
                         "criterion_label": label, "source": source, "n_participants": len(by_participant),
                         "n_ratings": len(values), "mean": mean, "sd": float(np.std(values, ddof=1)),
                         "ci_low": low, "ci_high": high})
    return pd.DataFrame(rows)


def pooled_summary(scores: pd.DataFrame, *, groups: tuple[str, ...], criterion: str) -> dict[str, float]:
    """n_ratings, mean and sd of one criterion pooled over groups and sources (§6: BLV Plausibility 0.84, SD 0.28)."""
    values = scores.loc[scores["group"].isin(groups) & (scores["criterion"] == criterion), "score"]
    return {"n_ratings": int(len(values)), "mean": float(values.mean()), "sd": float(values.std(ddof=1))}


@dataclass
class Figure2Analysis:
    """Everything Fig. 2 shows, for one study (normalised scores, bars, tests, stars)."""

    scores: pd.DataFrame
    means: pd.DataFrame
    friedman: pd.DataFrame
    pairwise: pd.DataFrame   # with friedman_p and shown (see significance_marks)


def figure2_analysis(ratings: pd.DataFrame, *, alpha: float = 0.05, confidence: float = 0.95,
                     correction: bool = WILCOXON_CORRECTION) -> Figure2Analysis:
    """VizWiz-LF Fig. 2: normalise, average with ``confidence`` CIs, test (Friedman at ``alpha``, then Wilcoxon).

    Parameters
    ----------
    ratings : pandas.DataFrame
        Ratings in :mod:`vqalib.papers.vizwiz_lf.ratings`' schema.
    alpha : float, default 0.05
    confidence : float, default 0.95
    correction : bool, default :data:`WILCOXON_CORRECTION`
        The Wilcoxon continuity correction.
    """
    scores = normalised_scores(ratings)
    friedman = friedman_tests(scores)
    pairwise = pairwise_wilcoxon(scores, correction=correction)
    return Figure2Analysis(scores=scores, means=source_means(scores, confidence=confidence), friedman=friedman,
                           pairwise=significance_marks(friedman, pairwise, alpha=alpha))


def correction_sensitivity(scores: pd.DataFrame) -> pd.DataFrame:
    """Pairwise Wilcoxon stars with and without the continuity correction, and ``stars_differ`` (Fig. 2).

    Parameters
    ----------
    scores : pandas.DataFrame
        :func:`normalised_scores` output.
    """
    keys = ["group", "criterion", "source_a", "source_b"]
    on = pairwise_wilcoxon(scores, correction=True)[keys + ["p_bonferroni", "stars"]]
    off = pairwise_wilcoxon(scores, correction=False)[keys + ["p_bonferroni", "stars"]]
    both = on.merge(off, on=keys, suffixes=("_continuity", "_none"))
    both["stars_differ"] = both["stars_continuity"] != both["stars_none"]
    return both


def figure2_summary_text(analysis: Figure2Analysis, *, study: str) -> str:
    """A one-paragraph description of Fig. 2 computed from its data (the figure's alt text), opening with ``study``.

    Parameters
    ----------
    analysis : Figure2Analysis
    study : str
    """
    means, marks = analysis.means, analysis.pairwise
    n_groups, n_criteria = means["group"].nunique(), means["criterion"].nunique()
    ranking = means[means["criterion"] == "ranking"]
    best = [f"{g}: {part.loc[part['mean'].idxmax(), 'source']} ({part['mean'].max():.2f})"
            for g, part in ranking.groupby("group", sort=False)]
    worst = [f"{g}: {part.loc[part['mean'].idxmin(), 'source']} ({part['mean'].min():.2f})"
             for g, part in ranking.groupby("group", sort=False)]
    shown = marks[marks["shown"]]
    listed = "; ".join(f"{r.group} {r.criterion_label}: {r.source_a} vs {r.source_b} {r.stars}"
                       for r in shown.head(6).itertuples())
    more = f" and {len(shown) - 6} more" if len(shown) > 6 else ""
    return (f"{study}. Grid of bar charts, {n_groups} rows (participant groups B = BLV, B+I = BLV with image "
            f"description, S = sighted without image, S+I = sighted with image) by {n_criteria} columns (Ranking, "
            "Relevance, Helpfulness, Plausibility - Correctness for S+I - and Fluency). Each panel has one bar per "
            "answer source (GPT-4V, Gemini, Expert) giving the mean score normalised to 0-1 with a 95% confidence "
            "interval over participants, and brackets with stars over pairs that differ after a significant "
            "Friedman test and Bonferroni-corrected Wilcoxon tests. Highest mean ranking per group: "
            f"{', '.join(best)}; lowest: {', '.join(worst)}. {len(shown)} of {len(marks)} pairwise comparisons are "
            f"marked significant" + (f" ({listed}{more})." if len(shown) else "."))


# --- notebook 04: Fig. 2 displays ------------------------------------------------------

def figure2_means_wide(means: pd.DataFrame) -> pd.DataFrame:
    """The bars of Fig. 2 as a table: "mean [ci_low, ci_high]" per group x source (rows) and criterion.

    Parameters
    ----------
    means : DataFrame
        :func:`source_means` output.
    """
    cell = (means["mean"].map("{:.2f}".format) + " [" + means["ci_low"].map("{:.2f}".format) + ", "
            + means["ci_high"].map("{:.2f}".format) + "]")
    return report.wide(means.assign(cell=cell), index=["group", "source"], columns="criterion", values="cell")


def blv_plausibility_text(scores: pd.DataFrame, *, study: str) -> str:
    """BLV plausibility pooled over sources beside the paper's 0.84 (SD 0.28) of §6.

    Parameters
    ----------
    scores : DataFrame
        :func:`normalised_scores` output.
    study : str
    """
    blv = pooled_summary(scores, groups=("B", "B+I"), criterion="plausibility")
    return (f"{study}: BLV plausibility pooled over sources: mean {blv['mean']:.2f}, SD {blv['sd']:.2f} "
            f"(n = {blv['n_ratings']}); the paper reports 0.84, SD 0.28 for its real study (§6)")


def correction_sensitivity_text(moved: pd.DataFrame, *, study: str) -> str:
    """How many Fig. 2 stars the continuity correction moves, as a sentence.

    Parameters
    ----------
    moved : DataFrame
        :func:`correction_sensitivity` output.
    study : str
    """
    return (f"{study}: {int(moved['stars_differ'].sum())} of {len(moved)} pairwise stars differ between the "
            "continuity-corrected and uncorrected Wilcoxon tests")


def shown_marks(pairwise: pd.DataFrame) -> pd.DataFrame:
    """The pairwise Wilcoxon tests Fig. 2 draws as stars, with the columns that explain them.

    Parameters
    ----------
    pairwise : DataFrame
        ``Figure2Analysis.pairwise``.
    """
    return pairwise[pairwise["shown"]][["group", "criterion_label", "source_a", "source_b", "mean_difference",
                                        "p", "p_bonferroni", "stars"]]
