"""ROUGE-L: the F-measure of the longest common subsequence of a candidate and a reference. Citation: Lin (2004),
"ROUGE: A Package for Automatic Evaluation of Summaries". Exact variant: pycocoevalcap's ``Rouge.calc_score``,
one reference, F with beta = 1.2 over PTB tokens."""

from __future__ import annotations

import numpy as np


def rouge_l(references: list[str], candidates: list[str]) -> np.ndarray:
    """ROUGE-L F (pycocoevalcap, beta 1.2) per aligned pair of PTB-tokenized texts."""
    from pycocoevalcap.rouge.rouge import Rouge

    scorer = Rouge()
    return np.array([scorer.calc_score([c], [r]) for r, c in zip(references, candidates)], dtype=float)
