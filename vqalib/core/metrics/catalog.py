"""The metric catalog: every reference-based text metric with its citation, exact variant, range and direction,
and one call shape for all of them (:meth:`Metric.score` on a DataFrame of ``reference``/``candidate`` pairs)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from vqalib.core.metrics.bertscore import Backbone, bertscore_f1
from vqalib.core.metrics.lexical_overlap import DEFAULT_LEXICAL_OVERLAP, lexical_overlap
from vqalib.core.metrics.meteor import meteor
from vqalib.core.metrics.meteor_nltk import meteor_nltk, meteor_nltk_wordnet
from vqalib.core.metrics.rouge import rouge_l

NLTK_NO_WORDNET = "METEOR (NLTK, no WordNet)"  # the offline variant's one name: tables, prose, explanations
NLTK_WORDNET = "METEOR (NLTK, WordNet)"  # as NLTK ships it, with WordNet synonyms: needs its data (online)
TextScorer = Callable[[list[str], list[str], "Backbone | None"], np.ndarray]


@dataclass(frozen=True)
class Metric:
    """One reference-based metric: what it is, where it comes from, and how to call it."""

    name: str  # the key code and caches use
    citation: str
    variant: str  # the exact variant implemented: the ``implementation`` column of the tables it scores
    low: float
    high: float
    higher_is_better: bool
    packages: tuple[str, ...]  # libraries whose versions name its cached scores
    ptb_tokenized: bool  # both texts PTB-tokenized before scoring
    texts: TextScorer | None  # scorer of aligned text pairs; None for a metric of other pair columns (Lex-Overlap)
    uses_backbone: bool = False  # a model backbone (BERTScore) names its scores and cache entries
    label: str = ""  # the variant's one name in tables and prose, where it is not the paper's metric name

    def score_texts(self, references: Sequence[str], candidates: Sequence[str],
                    backbone: Backbone | None = None) -> np.ndarray:
        """Scores of aligned raw text pairs, PTB-tokenized first where the metric says so; a pair tokenization
        empties scores 0 (METEOR's Java side cannot score an empty segment); ``backbone`` is BERTScore's."""
        if self.texts is None:
            raise ValueError(f"metric {self.name!r} scores pair rows, not text pairs: it has no per-pair cache")
        if not self.ptb_tokenized:
            return np.asarray(self.texts(list(references), list(candidates), backbone), dtype=np.float64)
        from vqalib.core.metrics.tokenize import ptb_tokenize

        tokens = ptb_tokenize(list(references) + list(candidates))
        refs, cands = tokens[:len(references)], tokens[len(references):]
        empty = np.array([not r.strip() or not c.strip() for r, c in zip(refs, cands)], dtype=bool)
        scores = self.texts([r if r.strip() else "." for r in refs], [c if c.strip() else "." for c in cands],
                            backbone)
        scores[empty] = 0.0
        return scores

    def score(self, pairs: pd.DataFrame, *, backbone: Backbone | None = None,
              definition: str = DEFAULT_LEXICAL_OVERLAP) -> np.ndarray:
        """Scores (float64, NaN where undefined) of the metric for each ``reference``/``candidate`` pair, uncached;
        Lex-Overlap reads its own columns and ``definition``, BERTScore its ``backbone``."""
        if self.texts is None:
            return lexical_overlap(pairs, definition=definition)
        return self.score_texts(list(pairs["reference"].astype(str)), list(pairs["candidate"].astype(str)), backbone)


METRICS: dict[str, Metric] = {m.name: m for m in (
    Metric("lex_overlap", citation="none: reported without a definition",
           variant="unigram recall of the pooled crowd answers' word types in the long answer",
           low=0.0, high=1.0, higher_is_better=True, packages=(), ptb_tokenized=False, texts=None),
    Metric("rouge", citation="Lin, 2004 (ROUGE); pycocoevalcap",
           variant="pycocoevalcap ROUGE-L (LCS F, beta=1.2), PTB tokens",
           low=0.0, high=1.0, higher_is_better=True, packages=("pycocoevalcap",), ptb_tokenized=True,
           texts=lambda refs, cands, backbone: rouge_l(refs, cands)),
    Metric("meteor", citation="Denkowski & Lavie, 2014 (METEOR 1.5); pycocoevalcap's jar",
           variant="pycocoevalcap METEOR 1.5 (-l en -norm), segment mean, PTB tokens",
           low=0.0, high=1.0, higher_is_better=True, packages=("pycocoevalcap",), ptb_tokenized=True,
           texts=lambda refs, cands, backbone: meteor(refs, cands)),
    Metric("meteor_nltk", citation="Banerjee & Lavie, 2005 (METEOR); NLTK",
           variant=f"{NLTK_NO_WORDNET}: exact + Porter-stem matches only, PTB tokens",
           low=0.0, high=1.0, higher_is_better=True, packages=("pycocoevalcap", "nltk"), ptb_tokenized=True,
           texts=lambda refs, cands, backbone: meteor_nltk(refs, cands), label=NLTK_NO_WORDNET),
    # online only: scored where NLTK's WordNet data is installed (VQALIB_METEOR_WORDNET; meteor_nltk.wordnet_found)
    Metric("meteor_nltk_wordnet", citation="Banerjee & Lavie, 2005 (METEOR); NLTK; WordNet 3.0",
           variant=f"{NLTK_WORDNET}: exact + Porter-stem + WordNet synonym matches, PTB tokens",
           low=0.0, high=1.0, higher_is_better=True, packages=("pycocoevalcap", "nltk"), ptb_tokenized=True,
           texts=lambda refs, cands, backbone: meteor_nltk_wordnet(refs, cands), label=NLTK_WORDNET),
    Metric("bertscore", citation="Zhang et al., 2020 (BERTScore); bert-score",
           variant="bert-score F1",  # no IDF, no baseline rescaling, float64 backbone rounded to 1e-6
           low=-1.0, high=1.0, higher_is_better=True, packages=("bert-score", "transformers", "torch"),
           ptb_tokenized=False, texts=lambda refs, cands, backbone: bertscore_f1(refs, cands, backbone=backbone),
           uses_backbone=True),
)}


def metric(name: str) -> Metric:
    """The catalog entry of ``name`` (an unknown name is a ``ValueError``).

    Parameters
    ----------
    name : str
        A key of :data:`METRICS`.
    """
    if name not in METRICS:
        raise ValueError(f"unknown metric {name!r}; known: {', '.join(METRICS)}")
    return METRICS[name]
