"""The short-vs-long survey of VizWiz-LF (A.3.2, Table 19; §6 "75%, p < .0001"): the binomial test per possible number
of questions (the paper omits it) and which numbers Table 19 allows; Table 19 shown as printed (data not public)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats as scistats

from vqalib.core import report


# --- Table 19: the short-vs-long preliminary survey (A.3.2) ---------------------------

def preference_binomial(*, participants: int = 8, questions=range(1, 31), share: float = 0.75,
                        threshold: float = 1e-4) -> pd.DataFrame:
    """Exact binomial test (vs 50%) of the long-form preference for each survey size N in ``questions`` (§6, A.3.2,
    Table 19); ``significant``: two-sided p below ``threshold``.

    Parameters
    ----------
    participants : int, default 8
    questions : iterable of int, default 1-30
    share : float, default 0.75
        Share of comparisons won by the long answer (rounded to a count).
    threshold : float, default 1e-4
    """
    rows = []
    for n_questions in questions:
        n = participants * n_questions
        k = int(round(share * n))
        two = scistats.binomtest(k, n, 0.5, alternative="two-sided").pvalue
        one = scistats.binomtest(k, n, 0.5, alternative="greater").pvalue
        rows.append({"questions": n_questions, "comparisons": n, "long_preferred": k, "share_long": k / n,
                     "p_two_sided": float(two), "p_one_sided": float(one), "significant": bool(two < threshold)})
    return pd.DataFrame(rows)


def scientific(p: float, *, digits: int = 2) -> str:
    """A small p-value as text that tables keep as written, e.g. ``7.73×10^-5`` (Table 19)."""
    mantissa, exponent = f"{p:.{digits}e}".split("e")
    return f"{mantissa}×10^{int(exponent)}"


def smallest_significant_survey(preference: pd.DataFrame, *, column: str = "p_two_sided",
                                threshold: float = 1e-4) -> int | None:
    """The fewest questions for which ``column`` is below ``threshold``, or None (Table 19)."""
    below = preference.loc[preference[column] < threshold, "questions"]
    return int(below.min()) if len(below) else None


def _reachable_mean_sd(n: int, levels: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every (mean, sample SD, population SD) that n answers on ``levels`` can give."""
    if len(levels) == 2:
        counts = np.stack([n - np.arange(n + 1), np.arange(n + 1)], axis=1)
    else:
        a, b = np.tril_indices(n + 1)          # all a >= b >= 0 with a <= n: take (b, a - b, n - a)
        counts = np.stack([b, a - b, n - a], axis=1)
    values = np.array(levels, dtype=float)
    total = counts @ values
    mean = total / n
    ss = np.clip(counts @ values**2 - n * mean**2, 0, None)
    return mean, np.sqrt(ss / max(n - 1, 1)), np.sqrt(ss / n)


def survey_consistency(paper19: pd.DataFrame, *, participants: int = 8, questions=range(1, 31)) -> pd.DataFrame:
    """Per survey size N, how many printed means and SDs of Table 19 (A.3.2) it could give, under sample and
    population SD: a cell is consistent when some split of its answers over the scale rounds to the printed values."""
    cells = paper19.pivot_table(index=["criterion", "answer_length"], columns="statistic",
                                values=["paper", "paper_decimals"], sort=False)
    rows = []
    for n_questions in questions:
        n = participants * n_questions
        ok_sample = ok_population = 0
        reachable = {levels: _reachable_mean_sd(n, levels) for levels in ((0, 1), (1, 2, 3))}
        for (criterion, _length), cell in cells.iterrows():
            mean, sd_sample, sd_population = reachable[(0, 1) if criterion == "Ranking" else (1, 2, 3)]
            m, s = cell[("paper", "AVG")], cell[("paper", "STDEV")]
            dm = 0.5 * 10.0 ** -cell[("paper_decimals", "AVG")] + 1e-9
            ds = 0.5 * 10.0 ** -cell[("paper_decimals", "STDEV")] + 1e-9
            mean_ok = np.abs(mean - m) <= dm
            ok_sample += bool((mean_ok & (np.abs(sd_sample - s) <= ds)).any())
            ok_population += bool((mean_ok & (np.abs(sd_population - s) <= ds)).any())
        rows.append({"questions": n_questions, "answers_per_cell": n, "cells": len(cells),
                     "consistent_cells_sample_sd": ok_sample, "consistent_cells_population_sd": ok_population,
                     "all_consistent_sample_sd": ok_sample == len(cells),
                     "all_consistent_population_sd": ok_population == len(cells)})
    return pd.DataFrame(rows)


# --- notebook 04: Table 19 displays -------------------------------------------------------

TABLE19_STEM = "vizwiz-lf_table19_short_vs_long_survey"


def table19_shown(paper19: pd.DataFrame) -> pd.DataFrame:
    """Table 19 (A.3.2) as shown, not reproduced: the paper's cells with a status saying why.

    Parameters
    ----------
    paper19 : DataFrame
    """

    table = report.compare(pd.DataFrame(columns=["criterion", "answer_length", "statistic", "value"]),
                           TABLE19_STEM, paper=paper19)
    table.insert(3, "status", "not run: the survey's per-response data are not public")
    return table


SURVEY_COLUMNS = ["questions", "comparisons", "long_preferred", "p_two_sided_printed", "significant",
                  "consistent_cells_sample_sd", "consistent_cells_population_sd"]


def survey_table(paper19: pd.DataFrame, *, participants: int = 8, questions=range(1, 21), share: float = 0.75,
                 threshold: float = 1e-4) -> pd.DataFrame:
    """Per survey size N in ``questions``, the binomial test and whether Table 19's means and SDs can arise (A.3.2).

    Parameters
    ----------
    paper19 : DataFrame
    participants : int
    questions : iterable of int
    share : float
        Share of comparisons won by the long answer.
    threshold : float
        The p level of ``significant``.
    """
    preference = preference_binomial(participants=participants, questions=questions, share=share,
                                     threshold=threshold)
    survey = preference.merge(survey_consistency(paper19, participants=participants, questions=questions),
                              on="questions")
    survey.insert(5, "p_two_sided_printed", survey["p_two_sided"].map(scientific))
    return survey


def survey_summary_text(survey: pd.DataFrame, *, threshold: float = 1e-4) -> str:
    """The smallest survey reaching p < ``threshold`` and the sizes consistent with Table 19, as two lines.

    Parameters
    ----------
    survey : DataFrame
        :func:`survey_table` output.
    threshold : float
    """
    smallest = smallest_significant_survey(survey, column="p_two_sided", threshold=threshold)
    smallest_one = smallest_significant_survey(survey, column="p_one_sided", threshold=threshold)
    row = survey.set_index("questions").loc[smallest]
    fits_sample = survey.loc[survey["all_consistent_sample_sd"], "questions"].tolist()
    fits_population = survey.loc[survey["all_consistent_population_sd"], "questions"].tolist()
    return (f"smallest N with p < .0001: {smallest} questions two-sided, {smallest_one} one-sided "
            f"({int(row['comparisons'])} comparisons, {int(row['long_preferred'])} for the long answer)\n"
            f"N (1-20) for which every printed mean and SD of Table 19 is attainable: sample SD (Excel STDEV): "
            f"{fits_sample}; population SD: {fits_population}")
