"""How noisy the released VizWiz-LF sentence labels are (§4, A.2.2; §7 abstention labels): the checks behind
leaving GPT-4V's sentence labels out of training (:data:`~vqalib.papers.vizwiz_lf.classifier.UNTRUSTED_SOURCES`)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
from scipy.optimize import linear_sum_assignment
from sklearn.metrics import f1_score

from vqalib.papers.vizwiz_lf import taxonomy
from vqalib.papers.vizwiz_lf.abstention import abstains
from vqalib.core.encoders import DECIMALS
from vqalib.papers.vizwiz_lf.classifier import UNTRUSTED_SOURCES
from vqalib.papers.vizwiz_lf.classifier_features import _labels, label_matrix

FAILURE_WORDING = re.compile(  # label_noise(): wording that can express an answer failure
    r"blur|not clear|unclear|unable|can.?t|cannot|difficult|hard to|not possible|impossible|sorry|obscur"
    r"|not visible|without more|not sure|out of focus|too dark|partially|cut off|i don.?t"
    r"|does not (?:show|appear|contain|provide)|no (?:text|visible)|not (?:legible|readable)",
    re.IGNORECASE)



def normalise_text(text: str | None) -> str:
    """Lower case, letters and digits only, single spaces (duplicate-sentence matching, A.2.2); None gives ``""``."""
    return " ".join(re.sub(r"[^a-z0-9]+", " ", (text or "").lower()).split())


def _duplicate_pairs(sentences: pd.DataFrame, *, kind: str) -> tuple[np.ndarray, np.ndarray, pd.DataFrame]:
    """Every ordered pair of copies of the same normalised sentence: labels of each copy."""
    frame = sentences.assign(_norm=sentences["sentence"].map(normalise_text)).reset_index(drop=True)
    frame = frame[frame["_norm"] != ""]
    truth = label_matrix(frame, kind=kind)
    first, second = [], []
    for rows in frame.groupby("_norm").indices.values():
        first += [i for i in rows for j in rows if i != j]
        second += [j for i in rows for j in rows if i != j]
    sources = pd.DataFrame({"a": frame["source"].to_numpy()[first], "b": frame["source"].to_numpy()[second]})
    return truth[first], truth[second], sources


def misaligned_answers(units: pd.DataFrame, probabilities: np.ndarray, truth: np.ndarray, *,
                       margin: float = 2.0) -> pd.DataFrame:
    """Per answer of 2+ sentences, whether its label lists fit its sentences better in another order (§4, A.2.2):
    lists re-assigned by maximum held-out likelihood (Hungarian algorithm); misaligned when the gain exceeds
    ``margin`` nats, ``rotated`` when the best order is a cyclic shift."""
    p = np.clip(probabilities, 1e-4, 1 - 1e-4)
    log_p, log_q = np.log(p), np.log(1 - p)
    rows = []
    for (source, question_id), idx in units.groupby(["source", "question_id"], sort=False).indices.items():
        if len(idx) < 2:
            continue
        idx = idx[np.argsort(units["sentence_index"].to_numpy()[idx], kind="stable")]
        # cost[i, j]: -log-likelihood of label list j on sentence i; rounded so equal orders tie on every machine
        cost = np.round(-(log_p[idx] @ truth[idx].T + log_q[idx] @ (1 - truth[idx]).T), DECIMALS)
        _, best = linear_sum_assignment(cost)
        gain = float(np.trace(cost) - cost[np.arange(len(idx)), best].sum())
        shift = int(best[0])  # a cyclic shift moves every list by the same offset
        cyclic = shift != 0 and bool(np.all(best == (np.arange(len(idx)) + shift) % len(idx)))
        rows.append({"source": source, "question_id": question_id, "n_sentences": len(idx), "gain": gain,
                     "misaligned": gain > margin, "rotated": gain > margin and cyclic})
    return pd.DataFrame(rows)


def label_noise(sentences: pd.DataFrame, *, answers: pd.DataFrame | None = None,
                predictions: pd.DataFrame | None = None, margin: float = 2.0) -> pd.DataFrame:
    """How noisy the released sentence labels are, and what that bounds (§4, A.2.2): F1 and exact agreement between
    copies of one sentence (a rough ceiling for a text-only classifier); with ``predictions``, misaligned/rotated
    answers; with ``answers``, Answer Failure labels on answers without failure wording (§7).

    Parameters
    ----------
    sentences : pandas.DataFrame
    answers : pandas.DataFrame, optional
    predictions : pandas.DataFrame, optional
        Out-of-fold predictions with ``p_<label>``.
    margin : float, default 2.0
        As in :func:`misaligned_answers`.
    """
    rows = []
    for kind in ("role", "info"):
        first, second, sources = _duplicate_pairs(sentences, kind=kind)
        for source in ["all", *dict.fromkeys(sentences["source"])]:
            mask = np.ones(len(sources), dtype=bool) if source == "all" else (sources["a"] == source).to_numpy()
            if not mask.any():
                continue
            rows.append({"measure": "duplicate_consistency_f1", "kind": kind, "source": source, "n": int(mask.sum()),
                         "value": f1_score(first[mask], second[mask], average="weighted", zero_division=0)})
            rows.append({"measure": "duplicate_exact_agreement", "kind": kind, "source": source, "n": int(mask.sum()),
                         "value": float((first[mask] == second[mask]).all(axis=1).mean())})
        clean = ~(sources["a"].isin(UNTRUSTED_SOURCES) | sources["b"].isin(UNTRUSTED_SOURCES)).to_numpy()
        if clean.any():
            rows.append({"measure": "duplicate_consistency_f1", "kind": kind,
                         "source": f"all without {', '.join(UNTRUSTED_SOURCES)}", "n": int(clean.sum()),
                         "value": f1_score(first[clean], second[clean], average="weighted", zero_division=0)})
    if predictions is not None:
        kind = "role" if f"p_{taxonomy.ROLES[0]}" in predictions else "info"
        labels, _, _ = _labels(kind)
        units = predictions.reset_index(drop=True)
        truth = np.array([[label in set(r) for label in labels] for r in units["labels"]], dtype=int)
        probabilities = units[[f"p_{label}" for label in labels]].to_numpy()
        table = misaligned_answers(units, probabilities, truth, margin=margin)
        for source, group in [("all", table), *table.groupby("source", sort=False)]:
            for measure in ("misaligned", "rotated"):
                rows.append({"measure": f"{measure}_answers", "kind": kind, "source": source,
                             "n": len(group), "value": float(group[measure].mean())})
    if answers is not None:
        frame = answers.assign(abstains=abstains(answers["roles"]),
                               wording=answers["answer"].fillna("").str.contains(FAILURE_WORDING))
        for source, group in [("all", frame), *frame.groupby("source", sort=False)]:
            no_wording = group[~group["wording"]]
            share = float(no_wording["abstains"].mean()) if len(no_wording) else np.nan
            rows.append({"measure": "abstain_label_without_failure_wording", "kind": "role", "source": source,
                         "n": len(no_wording), "value": share})
    return pd.DataFrame(rows)[["measure", "kind", "source", "value", "n"]]
