"""The offline role / information-source classifier and its training (VizWiz-LF §4, A.2.2, Tables 9-10).

An MLP (or logistic regression) with per-label thresholds tuned on grouped inner folds; training leaves out
:data:`UNTRUSTED_SOURCES`, whose sentence labels are misaligned."""

from __future__ import annotations

import hashlib
import platform
from pathlib import Path

import numpy as np
import pandas as pd
import sklearn
from sklearn.base import BaseEstimator, ClassifierMixin, MultiOutputMixin
from sklearn.compose import ColumnTransformer
from sklearn.decomposition import PCA
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score
from sklearn.model_selection import GroupKFold
from sklearn.multiclass import OneVsRestClassifier
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from vqalib.core import config
from vqalib.core.io import project_root
from vqalib.core.encoders import DECIMALS
from vqalib.papers.vizwiz_lf.classifier_features import (
    CONTEXT_FEATURES, EMBED_DIM, ENCODER_NAME, HIDDEN_LAYERS, PACKAGED_ENCODER, QUESTION_COMPONENTS, _labels,
    encoder_spec, feature_matrix, label_matrix, sentence_units)

UNTRUSTED_SOURCES: tuple[str, ...] = ("GPT-4V",)  # sentence labels misaligned: see label_noise()
MODEL_DIR = project_root() / "data" / "models"
MODEL_PATHS = {"role": MODEL_DIR / "vizwiz-lf_role_classifier.skops",
               "info": MODEL_DIR / "vizwiz-lf_info_classifier.skops"}


def make_pipeline(*, estimator: str = "mlp", seed: int = 0) -> Pipeline:
    """The unfitted pipeline behind the classifiers: feature columns (question embedding via PCA), standard scaling,
    then the ``"mlp"`` or ``"logreg"`` model, seeded by ``seed`` (VizWiz-LF Tables 9-10)."""
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


class SentenceClassifier(MultiOutputMixin, ClassifierMixin, BaseEstimator):
    """The role or information-source classifier (VizWiz-LF Tables 9-10 replacement), a scikit-learn estimator: ``kind``
    "role" (at least one label per sentence) or "info"; per-label thresholds tuned on ``inner_splits`` grouped inner
    folds when ``tune`` (else 0.5); ``encoder`` names the feature encoder (recorded, never its weights)."""

    def __init__(self, kind: str = "role", *, estimator: str = "mlp", seed: int = 0, tune: bool = True,
                 inner_splits: int = 3, encoder: str = PACKAGED_ENCODER, encoder_name: str = ENCODER_NAME):
        self.kind = kind
        self.estimator = estimator
        self.seed = seed
        self.tune = tune
        self.inner_splits = inner_splits
        self.encoder = encoder
        self.encoder_name = encoder_name

    def fit(self, X: np.ndarray, Y: np.ndarray, groups=None) -> SentenceClassifier:
        """Fit the pipeline on all rows; thresholds from inner folds grouped by ``groups`` (question ids)."""
        plan = self._plan(groups, n=len(X))
        return self._from_fits(Y, plan, _fit_pipelines(X, Y, plan, estimator=self.estimator, seed=self.seed))

    def _plan(self, groups, *, n: int) -> list[tuple[np.ndarray, np.ndarray | None]]:
        """Fits on ``n`` rows: (train, held-out) per inner fold when ``tune``, then the final fit (held-out None)."""
        plan: list[tuple[np.ndarray, np.ndarray | None]] = []
        if self.tune:
            if groups is None:
                raise ValueError("tune=True needs groups (question ids) for the inner folds")
            plan += question_folds(pd.DataFrame({"question_id": np.asarray(groups)}), n_splits=self.inner_splits,
                                   seed=self.seed)
        return [*plan, (np.arange(n), None)]

    def _from_fits(self, Y: np.ndarray, plan: list, fits: list) -> SentenceClassifier:
        """Fitted state from :meth:`_plan`'s fits: thresholds tuned on the inner folds, the final pipeline."""
        labels, _, _ = _labels(self.kind)
        thresholds = np.full(len(labels), 0.5)
        if self.tune:
            held_out = np.zeros((len(Y), len(labels)))
            for (_, test), probabilities in zip(plan[:-1], fits[:-1]):
                held_out[test] = probabilities
            thresholds = tune_thresholds(held_out, Y)
        return self._set_fitted(labels=labels, pipeline=fits[-1], thresholds=thresholds,
                                min_labels=1 if self.kind == "role" else 0, metadata={})

    def _set_fitted(self, *, labels, pipeline, thresholds, min_labels, metadata) -> SentenceClassifier:
        self.labels_, self.pipeline_, self.thresholds_ = labels, pipeline, thresholds
        self.min_labels_, self.metadata_ = min_labels, metadata
        return self

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "pipeline_")

    def predict_proba(self, features: np.ndarray) -> np.ndarray:
        """Rounded probability of each label per feature row, columns in :attr:`labels` order (Tables 9-10)."""
        return _probabilities(self.pipeline, features, n_labels=len(self.labels))

    def decide(self, probabilities: np.ndarray) -> np.ndarray:
        """0/1 labels from probabilities, as :func:`decide` with this model's thresholds."""
        return decide(probabilities, thresholds=self.thresholds, min_labels=self.min_labels)

    def predict(self, features: np.ndarray) -> np.ndarray:
        """0/1 labels per feature row, columns in :attr:`labels` order."""
        return self.decide(self.predict_proba(features))

    # the fitted state under the names the classifier had before it was an estimator
    labels = property(lambda self: self.labels_)
    pipeline = property(lambda self: self.pipeline_)
    thresholds = property(lambda self: self.thresholds_)
    min_labels = property(lambda self: self.min_labels_)

    @property
    def metadata(self) -> dict:
        return self.metadata_

    @metadata.setter
    def metadata(self, value: dict) -> None:
        """Set the model's metadata (stored as ``metadata_``)."""
        self.metadata_ = value


