"""NLTK's METEOR without WordNet synonyms (a sensitivity variant of METEOR). Citation: Banerjee and Lavie (2005),
"METEOR: An Automatic Metric for MT Evaluation ...", ACL workshop. Exact variant: NLTK ``meteor_score`` on PTB
tokens, one reference, exact and Porter-stem matches only."""

from __future__ import annotations

import numpy as np


class _NoWordNet:
    """Stands in for NLTK's WordNet corpus, which no PyPI package ships: no synonym matches."""

    @staticmethod
    def synsets(*_args, **_kwargs) -> list:
        return []


def meteor_nltk(references: list[str], candidates: list[str]) -> np.ndarray:
    """NLTK's METEOR (alpha 0.9, beta 3, gamma 0.5) per aligned pair of PTB-tokenized texts, exact and Porter-stem
    matches only: WordNet cannot be installed offline, so scores are a lower bound of NLTK's full METEOR; empty is 0."""
    from nltk.translate.meteor_score import meteor_score

    return np.array([meteor_score([r.split()], c.split(), wordnet=_NoWordNet()) if r.split() and c.split() else 0.0
                     for r, c in zip(references, candidates)], dtype=float)
