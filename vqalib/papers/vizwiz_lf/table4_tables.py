"""Notebook 03's assembly of VizWiz-LF Table 4 (§5) and Table 18 (A.3.1) from the metric scores of
:mod:`vqalib.papers.vizwiz_lf.table4`: comparisons with the paper, sensitivity and reference-shift analyses."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from vqalib.core import report
from vqalib.core.metrics.bertscore import Backbone
from vqalib.core.metrics.catalog import METRICS
from vqalib.papers.vizwiz_lf.table4 import (METRIC_NAMES, NO_ANSWER_RULES, human_correlation, metric_cells,
                                            nltk_meteor_variants, paper_in_ci, score_pairs, summarize, table4_rows)

def no_answer_sentence_counts(pairs: pd.DataFrame) -> pd.DataFrame:
    """Per source, the count and share of answers without an Answer sentence (missing l'_c candidate; Table 4, §5).

    Parameters
    ----------
    pairs : DataFrame
    """
    return (pairs.assign(no_answer_sentence=pairs["candidate"].isna())
            .query("candidate_kind == 'l_c_prime' and reference_kind == 's_r'")
            .groupby("source", sort=False)["no_answer_sentence"].agg(["sum", "mean"])
            .rename(columns={"sum": "answers without an Answer sentence", "mean": "share"}))


def implementations(backbone: Backbone, judge=None) -> dict[str, str]:
    """Metric id -> Table 4's ``implementation`` text: the registry variant, naming the BERTScore backbone and judge.

    Parameters
    ----------
    backbone : Backbone
    judge : optional
    """
    names = {name: m.variant + (f", {backbone.label}" if m.uses_backbone else "") for name, m in METRICS.items()}
    return {**names, "lave": f"LAVE (Table 17) via {judge.backend.name}:{judge.backend.model}" if judge else ""}


def sample_table4(scores: pd.DataFrame, question_ids, *, sources: list[str], implementation: dict[str, str],
                  n_resamples: int = 1000, seed: int = 0, not_run: dict[str, str] | None = None) -> pd.DataFrame:
    """Table 4 on the paper's setup: bootstrap summaries of the sampled answers, plus ``not_run`` cells (§5, Table 4).

    Parameters
    ----------
    scores : DataFrame
        Long scores of ``score_pairs`` (and ``score_with_judge``).
    question_ids : collection
        The paper-style sample.
    sources : list of str
    implementation : dict
        Metric id -> ``implementation`` text.
    n_resamples, seed : int
    not_run : dict, optional
        Metric id -> reason.
    """
    sample = scores[scores["question_id"].isin(question_ids) & scores["source"].isin(sources)]
    table = table4_rows(summarize(sample, n_resamples=n_resamples, seed=seed), implementation=implementation)
    missing = [report.not_run_rows(metric_cells(sources=sources, metric=metric), reason=reason)
               for metric, reason in (not_run or {}).items()]
    return pd.concat([table, *missing], ignore_index=True) if missing else table


def compare_with_paper(table: pd.DataFrame, stem: str, *, paper: pd.DataFrame) -> pd.DataFrame:
    """Table 4 rows (with CIs) beside the ``paper``'s, compared per registry entry ``stem``, with ``paper_in_ci``.

    Parameters
    ----------
    table : DataFrame
    stem : str
    paper : DataFrame
    """
    compared = report.compare(table, stem, paper=paper)
    compared["paper_in_ci"] = paper_in_ci(compared)
    return compared


def table4_wide(compared: pd.DataFrame, *, values: str = "reproduced", decimals: int = 3) -> pd.DataFrame:
    """A Table 4 comparison in the paper's layout, showing ``values``: one row per source, columns metric x setting.

    Parameters
    ----------
    compared : DataFrame
        :func:`compare_with_paper` output.
    values : str
    decimals : int
    """

    setting = (compared["reference"] + "+" + compared["candidate"]).replace({"+": "answer"})
    return report.wide(compared.assign(setting=setting), index="source", columns=["metric", "setting"],
                       values=values, decimals=decimals)


PAPER_IN_CI_COLUMNS = ["source", "metric", "reference", "candidate", "reproduced", "ci_low", "ci_high", "paper",
                       "paper_in_ci"]


def paper_cells_in_ci(full: pd.DataFrame, *, metrics: tuple[str, ...] = ("ROUGE", "METEOR")) -> pd.DataFrame:
    """The full-set Table 4 cells of ``metrics`` (paper names) the paper prints, with whether they lie inside our CI.

    Parameters
    ----------
    full : DataFrame
        :func:`compare_with_paper` output on the full set.
    metrics : tuple of str
    """
    cells = full[full["metric"].isin(list(metrics)) & full["paper"].notna()]
    return cells[PAPER_IN_CI_COLUMNS]


def paper_in_ci_text(cells: pd.DataFrame, *, label: str = "ROUGE/METEOR") -> str:
    """One sentence counting the paper's ``label`` cells inside the full-set 95% CI (Table 4, notebook 03).

    Parameters
    ----------
    cells : DataFrame
        :func:`paper_cells_in_ci` output.
    label : str
    """
    return (f"{int(cells['paper_in_ci'].sum())} of {len(cells)} {label} cells of the paper lie inside "
            "the full-set 95% CI")


def no_answer_sensitivity(pairs: pd.DataFrame, paper: pd.DataFrame, *, implementation: dict[str, str],
                          metrics: tuple[str, ...] | None = None,
                          cache_dir: Path | None = None) -> pd.DataFrame:
    """Table 4 means under each no-Answer-sentence rule, on all and on answerable questions, beside the paper's.

    Parameters
    ----------
    pairs, paper : DataFrame
    implementation : dict
        Metric id -> ``implementation`` text.
    metrics : tuple of str, optional
        Default ROUGE, METEOR and :func:`~vqalib.papers.vizwiz_lf.table4.nltk_meteor_variants`.
    cache_dir : Path, optional
    """
    metrics = metrics or ("rouge", "meteor", *nltk_meteor_variants())
    rows = []
    for rule in NO_ANSWER_RULES:
        s = score_pairs(pairs, metrics=metrics, no_answer=rule, cache_dir=cache_dir, progress=False)
        for subset, part in (("all questions", s), ("answerable only", s[s["answerability"] == "answerable"])):
            means = part.groupby(["source", "metric", "reference_kind", "candidate_kind"], sort=False)["score"].mean()
            rows.append(means.rename("value").reset_index().assign(no_answer=rule, questions=subset))
    table = table4_rows(pd.concat(rows, ignore_index=True), implementation=implementation)
    return table.merge(paper[["source", "metric", "reference", "candidate", "paper"]], how="left")


def sensitivity_wide(sensitivity: pd.DataFrame, *, decimals: int = 3) -> pd.DataFrame:
    """:func:`no_answer_sensitivity` with one column per question subset x rule.

    Parameters
    ----------
    sensitivity : DataFrame
    decimals : int
    """
    return report.wide(sensitivity.assign(setting=sensitivity["reference"] + "+" + sensitivity["candidate"]),
                       index=["metric", "source", "setting"], columns=["questions", "no_answer"], values="value",
                       decimals=decimals)


def reference_gains(shift: pd.DataFrame) -> pd.Series:
    """Mean score with the long reference minus with the short one, per metric x source x candidate (§5)."""
    means = shift.pivot_table(index=["metric", "source", "candidate_kind"], columns="reference_kind",
                              values="mean").dropna()
    return means["l_r"] - means["s_r"]


def reference_shift_alt_text(shift: pd.DataFrame) -> str:
    """The alt text of the reference-shift figure (§5), with its numbers.

    Parameters
    ----------
    shift : DataFrame
        ``summarize`` output.
    """
    gains = reference_gains(shift)
    return ("Three panels (ROUGE, METEOR, BERTScore), each with one pair of lines per model answer source (GPT-4V, "
            "Gemini, LLaVA, QWEN, BLIP-2, InstructBLIP): mean score against the short crowd reference on the left and "
            "against the expert's long answer on the right, for the whole answer (solid) and its Answer sentences "
            f"(dashed), with 95% confidence intervals. Long references raise the score in {int((gains > 0).sum())} "
            f"of {len(gains)} cases; the largest rise is {gains.idxmax()[1]} {METRIC_NAMES[gains.idxmax()[0]]} "
            f"({gains.max():+.2f}).")


TABLE18_ENABLE = ("pass human_ratings=<csv with source, question_id, correctness> to this notebook; the study's "
                  "per-rating data are not public (notebook 04 documents the ratings schema)")


def table18(scores: pd.DataFrame, human: pd.DataFrame | None) -> pd.DataFrame:
    """Table 18 (A.3.1): correlation with per-answer human correctness, or a not-run row saying how to enable it.

    Parameters
    ----------
    scores : DataFrame
    human : DataFrame or None
    """

    if human is None:
        return report.not_run("no human ratings", enable=TABLE18_ENABLE)
    return human_correlation(scores, human)


def full_set_ci_summary(full: pd.DataFrame) -> dict:
    """``inside`` and ``n``: the paper's ROUGE/METEOR cells inside our full-set 95% CI (Table 4; README status).

    Parameters
    ----------
    full : DataFrame
        The saved full-set bootstrap table.
    """
    cells = full[full["metric"].isin(["ROUGE", "METEOR"]) & full["paper"].notna()]
    return {"inside": int(cells["paper_in_ci"].astype(str).eq("True").sum()), "n": len(cells)}
