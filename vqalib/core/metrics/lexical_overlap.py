"""Unigram lexical overlap of a long answer with short reference answers: 8 candidate definitions. Citation: none;
"Lex-Overlap (Unigram)" is reported undefined, so these are its plausible readings (recall, precision, Jaccard,
VQA-accuracy-style containment after Antol et al., 2015) over sets of ``[a-z0-9]+(?:'[a-z]+)?`` words."""

from __future__ import annotations

import re
from typing import Callable

import numpy as np
import pandas as pd

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def _tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _recall(reference: str, candidate: str) -> float:
    ref, cand = set(_tokens(reference)), set(_tokens(candidate))
    return len(ref & cand) / len(ref) if ref else float("nan")


def _crowd_contained(r) -> float:
    words = set(_tokens(r.whole_answer))
    hits = sum(1 for c in r.crowd_answers if _tokens(c) and set(_tokens(c)) <= words)
    return min(1.0, hits / 3)


def _majority_jaccard(r) -> float:
    a, b = set(_tokens(r.reference)), set(_tokens(r.whole_answer))
    return len(a & b) / len(a | b) if a | b else float("nan")


# name -> (description, score of one pair row: whole_answer, crowd_answers, question, reference)
LEXICAL_OVERLAPS: dict[str, tuple[str, Callable[[object], float]]] = {
    "crowd_pooled_recall": (
        "share of the word types of all 10 crowd answers (pooled) found in the long answer",
        lambda r: _recall(" ".join(r.crowd_answers), r.whole_answer)),
    "majority_recall": (
        "share of the crowd-majority answer's word types found in the long answer",
        lambda r: _recall(r.reference, r.whole_answer)),
    "crowd_recall_mean": (
        "mean over the 10 crowd answers of the share of their word types found in the long answer",
        lambda r: float(np.nanmean([_recall(c, r.whole_answer) for c in r.crowd_answers]))),
    "crowd_recall_max": (
        "best over the 10 crowd answers of the share of their word types found in the long answer",
        lambda r: float(np.nanmax([_recall(c, r.whole_answer) for c in r.crowd_answers]))),
    "crowd_contained": (
        "VQA-accuracy style: min(1, crowd answers whose words all appear in the long answer / 3)",
        _crowd_contained),
    "majority_precision": (
        "share of the long answer's word types that are in the crowd-majority answer",
        lambda r: _recall(r.whole_answer, r.reference)),
    "majority_jaccard": (
        "Jaccard index of the word types of the crowd-majority answer and the long answer",
        _majority_jaccard),
    "question_recall": (
        "share of the question's word types found in the long answer",
        lambda r: _recall(r.question, r.whole_answer)),
}
LEXICAL_OVERLAP_DEFINITIONS: dict[str, str] = {name: text for name, (text, _) in LEXICAL_OVERLAPS.items()}


DEFAULT_LEXICAL_OVERLAP = "crowd_pooled_recall"


def lexical_overlap(pairs: pd.DataFrame, *, definition: str = DEFAULT_LEXICAL_OVERLAP) -> np.ndarray:
    """Unigram lexical overlap of each long answer under one definition (NaN where the reference has no word).

    Parameters
    ----------
    pairs : DataFrame
        One row per long answer: ``whole_answer``, ``crowd_answers``, ``question``, ``reference`` (majority answer).
    definition : str
        A key of :data:`LEXICAL_OVERLAPS`.
    """
    if definition not in LEXICAL_OVERLAP_DEFINITIONS:
        raise ValueError(f"unknown definition {definition!r}; known: {list(LEXICAL_OVERLAP_DEFINITIONS)}")
    score = LEXICAL_OVERLAPS[definition][1]
    return np.asarray([score(r) for r in pairs.itertuples(index=False)], dtype=float)
