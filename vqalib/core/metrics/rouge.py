"""ROUGE-L: the F-measure of the longest common subsequence of a candidate and a reference.

Citation: Lin, C.-Y. (2004). "ROUGE: A Package for Automatic Evaluation of Summaries". Text Summarization
Branches Out (ACL workshop).

Exact variant: ``pycocoevalcap.rouge.rouge.Rouge.calc_score`` with one candidate and one reference: LCS-based
precision and recall over whitespace tokens, F = (1 + beta^2) P R / (R + beta^2 P) with beta = 1.2; inputs are
PTB-tokenized texts (:func:`vqalib.core.metrics.tokenize.ptb_tokenize`).
"""

from __future__ import annotations

import numpy as np


def rouge_l(references: list[str], candidates: list[str]) -> np.ndarray:
    """ROUGE-L F (pycocoevalcap, beta 1.2) per pair of PTB-tokenized texts.

    Parameters
    ----------
    references, candidates : list of str
        Aligned PTB-tokenized texts (:func:`vqalib.core.metrics.tokenize.ptb_tokenize`).

    Returns
    -------
    ndarray
        One float per pair.
    """
    from pycocoevalcap.rouge.rouge import Rouge

    scorer = Rouge()
    return np.array([scorer.calc_score([c], [r]) for r, c in zip(references, candidates)], dtype=float)
