"""METEOR as NLTK implements it, two variants: ``METEOR (NLTK, no WordNet)`` and ``METEOR (NLTK, WordNet)``.
Citation: Banerjee and Lavie (2005), "METEOR: An Automatic Metric for MT Evaluation ...", ACL workshop. Exact
variants: NLTK ``meteor_score`` on PTB tokens, one reference; exact and Porter-stem matches only (offline, the
default), or with WordNet synonym matches too, where NLTK's WordNet data is installed (online download)."""

from __future__ import annotations

import numpy as np

WORDNET_DOWNLOAD = "python -m nltk.downloader wordnet"  # online: NLTK's downloader, into ~/nltk_data


class _NoWordNet:
    """Stands in for NLTK's WordNet corpus, which no PyPI package ships: no synonym matches."""

    @staticmethod
    def synsets(*_args, **_kwargs) -> list:
        return []


def wordnet_found() -> bool:
    """Whether NLTK's WordNet data is installed (looked up in ``nltk.data.path``, never downloaded)."""
    import nltk

    try:
        nltk.data.find("corpora/wordnet.zip")
    except LookupError:
        try:
            nltk.data.find("corpora/wordnet")
        except LookupError:
            return False
    return True


def _scores(references: list[str], candidates: list[str], wordnet) -> np.ndarray:
    from nltk.translate.meteor_score import meteor_score

    return np.array([meteor_score([r.split()], c.split(), wordnet=wordnet) if r.split() and c.split() else 0.0
                     for r, c in zip(references, candidates)], dtype=float)


def meteor_nltk(references: list[str], candidates: list[str]) -> np.ndarray:
    """METEOR (NLTK, no WordNet): alpha 0.9, beta 3, gamma 0.5, per aligned pair of PTB-tokenized texts, exact and
    Porter-stem matches only, a lower bound of the WordNet variant's scores; empty is 0."""
    return _scores(references, candidates, _NoWordNet())


def meteor_nltk_wordnet(references: list[str], candidates: list[str]) -> np.ndarray:
    """METEOR (NLTK, WordNet): synonym matches too, per aligned pair; without WordNet data installed a ValueError
    saying how to get it (nothing is downloaded here)."""
    if not wordnet_found():
        raise ValueError("METEOR (NLTK, WordNet) needs NLTK's WordNet data, not found in nltk.data.path: run "
                         f"`{WORDNET_DOWNLOAD}` online, or leave VQALIB_METEOR_WORDNET unset")
    from nltk.corpus import wordnet

    return _scores(references, candidates, wordnet)
