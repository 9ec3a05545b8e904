"""AFGV tables of notebook 06: Table 2 (readability per tier, left-out questions, tier ordering, example rewrites,
box-plot alt text) and Table 1 recomputed from the paper's accuracies with the sample size its CIs imply."""

from __future__ import annotations

import numpy as np
import pandas as pd

from vqalib.core import report
from vqalib.papers.afgv.accuracy import implied_n, table1_from_accuracies
from vqalib.papers.afgv.tiers import LEFT_OUT, PLACED, TIERS, _baseline_rows, _question_index

# --- Table 2 ---------------------------------------------------------------------------------

def readability_table(rewrites: pd.DataFrame) -> pd.DataFrame:
    """Mean and SD of syllables and FK grade per tier, with the questions each tier leaves out (AFGV Table 2 layout).

    ``n`` + the ``left_out_*`` counts = ``n_questions``; rewritten tiers also get those questions' baseline means.

    Parameters
    ----------
    rewrites : DataFrame
        One set's rewrite rows (``tier``, ``status``, ``syllables``, ``fk_grade``, ``words``); unknown statuses raise.
    """
    unknown = set(rewrites["status"]) - set(PLACED) - set(LEFT_OUT)
    if unknown:
        raise ValueError(f"readability_table: unknown status {sorted(unknown)}")
    base = _baseline_rows(rewrites)
    n_questions = len(base)
    rows = []
    for name in TIERS:
        part = rewrites[rewrites["tier"].astype(str) == name]
        placed = part[part["status"].isin(PLACED)]
        row = {"tier": name, "statistics_over": "all questions" if name == "baseline"
               else "questions with a rewrite in this tier", "n_questions": n_questions, "n": len(placed)}
        row.update({column: int((part["status"] == status).sum()) for status, column in LEFT_OUT.items()})
        row.update(mean_syllables=placed["syllables"].mean(), sd_syllables=placed["syllables"].std(ddof=1),
                   mean_fk=placed["fk_grade"].mean(), sd_fk=placed["fk_grade"].std(ddof=1),
                   mean_words=placed["words"].mean())
        same = base.reindex(_question_index(placed)) if name != "baseline" else None
        row.update(baseline_mean_syllables_same_questions=np.nan if same is None else same["syllables"].mean(),
                   baseline_mean_fk_same_questions=np.nan if same is None else same["fk_grade"].mean())
        rows.append(row)
    return pd.DataFrame(rows)


def example_rewrites(rewrites: pd.DataFrame, *, per_set: int = 4) -> pd.DataFrame:
    """Every tier's rows of each set's first ``per_set`` questions with a rewrite in both tiers (AFGV Table 2 examples).

    Parameters
    ----------
    rewrites : DataFrame
        Rewrite rows of all sets.
    per_set : int
    """
    both = rewrites[rewrites["status"] == "rewritten"].groupby(["question_set", "question_id"]).size().eq(2)
    examples = (both[both].reset_index()[["question_set", "question_id"]]
                .groupby("question_set", sort=False).head(per_set))
    return rewrites.merge(examples, on=["question_set", "question_id"])


def examples_wide(examples: pd.DataFrame, value: str = "question") -> pd.DataFrame:
    """:func:`example_rewrites` with one column per tier showing ``value`` (the text or its FK grade; AFGV Table 2).

    Parameters
    ----------
    examples : DataFrame
        :func:`example_rewrites` output.
    value : str
    """
    return report.wide(examples, index=["question_set", "question_id"], columns="tier", values=value)


TABLE2_COLUMNS = ["question_set", "tier", "statistics_over", "n_questions", "n", "mean_syllables",  # left_out_* after n
                  "sd_syllables", "paper_gqa_mean_syllables", "paper_gqa_sd_syllables", "mean_fk", "sd_fk",
                  "mean_words", "baseline_mean_syllables_same_questions", "baseline_mean_fk_same_questions"]


def readability_by_set(rewrites: dict[str, pd.DataFrame], *, paper: pd.DataFrame) -> pd.DataFrame:
    """:func:`readability_table` of each question set beside the paper's GQA syllable means and SDs (Table 2).

    Parameters
    ----------
    rewrites : dict
        Name -> rewrite rows.
    paper : DataFrame
        The paper's Table 2, long (``tier``, ``statistic``, ``paper``).
    """
    table = pd.concat([readability_table(r).assign(question_set=name) for name, r in rewrites.items()],
                      ignore_index=True)
    wide = paper.pivot(index="tier", columns="statistic", values="paper").reset_index()
    wide["tier"] = wide["tier"].str.lower().replace({"original": "baseline"})
    wide = wide.rename(columns={"mean_syllables": "paper_gqa_mean_syllables", "sd_syllables": "paper_gqa_sd_syllables"})
    return table.merge(wide, on="tier", how="left")


def table2_columns(readability: pd.DataFrame) -> pd.DataFrame:
    """The columns of the saved Table 2 (``afgv_table02_readability_by_tier``), in order.

    Parameters
    ----------
    readability : DataFrame
        :func:`readability_by_set` output.
    """
    left_out = [column for column in readability if column.startswith("left_out_")]
    return readability[TABLE2_COLUMNS[:5] + left_out + TABLE2_COLUMNS[5:]]


