"""Per-question scores of one VizWiz-LF model on the leaderboard's measures: answer words (Table 1), the share of answers
with each functional role (Table 2, both answerability groups pooled), abstention against answerability (Table 5) and
Table 4's whole-answer metrics; the released models and a scorecard get them from the same functions."""

from __future__ import annotations

import pandas as pd

from vqalib.papers.vizwiz_lf import table4, taxonomy
from vqalib.papers.vizwiz_lf.abstention import abstains

WORDS = "answer words"
ABSTENTION = "abstention accuracy"  # Table 5 abs-acc: abstains exactly when the crowd found the question unanswerable
ABSTAINS = {"unanswerable": "abstention rate, unanswerable questions",
            "answerable": "abstention rate, answerable questions"}
ROLE_SHARE = {role: f"share of answers with {taxonomy.paper_role_name(role)}" for role in taxonomy.ROLES}
RELEASED_LABELS = "released labels"
CLASSIFIER_LABELS = "classifier labels"
# per-question scores of these are 0 or 1: their intervals are a proportion's (Wilson), not a mean's
PROPORTIONS = (ABSTENTION, *ABSTAINS.values(), *ROLE_SHARE.values())
RANKED = (ABSTENTION,)  # roles, abstention rates and length describe; the papers name no better value
COLUMNS = ["metric", "reference", "question_id", "score"]


def label_measures(answers: pd.DataFrame, *, labels: str) -> pd.DataFrame:
    """Per-question abstention accuracy, abstention by answerability and role shares of labelled answers.

    Parameters
    ----------
    answers : pandas.DataFrame
        One row per answer: ``question_id``, ``answerability`` and ``roles`` (the answer's role labels).
    labels : str
        Who labelled the roles (:data:`RELEASED_LABELS`, :data:`CLASSIFIER_LABELS`), kept as ``reference``.
    """
    abstained = abstains(answers["roles"]).to_numpy()
    unanswerable = answers["answerability"].eq("unanswerable").to_numpy()
    ids = answers["question_id"].astype(int).to_numpy()
    parts = [pd.DataFrame({"metric": ABSTENTION, "question_id": ids, "score": (abstained == unanswerable) * 1.0})]
    for level, name in ABSTAINS.items():
        mask = answers["answerability"].eq(level).to_numpy()
        parts.append(pd.DataFrame({"metric": name, "question_id": ids[mask], "score": abstained[mask] * 1.0}))
    sets = answers["roles"].map(set)
    for role, name in ROLE_SHARE.items():
        parts.append(pd.DataFrame({"metric": name, "question_id": ids,
                                   "score": sets.map(lambda s, r=role: r in s).to_numpy() * 1.0}))
    return pd.concat(parts, ignore_index=True).assign(reference=labels)[COLUMNS]


def word_measures(answers: pd.DataFrame) -> pd.DataFrame:
    """Per-question answer words (Table 1's counting).

    Parameters
    ----------
    answers : pandas.DataFrame
        One row per answer: ``question_id``, ``answer_words``.
    """
    return pd.DataFrame({"metric": WORDS, "reference": "", "question_id": answers["question_id"].astype(int).to_numpy(),
                         "score": answers["answer_words"].to_numpy(dtype=float)})[COLUMNS]


def table4_measures(scores: pd.DataFrame, *, metrics: tuple[str, ...] = ("rouge", "meteor", "bertscore", "lave")
                    ) -> pd.DataFrame:
    """Per-question Table 4 scores of the whole answer (``l_c``) by the paper's metric names.

    Parameters
    ----------
    scores : pandas.DataFrame
        ``table4.score_pairs`` (or ``score_with_judge``) rows of one model.
    metrics : tuple of str
        The metric ids kept.
    """
    whole = scores[(scores["candidate_kind"] == "l_c") & scores["metric"].isin(metrics)].dropna(subset=["score"])
    return pd.DataFrame({"metric": whole["metric"].map(table4.METRIC_NAMES).to_numpy(),
                         "reference": whole["reference_kind"].to_numpy(),
                         "question_id": whole["question_id"].astype(int).to_numpy(),
                         "score": whole["score"].to_numpy(dtype=float)})[COLUMNS]
