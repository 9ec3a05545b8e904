"""The AFGV rewrite pipeline (Methods, Implementation Details; Fig. 1): simplified and complex question rewrites.

The least frequent content word is replaced by the filtered nearest neighbour giving the lowest (simplified) or
highest (complex) Flesch-Kincaid grade; the tier rule then keeps a rewrite only if it moves the grade that way."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from vqalib.papers.afgv.intent import intent_similarity
from vqalib.papers.afgv.readability import _fk_from_counts, fk_grade, syllables, textstat_module
from vqalib.papers.afgv.tiers import TIERS, place_in_tiers
from vqalib.papers.afgv.vectors import nearest_neighbours

_PUNCTUATION = "\"'.,;:!?()[]{}<>“”‘’…"


@lru_cache(maxsize=1)
def stopwords() -> frozenset[str]:
    """English stop words (scikit-learn's list) plus question words."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS | {"what", "which", "who", "whom", "whose", "where", "when", "why", "how"})


def tokens(question: str) -> list[str]:
    """White-space tokens without surrounding punctuation, lower-cased ("t-shirt" stays one token; AFGV Methods)."""
    return [t.strip(_PUNCTUATION).lower() for t in question.split() if t.strip(_PUNCTUATION)]


def corpus_frequencies(questions: pd.Series) -> Counter:
    """Word frequencies over the question corpus, which pick the substitution target (AFGV Methods)."""
    counts: Counter = Counter()
    for q in questions:
        counts.update(tokens(q))
    return counts


def substitution_target(question: str, *, frequencies: Counter, vocabulary) -> str | None:
    """The rarest content word (3+ letters, no stop word) with a vector, first on ties, else None (AFGV Methods)."""
    stop = stopwords()
    # a target is a whole alphabetic word of 3+ letters: parts of "t-shirt" or "I'm" are not swapped
    words = [w for w in tokens(question) if w.isalpha() and len(w) >= 3 and w not in stop and w in vocabulary]
    if not words:
        return None
    return min(words, key=lambda w: (frequencies[w], words.index(w)))


@lru_cache(maxsize=None)
def _stem(word: str) -> str:
    return _porter().stem(word)


@lru_cache(maxsize=1)
def _porter():
    from nltk.stem import PorterStemmer

    return PorterStemmer()


def keep_candidate(candidate: str, *, target: str) -> bool:
    """Candidate filter: alphabetic lower-case word of 2+ letters, not a stop word nor the target or its inflection."""
    if not candidate.isalpha() or not candidate.islower() or len(candidate) < 2:
        return False
    if candidate in stopwords() or candidate == target:
        return False
    if candidate.startswith(target) or target.startswith(candidate):
        return False
    return _stem(candidate) != _stem(target)


def _replace(question: str, target: str, candidate: str) -> str:
    """The question with the first occurrence of ``target`` replaced, keeping its capital."""
    def swap(match: re.Match) -> str:
        word = match.group(0)
        return candidate.capitalize() if word[0].isupper() else candidate
    return re.sub(rf"(?<![\w'-]){re.escape(target)}(?![\w'-])", swap, question, count=1, flags=re.IGNORECASE)


@dataclass(frozen=True)
class RewriteConfig:
    """Settings of the rewrite pipeline (documented in notebook 06)."""

    topn: int = 20
    frequency: str = "wordfreq"  # candidate tie-break frequency: "wordfreq" (zipf) or "corpus"


def _vectors_digest(vectors) -> str:
    """SHA-256 of a word-vector space: every key, in order, and every value."""
    import hashlib

    digest = hashlib.sha256("\0".join(vectors.index_to_key).encode("utf-8"))
    digest.update(np.ascontiguousarray(vectors.vectors).tobytes())
    return digest.hexdigest()


def rewrite_questions(questions: pd.DataFrame, *, vectors, config: RewriteConfig = RewriteConfig(),
                      frequencies: Counter | None = None, progress: bool = True,
                      cache_dir: Path | None = None) -> pd.DataFrame:
    """Simplified and complex rewrites of each question, three rows each (AFGV pipeline, Fig. 1), cached by content.

    A question without usable target or candidate keeps its original text in every tier, marked in ``status``.

    Parameters
    ----------
    questions : pandas.DataFrame
        ``question_id`` and ``question``.
    vectors : gensim.models.KeyedVectors
    config : RewriteConfig, default RewriteConfig()
        Neighbours per target (``topn``) and the candidates' tie-break frequency.
    frequencies : collections.Counter, optional
        Target frequencies (default: :func:`corpus_frequencies` of ``questions``).
    progress : bool, default True
        Show a progress bar.
    cache_dir : Path, optional
        The cache folder (default ``$VQALIB_CACHE_DIR/afgv/rewrites``).
    """
    from vqalib.core.caches import cached_frame, content_key
    from vqalib.core.io import cache_root

    key = content_key(code=("vqalib",), packages=("textstat", "wordfreq", "nltk", "numpy"),
                      questions=questions[["question_id", "question"]].reset_index(drop=True),
                      vectors=_vectors_digest(vectors), config=vars(config),
                      frequencies=None if frequencies is None else sorted(frequencies.items()))
    return cached_frame(Path(cache_dir or cache_root("afgv", "rewrites")) / f"{key[:32]}.parquet", kind="rewrite cache",
                        compute=lambda: _rewrite_questions(questions, vectors=vectors, config=config,
                                                           frequencies=frequencies, progress=progress))


def _rewrite_questions(questions: pd.DataFrame, *, vectors, config: RewriteConfig, frequencies: Counter | None,
                       progress: bool) -> pd.DataFrame:
    """:func:`rewrite_questions` without its cache."""
    from tqdm import tqdm

    textstat = textstat_module()
    frequencies = frequencies if frequencies is not None else corpus_frequencies(questions["question"])
    vocab = vectors.key_to_index
    targets = [substitution_target(q, frequencies=frequencies, vocabulary=vocab) for q in questions["question"]]
    neighbours = nearest_neighbours([t for t in targets if t], vectors=vectors, topn=config.topn)
    if config.frequency == "wordfreq":
        from wordfreq import zipf_frequency

        freq = lambda w: zipf_frequency(w, "en")  # noqa: E731
    else:
        freq = lambda w: float(frequencies[w])  # noqa: E731
    syllable_cache: dict[str, int] = {}

    def syl(word: str) -> int:
        if word not in syllable_cache:
            syllable_cache[word] = syllables(word)
        return syllable_cache[word]

    rows = []
    iterator = zip(questions["question_id"], questions["question"], targets)
    for qid, question, target in tqdm(iterator, total=len(questions), desc="rewrites", disable=not progress):
        base_syll = int(textstat.syllable_count(question))
        n_words = int(textstat.lexicon_count(question))
        n_sent = max(int(textstat.sentence_count(question)), 1)
        base = {"question_id": qid, "original": question, "target": target}
        candidates = [c for c in neighbours.get(target, []) if keep_candidate(c, target=target)] if target else []
        baseline = {**base, "tier": "baseline", "question": question, "replacement": None,
                    "fk_grade": fk_grade(question), "syllables": base_syll, "words": n_words, "status": "original"}
        rows.append(baseline)
        if not candidates:
            status = "no content word with a vector" if target is None else "no candidate after filtering"
            rows += [{**baseline, "tier": tier, "status": status} for tier in ("simplified", "complex")]
            continue
        cand_syll = np.array([syl(c) for c in candidates])
        totals = base_syll - syl(target) + cand_syll
        grades = _fk_from_counts(np.full(len(candidates), n_words), np.full(len(candidates), n_sent), totals)
        lengths = np.array([len(c) for c in candidates])
        freqs = np.array([freq(c) for c in candidates])
        simple = np.lexsort((-freqs, lengths, grades))[0]   # lowest grade, shorter, more frequent
        complex_ = np.lexsort((freqs, -lengths, -grades))[0]  # highest grade, longer, less frequent
        for tier, k in (("simplified", simple), ("complex", complex_)):
            rewritten = _replace(question, target, candidates[k])
            rows.append({**base, "tier": tier, "question": rewritten, "replacement": candidates[k],
                         "fk_grade": float(grades[k]), "syllables": int(totals[k]), "words": n_words,
                         "status": "rewritten"})
    out = pd.DataFrame(rows)
    out["tier"] = pd.Categorical(out["tier"], categories=list(TIERS), ordered=True)
    out = out.sort_values(["question_id", "tier"], kind="stable").reset_index(drop=True)
    return place_in_tiers(out)


def rewrite_question_sets(question_sets: dict[str, pd.DataFrame], *, vectors,
                          config: RewriteConfig = RewriteConfig()) -> dict[str, pd.DataFrame]:
    """:func:`rewrite_questions` of each question set by name, plus ``intent_similarity``, ``question_set`` (Methods).

    Parameters
    ----------
    question_sets : dict
        Name -> questions (``question_id``, ``question``[, ``question_type``]).
    vectors : gensim.models.KeyedVectors
    config : RewriteConfig
    """
    out = {}
    for name, questions in question_sets.items():
        rewrites = rewrite_questions(questions, vectors=vectors, config=config)
        rewrites["intent_similarity"] = intent_similarity(rewrites)
        out[name] = rewrites.assign(question_set=name)
    return out