def tier_ordering(readability: pd.DataFrame) -> pd.DataFrame:
    """Mean FK per set and tier; whether simplified < baseline < complex holds, overall and vs originals (Table 2).

    Parameters
    ----------
    readability : DataFrame
        :func:`readability_by_set` output.
    """
    ordered = readability.pivot(index="question_set", columns="tier", values="mean_fk")
    ordered["simplified < baseline < complex"] = ((ordered["simplified"] < ordered["baseline"])
                                                  & (ordered["baseline"] < ordered["complex"]))
    same = readability.pivot(index="question_set", columns="tier", values="baseline_mean_fk_same_questions")
    ordered["simplified < its originals"] = ordered["simplified"] < same["simplified"]
    ordered["complex > its originals"] = ordered["complex"] > same["complex"]
    return ordered



def fk_by_tier_alt_text(in_tier: pd.DataFrame, readability: pd.DataFrame, *, clip) -> str:
    """The alt text of the FK-grade box plots (``afgv_fk_by_tier``, Table 2), with means, counts and clipped values.

    Parameters
    ----------
    in_tier : DataFrame
        The rows drawn (status in :data:`PLACED`).
    readability : DataFrame
        :func:`readability_by_set` output.
    clip : vqalib.core.plots.axes.Clip
        The axis limits of the figure.
    """
    counts = readability.set_index(["question_set", "tier"])["n"]
    means = readability.set_index(["question_set", "tier"])["mean_fk"]
    text = ("Box plots of the Flesch–Kincaid grade per tier (simplified, baseline, complex), one panel per question "
            "set; the simplified and complex boxes hold only the questions with a rewrite in that tier (one that "
            "lowers, resp. raises, the grade), the baseline box every question. " + " ".join(
                f"{name}: mean grade {means[(name, 'simplified')]:.2f} simplified ({counts[(name, 'simplified')]} "
                f"questions), {means[(name, 'baseline')]:.2f} baseline ({counts[(name, 'baseline')]}), "
                f"{means[(name, 'complex')]:.2f} complex ({counts[(name, 'complex')]})."
                for name in dict.fromkeys(readability["question_set"])))
    if not clip.n_clipped:
        return text
    off_scale = in_tier[(in_tier["fk_grade"] < clip.low) | (in_tier["fk_grade"] > clip.high)]
    extreme = off_scale.sort_values("fk_grade").iloc[-1 if clip.n_above else 0]
    return text + (f" The grade axis runs from {clip.low:.1f} to {clip.high:.1f} so that the boxes stay readable: "
                   f"{clip.note()}; they come from {off_scale['question_id'].nunique()} question(s) of "
                   f"{', '.join(dict.fromkeys(off_scale['question_set']))}, the most extreme being "
                   f"“{extreme['question'][:40]}” (grade {extreme['fk_grade']:.1f}). "
                   "The boxes and means include them.")



# --- Table 1 ---------------------------------------------------------------------------------

def table1_long(paper: pd.DataFrame, *, n: int = 20_000) -> pd.DataFrame:
    """Table 1's CIs, z-scores and CI separations recomputed from the paper's accuracies, long, for ``report.compare``.

    Parameters
    ----------
    paper : DataFrame
        The paper's Table 1, long (``model``, ``tier``, ``metric``, ``paper``).
    n : int
        Questions per tier.
    """
    recomputed = table1_from_accuracies(paper_accuracies(paper), n=n)
    return recomputed.melt(id_vars=["model", "tier"], var_name="metric", value_name="value").dropna(subset=["value"])


def paper_accuracies(paper: pd.DataFrame) -> pd.DataFrame:
    """The accuracies the paper's Table 1 (long) prints: model, tier, accuracy."""
    return paper[paper["metric"] == "accuracy"].rename(columns={"paper": "accuracy"})[["model", "tier", "accuracy"]]


IMPLIED_N_COLUMNS = ["model", "tier", "implied_n", "z_score", "z_score_at_n5000", "min_ci_separation",
                     "min_ci_separation_at_n5000"]


def implied_n_table(paper: pd.DataFrame, *, model: str = "LLaVA-1.5", n: int = 5000) -> pd.DataFrame:
    """The sample size each printed Table 1 CI implies, and ``model``'s statistics recomputed with ``n`` questions.

    Parameters
    ----------
    paper : DataFrame
        The paper's Table 1, long.
    model : str
        The model recomputed at ``n`` (``*_at_n{n}`` columns).
    n : int
        Its implied sample size.
    """
    wide = paper.pivot_table(index=["model", "tier"], columns="metric", values="paper", sort=False)
    wide["implied_n"] = implied_n(wide["accuracy"], wide["ci95_low"], wide["ci95_high"])
    accuracies = paper_accuracies(paper)
    again = table1_from_accuracies(accuracies[accuracies["model"] == model], n=n)
    return wide.reset_index().merge(again[["model", "tier", "z_score", "min_ci_separation"]].rename(
        columns={"z_score": f"z_score_at_n{n}", "min_ci_separation": f"min_ci_separation_at_n{n}"}), how="left")


def tier_order_summary(table: pd.DataFrame) -> dict:
    """``{"ordered": k, "n": n}``: question sets whose mean FK grade is simplified < baseline < complex (Table 2).

    Parameters
    ----------
    table : DataFrame
        The saved table ``afgv_table02_readability_by_tier``.
    """
    grades = table.pivot(index="question_set", columns="tier", values="mean_fk")
    ordered = (grades["simplified"] < grades["baseline"]) & (grades["baseline"] < grades["complex"])
    return {"ordered": int(ordered.sum()), "n": len(ordered)}
