"""Tables of the offline classifier for notebook 05 (VizWiz-LF Tables 9-10 layout, Table 5 re-derived, §7)."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from vqalib.papers.vizwiz_lf import taxonomy
from vqalib.papers.vizwiz_lf.abstention import abstention_metrics
from vqalib.papers.vizwiz_lf.classifier_cv import answer_decisions

#: per kind: the paper's key column of Tables 9 (roles) and 10 (information sources)
PAPER_KEYS = {"role": "role", "info": "info_source"}
_PAPER_NAMES = {"role": taxonomy.paper_role_name, "info": taxonomy.paper_info_name}


def paper_f1_rows(scores, kind: str) -> pd.DataFrame:
    """Cross-validated F1 (subset "all") in the layout of VizWiz-LF Table 9 (``kind="role"``) or 10 (``"info"``).

    Parameters
    ----------
    scores : pandas.DataFrame, CVResult, or a list of them
        ``CVResult.scores`` or the ``CVResult``; a list is stacked, None entries skipped.
    kind : {"role", "info"}
    """
    name = _PAPER_NAMES[kind]
    if isinstance(scores, (list, tuple)):
        scores = pd.concat([getattr(s, "scores", s) for s in scores if s is not None], ignore_index=True)
    scores = getattr(scores, "scores", scores)
    ours = scores[scores["subset"] == "all"].copy()
    ours[PAPER_KEYS[kind]] = ours["label"].map(lambda x: "Average" if x == "Weighted average" else name(x))
    ours["model"] = ours["model"].str.replace(r"^Random.*", "Random", regex=True)
    return ours.drop(columns=["label", "subset"])


def f1_overview(results: Mapping) -> pd.DataFrame:
    """All cross-validated F1 scores, rows (kind, label) by columns (model, subset), 3 decimals (Tables 9-10).

    Parameters
    ----------
    results : mapping of str to CVResult, pandas.DataFrame or a list of them
        Per kind, a ``CVResult`` or its ``scores``, or several (None entries skipped).
    """
    scores = pd.concat([getattr(r, "scores", r).assign(kind=k) for k, several in results.items()
                        for r in (several if isinstance(several, (list, tuple)) else [several]) if r is not None])
    return scores.pivot_table(index=["kind", "label"], columns=["model", "subset"], values="f1",
                              sort=False).round(3)


def agreement_by_classifier(results: Mapping) -> pd.DataFrame:
    """Per classifier and source, abstention agreement of out-of-fold roles with the labels (VizWiz-LF §7, Table 5).

    Parameters
    ----------
    results : mapping of str to CVResult
        Per classifier name, its role cross-validation.
    """
    from vqalib.papers.vizwiz_lf.classifier_cv import abstention_agreement

    frames = [abstention_agreement(result.predictions).assign(classifier=name) for name, result in results.items()]
    table = pd.concat(frames, ignore_index=True)
    return table[["classifier", *[c for c in table.columns if c != "classifier"]]]


def rederived_abstention(answers: pd.DataFrame, predictions: pd.DataFrame, agreement: pd.DataFrame) -> pd.DataFrame:
    """VizWiz-LF Table 5's vanilla metrics per source with abstention decided by the offline classifier (§7).

    Parameters
    ----------
    answers : pandas.DataFrame
        Answers with ``source``, ``question_id`` and ``answerability``.
    predictions : pandas.DataFrame
        Out-of-fold role predictions; answers without any do not abstain.
    agreement : pandas.DataFrame
        ``abstention_agreement`` of the predictions.
    """
    predicted = (answer_decisions(predictions)[["source", "question_id", "by_predictions"]]
                 .rename(columns={"by_predictions": "abstains_predicted"}))
    decided = (answers.merge(predicted, on=["source", "question_id"], how="left")
               .fillna({"abstains_predicted": False}))
    return agreement.merge(abstention_metrics(decided, decision="abstains_predicted"), on="source")


def next_answer_kappa_text(agreement: pd.DataFrame, *, source: str = "GPT-4V") -> str:
    """One sentence on a source's labels vs the classifier, own vs next answer, or ``""`` (VizWiz-LF Table 5, §7).

    Parameters
    ----------
    agreement : pandas.DataFrame
        ``abstention_agreement`` output (``kappa``, ``kappa_next_answer`` per ``source``).
    source : str
    """
    if source not in set(agreement["source"]):
        return ""
    row = agreement.set_index("source").loc[source]
    return (f"{source} labels vs the classifier: kappa {row['kappa']:.2f} with their own answer, "
            f"{row['kappa_next_answer']:.2f} with the next answer in the file")


ABSTENTION_CRITERION = 0.90  # the bar for "the classifier's abstention agrees with the labels" (Table 5)


def abstention_agreement_summary(table: pd.DataFrame, *, criterion: float = ABSTENTION_CRITERION) -> dict:
    """Sources whose offline-classifier abstention agrees with the labels (VizWiz-LF Table 5; README status).

    Parameters
    ----------
    table : DataFrame
        The saved table ``vizwiz-lf_table05_abstention_offline_classifier``.
    criterion : float
        The agreement a source must reach.

    Returns
    -------
    dict
        ``criterion``, ``n_reached`` of ``n`` sources, the expert's agreement with interval, and GPT-4V's.
    """
    table = table.set_index("source")
    return {"criterion": criterion, "n_reached": int((table["agreement"] >= criterion).sum()), "n": len(table),
            "expert": table.at["Expert", "agreement"], "expert_low": table.at["Expert", "agreement_ci_low"],
            "expert_high": table.at["Expert", "agreement_ci_high"], "gpt4v": table.at["GPT-4V", "agreement"]}