def _probabilities(pipeline: Pipeline, features: np.ndarray, *, n_labels: int) -> np.ndarray:
    """Label probabilities rounded to ``DECIMALS``: BLAS noise (1e-14) could otherwise flip ties on another machine."""
    probabilities = np.asarray(pipeline.predict_proba(features), dtype=float)
    return np.round(probabilities.reshape(len(features), n_labels), DECIMALS)


def decide(probabilities: np.ndarray, *, thresholds: np.ndarray, min_labels: int = 1) -> np.ndarray:
    """0/1 labels: each label at or above its threshold; with ``min_labels``, a sentence without any gets its most
    probable one (VizWiz-LF A.2.2)."""
    predicted = (probabilities >= np.asarray(thresholds)).astype(int)
    if min_labels and len(predicted):
        empty = predicted.sum(axis=1) == 0
        predicted[empty, probabilities[empty].argmax(axis=1)] = 1
    return predicted


def tune_thresholds(probabilities: np.ndarray, truth: np.ndarray, *,
                    grid: np.ndarray = np.round(np.arange(0.05, 0.951, 0.025), 3)) -> np.ndarray:
    """Per-label threshold maximising that label's held-out F1 over ``grid`` (first of ties wins); 0.5 for a label
    without positives (Tables 9-10)."""
    out = np.full(truth.shape[1], 0.5)
    for j in range(truth.shape[1]):
        if truth[:, j].any():
            scores = [f1_score(truth[:, j], probabilities[:, j] >= t, zero_division=0) for t in grid]
            out[j] = grid[int(np.argmax(scores))]
    return out


def question_folds(units: pd.DataFrame, *, n_splits: int = 5, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """(train, test) row positions per fold of shuffled GroupKFold by ``question_id`` (Tables 9-10)."""
    splitter = GroupKFold(n_splits=n_splits, shuffle=True, random_state=seed)
    return [(train, test) for train, test in splitter.split(np.zeros(len(units)), groups=units["question_id"])]


def _fit_one(X: np.ndarray, Y: np.ndarray, rows: np.ndarray, held_out: np.ndarray | None, *, estimator: str,
             seed: int):
    """One pipeline fit on ``X[rows]``: the pipeline, or its rounded probabilities on ``X[held_out]``."""
    pipeline = make_pipeline(estimator=estimator, seed=seed).fit(X[rows], Y[rows])
    return pipeline if held_out is None else _probabilities(pipeline, X[held_out], n_labels=Y.shape[1])


def _fit_pipelines(X: np.ndarray, Y: np.ndarray, tasks: list, *, estimator: str, seed: int) -> list:
    """Every (rows, held-out rows) fit in joblib workers, one per core (one MLP fit leaves BLAS threads partly idle)."""
    import os

    n_jobs = min(len(tasks), os.cpu_count() or 1)
    if n_jobs <= 1:
        return [_fit_one(X, Y, rows, held_out, estimator=estimator, seed=seed) for rows, held_out in tasks]
    from joblib import Parallel, delayed

    return Parallel(n_jobs=n_jobs)(delayed(_fit_one)(X, Y, rows, held_out, estimator=estimator, seed=seed)
                                   for rows, held_out in tasks)


def _fit_row_sets(features: np.ndarray, truth: np.ndarray, units: pd.DataFrame, row_sets: list, *, kind: str,
                  seed: int, estimator: str, exclude_sources: tuple[str, ...], tune: bool, inner_splits: int,
                  encoder: str) -> list[SentenceClassifier]:
    """One classifier per set of rows, fitted on its trusted rows; all sets' fits in one batch of workers."""
    trusted = ~units["source"].isin(exclude_sources).to_numpy()
    questions = units["question_id"].to_numpy()
    planned, tasks = [], []
    for rows in map(np.asarray, row_sets):
        rows = rows[trusted[rows]]
        model = SentenceClassifier(kind, estimator=estimator, seed=seed, tune=tune, inner_splits=inner_splits,
                                   encoder=encoder)
        plan = model._plan(questions[rows], n=len(rows))
        planned.append((model, rows, plan))
        tasks += [(rows[train], None if test is None else rows[test]) for train, test in plan]
    fits = _fit_pipelines(features, truth, tasks, estimator=estimator, seed=seed)
    models, start = [], 0
    for model, rows, plan in planned:
        models.append(model._from_fits(truth[rows], plan, fits[start:start + len(plan)]))
        start += len(plan)
    return models


def train(sentences: pd.DataFrame, answers: pd.DataFrame, *, kind: str = "role", seed: int = 0,
          estimator: str = "mlp", exclude_sources: tuple[str, ...] = UNTRUSTED_SOURCES,
          tune: bool = True, inner_splits: int = 3, encoder: str | None = None,
          cache_dir: Path | None = None) -> SentenceClassifier:
    """Train the role or information-source classifier on the released labels, with its metadata (VizWiz-LF §4, Tables
    9-10); ``exclude_sources`` are not fitted on; ``encoder`` as in :func:`classifier_features.encoder_spec`."""
    units = sentence_units(sentences, answers)
    features = feature_matrix(units, encoder=encoder, cache_dir=cache_dir)
    truth = label_matrix(units, kind=kind)
    spec = encoder_spec(encoder)
    config.model_call(f"{kind} classifier training")
    [model] = _fit_row_sets(features, truth, units, [np.arange(len(units))], kind=kind, seed=seed, estimator=estimator,
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
