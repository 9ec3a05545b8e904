"""A new model's answers to the AFGV reading-level tiers scored into Table 1's layout (AFGV Methods, Table 1).

``vqalib score --dataset afgv`` gives answers keyed by ``question_id`` and ``tier`` (``simplified``, ``baseline``,
``complex``) to the rewritten questions of one question set. The questions are the committed rewrites of the
accessibility question sets (``figures/afgv_rewrites_accessibility_questions.csv``, notebook 06), only the rows
whose text belongs in their tier; an item's id is ``<question_id>/<tier>``, as the runner writes it. The
reference answer is VizWiz's crowd majority for the VizWiz-LF set (read with ``vqalib.papers.vizwiz_lf.loading``, a
declared cross-paper dependency, as in :mod:`~vqalib.papers.afgv.question_sets`), or a ``reference`` column of the answers file
(e.g. GQA answers). Scoring is notebook 06's (:func:`~vqalib.papers.afgv.predictions.prediction_tables`):
exact-match accuracy per tier with Wald CIs, z-scores and CI separations against the baseline tier, by question
type, and the intent deltas.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from vqalib.core import report
from vqalib.papers.afgv.tiers import PLACED

REWRITES_STEM = "afgv_rewrites_accessibility_questions"
QUESTION_SETS = ("VizWiz-LF", "CommVQA")


def tier_items(*, question_set: str = "VizWiz-LF", figures_dir: str | Path | None = None,
               data_dir: Path | None = None) -> pd.DataFrame:
    """The AFGV items of one question set: each placed (question, tier) with its text and reference answer.

    Parameters
    ----------
    question_set : {"VizWiz-LF", "CommVQA"}
        The rewritten question set.
    figures_dir : str or Path, optional
        Where the committed rewrites table is (default the project's ``figures/``).
    data_dir : Path, optional
        The data folder (VizWiz-LF crowd answers, question types).

    Returns
    -------
    pandas.DataFrame
        ``item_id`` (``<question_id>/<tier>``), ``question_id``, ``tier``, ``question``, ``question_set``,
        ``question_type``, ``intent_similarity``, ``reference`` (None without one).
    """
    from vqalib.papers.afgv.question_sets import accessibility_question_sets

    if question_set not in QUESTION_SETS:
        raise ValueError(f"question_set must be one of {QUESTION_SETS}, not {question_set!r}")
    rewrites = pd.read_csv(report.figures_dir(figures_dir) / f"{REWRITES_STEM}.csv", dtype={"question_id": str})
    rows = rewrites[(rewrites["question_set"] == question_set) & rewrites["status"].isin(PLACED)].copy()
    sets = accessibility_question_sets(data_dir=data_dir)
    types = sets[question_set].assign(question_id=lambda f: f["question_id"].astype(str))
    rows = rows.merge(types[["question_id", "question_type"]], on="question_id", how="left")
    rows["reference"] = None
    if question_set == "VizWiz-LF":
        from vqalib.papers.vizwiz_lf.loading import load_vizwiz_lf

        expert = load_vizwiz_lf(data_dir=data_dir, sources=["expert"]).answers
        majority = dict(zip(expert["question_id"].astype(str), expert["crowd_majority"]))
        rows["reference"] = rows["question_id"].map(majority)
    rows["item_id"] = rows["question_id"] + "/" + rows["tier"]
    return rows[["item_id", "question_id", "tier", "question", "question_set", "question_type", "intent_similarity",
                 "reference"]].reset_index(drop=True)


def score_afgv(matched: pd.DataFrame, *, model: str, items: pd.DataFrame,
               threshold: float = 0.80) -> dict[str, pd.DataFrame]:
    """Tier accuracy, accuracy by question type, and intent deltas of a model's tier answers (AFGV Table 1).

    Parameters
    ----------
    matched : pandas.DataFrame
        ``item_id`` and ``answer`` (and optionally ``reference``) per answered item.
    model : str
        The model's name.
    items : pandas.DataFrame
        :func:`tier_items`.
    threshold : float, default 0.80
        The intent threshold of :func:`~vqalib.papers.afgv.accuracy.intent_deltas`.

    Returns
    -------
    dict of str to pandas.DataFrame
        ``afgv_tier_accuracy_predictions``, ``afgv_tier_accuracy_by_question_type``, ``afgv_intent_deltas``; a
        "not run" row for each when no answered item has a reference answer.
    """
    from vqalib.papers.afgv.predictions import prediction_tables

    frame = matched.merge(items, on="item_id", how="left", suffixes=("_given", ""))
    if "reference_given" in frame:  # a reference column in the answers file wins
        given = frame["reference_given"]
        frame["reference"] = given.where(given.notna() & given.astype(str).str.strip().ne(""), frame["reference"])
    frame = frame[frame["reference"].notna()]
    stems = ("afgv_tier_accuracy_predictions", "afgv_tier_accuracy_by_question_type", "afgv_intent_deltas")
    if frame.empty:
        missing = report.not_run("no reference answers for these items",
                                 enable="add a `reference` column to the answers (e.g. GQA answers) or score the "
                                        "VizWiz-LF question set, whose reference is the crowd majority answer")
        return {stem: missing for stem in stems}
    predictions = pd.DataFrame({"question_id": frame["question_id"], "tier": frame["tier"], "model": model,
                                "question": frame["question"], "prediction": frame["answer"].fillna(""),
                                "answer": frame["reference"].astype(str), "question_set": frame["question_set"],
                                "question_type": frame["question_type"],
                                "intent_similarity": frame["intent_similarity"]})
    return dict(zip(stems, prediction_tables(predictions, threshold=threshold)))
