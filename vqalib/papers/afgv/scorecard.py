"""A new model's answers to the AFGV reading-level tiers scored into Table 1's layout (AFGV Methods, Table 1).

Answers are keyed by ``item_id`` (``<question_id>/<tier>``) of one question set's tier items, scored as in notebook
06; the reference is VizWiz's crowd majority, or a ``reference`` column of the answers file."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from vqalib.core import report
from vqalib.papers.afgv.question_sets import QUESTION_SETS
from vqalib.papers.afgv.tiers import TIERS


def score_afgv(matched: pd.DataFrame, *, model: str, items: pd.DataFrame,
               threshold: float = 0.80) -> dict[str, pd.DataFrame]:
    """Tier accuracy, accuracy by question type and intent deltas of a model's tier answers, by stem (AFGV Table 1).

    Each table is a "not run" row when no answered item has a reference answer.

    Parameters
    ----------
    matched : pandas.DataFrame
        ``item_id`` and ``answer`` (and optionally ``reference``) per answered item.
    model : str
    items : pandas.DataFrame
        The question set's tier items.
    threshold : float, default 0.80
        The intent threshold.
    """
    from vqalib.papers.afgv.predictions import prediction_tables

    frame = matched.merge(items, on="item_id", how="left", suffixes=("_given", ""))
    if "reference_given" in frame:  # a reference column in the answers file wins
        given = frame["reference_given"]
        frame["reference"] = given.where(given.notna() & given.astype(str).str.strip().ne(""), frame["reference"])
    frame = frame[frame["reference"].notna()]
    stems = SCORECARD_TABLES
    if frame.empty:
        missing = report.not_run("no reference answers for these items",
                                 enable="add a `reference` column to the answers (e.g. GQA answers) or score the "
                                        "VizWiz-LF question set, whose reference is the crowd majority answer")
        return {**{stem: missing for stem in stems}, "per_question": per_question_accuracy(frame)}
    predictions = pd.DataFrame({"question_id": frame["question_id"], "tier": frame["tier"], "model": model,
                                "question": frame["question"], "prediction": frame["answer"].fillna(""),
                                "answer": frame["reference"].astype(str), "question_set": frame["question_set"],
                                "question_type": frame["question_type"],
                                "intent_similarity": frame["intent_similarity"]})
    tables = dict(zip(stems, prediction_tables(predictions, threshold=threshold)))
    return {**tables, "per_question": per_question_accuracy(frame)}  # the leaderboard's, kept beside the tables


ACCURACY = "exact-match accuracy"
# what an AFGV scorecard holds (the leaderboard and the site check a scorecard folder against it): its tables, and the
# (condition, metric, reference) of its per-question scores: one accuracy per tier of a question set, no condition
SCORECARD_TABLES = ("afgv_tier_accuracy_predictions", "afgv_tier_accuracy_by_question_type", "afgv_intent_deltas")


def tier_reference(tier: str, question_set: str) -> str:
    """The leaderboard's name of one tier of one question set (models are compared within it).

    Parameters
    ----------
    tier, question_set : str
    """
    return f"{tier}, {question_set}"


def per_question_accuracy(frame: pd.DataFrame) -> pd.DataFrame:
    """Per-item exact-match correctness (0 or 1) of answers with references, per tier (the leaderboard's pairs).

    Parameters
    ----------
    frame : pandas.DataFrame
        ``question_id``, ``tier``, ``question_set``, ``answer``, ``reference`` per answered item.
    """
    from vqalib.papers.afgv.accuracy import normalize_answer

    correct = [float(normalize_answer(a) == normalize_answer(b))
               for a, b in zip(frame["answer"].fillna(""), frame["reference"].astype(str))]
    return pd.DataFrame({"metric": ACCURACY,
                         "reference": [tier_reference(t, q) for t, q in zip(frame["tier"], frame["question_set"])],
                         "question_id": frame["question_id"].to_numpy(), "score": correct},
                        columns=["metric", "reference", "question_id", "score"])


PER_QUESTION_KEYS = frozenset(("", ACCURACY, tier_reference(t, q)) for t in TIERS for q in QUESTION_SETS)


def scorecard_question_ids(settings: dict, *, data_dir: Path | None = None) -> set[int]:
    """The question ids an AFGV scorecard's per-question scores may name: those of its question set (Methods).

    Parameters
    ----------
    settings : dict
        The scorecard's settings: ``question_set`` (default VizWiz-LF).
    data_dir : Path, optional
    """
    from vqalib.papers.afgv.question_sets import accessibility_question_sets

    question_set = settings.get("question_set", "VizWiz-LF")
    if question_set not in QUESTION_SETS:
        raise ValueError(f"question_set must be one of {QUESTION_SETS}, not {question_set!r}")
    return set(accessibility_question_sets(data_dir=data_dir)[question_set]["question_id"].astype(int))
