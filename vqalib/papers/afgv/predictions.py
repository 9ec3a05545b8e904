"""AFGV model predictions per tier (Table 1 from predictions; the "2.8x" intent analysis): runner records as a
predictions table, with their rewrites, and notebook 06's prediction tables."""

from __future__ import annotations

import pandas as pd

from vqalib.papers.afgv.accuracy import intent_deltas, tier_accuracy
from vqalib.papers.afgv.intent import answer_similarity


def predictions_from_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """AFGV predictions table from runner records; error records count as wrong, so accuracy is not inflated (Table 1).

    Parameters
    ----------
    runs : pandas.DataFrame
        Runner records (final only); rows of other datasets are dropped.
    """
    records = runs[runs["dataset"] == "afgv"]
    return pd.DataFrame({"question_id": records["question_id"], "tier": records["tier"], "model": records["model"],
                         "question": records["question"], "prediction": records["answer"].fillna(""),
                         "answer": records["reference"].fillna(""), "kind": records["kind"]}).reset_index(drop=True)


def attach_rewrites(predictions: pd.DataFrame, rewrites: pd.DataFrame,
                    question_sets: dict[str, pd.DataFrame] | None = None) -> pd.DataFrame:
    """Predictions with their rewrite's question_set, question_type and intent_similarity (Table 1 by type; intent).

    Matched on question_id, tier (as text) and, if present, question text and set; misses in ``attrs["unmatched"]``.

    Parameters
    ----------
    predictions : pandas.DataFrame
        A predictions table (``question_id``, ``tier``, ...).
    rewrites : pandas.DataFrame
        Rewrite rows of all question sets.
    question_sets : dict of str to DataFrame, optional
        Question types, used only when ``rewrites`` has no ``question_type``.
    """
    if question_sets is not None and "question_type" not in rewrites:
        types = pd.concat([q[["question_id", "question_type"]].assign(question_set=name)
                           for name, q in question_sets.items() if "question_type" in q], ignore_index=True)
        rewrites = rewrites.merge(types, on=["question_set", "question_id"], how="left")
    keys = ["question_id", "tier"] + [k for k in ("question", "question_set") if k in predictions and k in rewrites]
    wanted = [c for c in ("question_set", "question_type", "intent_similarity") if c in rewrites and c not in keys]
    left = predictions.drop(columns=[c for c in wanted if c in predictions and predictions[c].isna().all()])
    wanted = [c for c in wanted if c not in left]
    as_text = {k: str for k in ("question_id", "tier")}  # runs write ids as text; tables may hold numbers
    right = rewrites[keys + wanted].astype(as_text).drop_duplicates(keys)
    out = left.astype(as_text).merge(right, on=keys, how="left", indicator=True)
    out.attrs["unmatched"] = int((out.pop("_merge") == "left_only").sum())
    return out


PREDICTIONS_ENABLE = ("run BLIP / InstructBLIP / LLaVA-1.5 on each tier with the VLM runner (`vqalib run`) and pass "
                      "predictions=<csv with question_id, tier, model, prediction, answer[, question_type, "
                      "question_set]>; GQA answers need make data-gqa and the GQA images")


def prediction_tables(predictions: pd.DataFrame, *, threshold: float = 0.80
                      ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Tier accuracy with answer similarity, accuracy by question type, and intent deltas (Table 1; "2.8x" analysis).

    Parameters
    ----------
    predictions : DataFrame
        Predictions with their rewrites attached.
    threshold : float
        Intent threshold of :func:`intent_deltas`.

    Returns
    -------
    tuple of DataFrame
        ``(tier_stats, by_type, deltas)``; ``by_type`` is a not-run row without question types.
    """
    from vqalib.core import report

    preds = predictions.assign(answer_similarity=answer_similarity(predictions))
    tier_stats = tier_accuracy(preds).merge(
        preds.groupby(["model", "tier"])["answer_similarity"].mean().reset_index(), on=["model", "tier"])
    typed = preds.dropna(subset=["question_type"]) if "question_type" in preds else preds.iloc[:0]
    by_type = (tier_accuracy(typed, by=("model", "question_type", "tier")) if not typed.empty else
               report.not_run("no question types for these predictions", enable="add a question_type column"))
    deltas = intent_deltas(preds.dropna(subset=["intent_similarity"]), threshold=threshold)
    return tier_stats, by_type, deltas
