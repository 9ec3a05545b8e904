"""Grouped cross-validation of the offline classifiers and their abstention agreement (VizWiz-LF Tables 9-10, 5).

Out-of-fold results are ``.npz`` arrays named by a hash of their inputs: the release's are committed in
``data/models/cv/``, any other is cached on disk."""

from __future__ import annotations

import hashlib
import io
import time
import warnings
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import sklearn
from scipy import stats as scistats
from sklearn.metrics import cohen_kappa_score, f1_score

from vqalib.papers.vizwiz_lf.abstention import abstains
from vqalib.core import config
from vqalib.core.inference import grouped_f1_intervals
from vqalib.papers.vizwiz_lf.classifier import MODEL_DIR, UNTRUSTED_SOURCES, _fit_row_sets, question_folds
from vqalib.papers.vizwiz_lf.classifier_features import (
    FEATURES_VERSION, HIDDEN_LAYERS, PACKAGED_ENCODER, _labels, encoder_spec, feature_matrix, label_matrix,
    sentence_units)

@dataclass
class CVResult:
    """Cross-validated scores (Tables 9-10 layout), per-source scores, out-of-fold predictions."""

    scores: pd.DataFrame  # model, subset, label, f1, ci_low, ci_high (the classifier's), support; "Weighted average" included
    by_source: pd.DataFrame  # source, model, weighted_f1, n_sentences
    predictions: pd.DataFrame  # one row per sentence: ids, fold, labels, predicted, p_<label>
    thresholds: pd.DataFrame  # fold x label
    seconds: float
    fits_key: str = ""  # name (without .npz) of the out-of-fold result: out_of_fold_key()


def f1_table(truth: np.ndarray, predicted: np.ndarray, *, labels: tuple[str, ...]) -> pd.DataFrame:
    """Per-label F1 and support, then the support-weighted "Weighted average" row (VizWiz-LF Tables 9-10)."""
    per_label = f1_score(truth, predicted, average=None, labels=range(len(labels)), zero_division=0)
    support = truth.sum(axis=0)
    weighted = f1_score(truth, predicted, average="weighted", zero_division=0) if support.sum() else 0.0
    return pd.DataFrame({"label": [*labels, "Weighted average"], "f1": [*per_label, weighted],
                         "support": [*support, support.sum()]})


def majority_predictions(n: int, *, kind: str) -> np.ndarray:
    """The Majority baseline for ``n`` sentences: "Answer" for roles, "Image Content" for sources (Tables 9-10)."""
    labels, _, majority = _labels(kind)
    out = np.zeros((n, len(labels)), dtype=int)
    out[:, labels.index(majority)] = 1
    return out


def random_predictions(train_truth: np.ndarray, n: int, *, rng: np.random.Generator) -> np.ndarray:
    """Random baseline: each of ``n`` sentences gets a random training sentence's labels, drawn by ``rng`` (Tables
    9-10)."""
    return train_truth[rng.integers(0, len(train_truth), size=n)]


def _random_f1(truth: np.ndarray, folds: list, masks: dict[str, np.ndarray], *, labels: tuple[str, ...], seed: int,
               n_random: int, cache_dir: Path | None = None) -> pd.DataFrame:
    """The Random baseline's F1 table per subset (mean over ``n_random`` draws; Tables 9-10), cached by content."""
    from vqalib.core.caches import cached_frame, content_key
    from vqalib.core.io import cache_root

    def compute() -> pd.DataFrame:
        rng = np.random.default_rng(seed)
        randoms = np.zeros((n_random, *truth.shape), dtype=int)
        for train_rows, test_rows in folds:
            for k in range(n_random):
                randoms[k, test_rows] = random_predictions(truth[train_rows], len(test_rows), rng=rng)
        tables = []
        for subset, mask in masks.items():
            draws = [f1_table(truth[mask], r[mask], labels=labels) for r in randoms]
            tables.append(draws[0].assign(f1=np.mean([d["f1"] for d in draws], axis=0), subset=subset))
        return pd.concat(tables, ignore_index=True)

    key = content_key(code=("vqalib",), packages=("numpy", "scikit-learn"), truth=np.asarray(truth),
                      tests=[np.asarray(test).tolist() for _, test in folds],  # a fold's training rows: the rest
                      masks={k: np.asarray(v, dtype=int).tolist() for k, v in masks.items()}, labels=list(labels),
                      seed=seed, n_random=n_random)
    return cached_frame(Path(cache_dir or cache_root("classify-cv")) / "random" / f"{key[:32]}.parquet",
                        kind="Random baseline cache", compute=compute)


CV_CACHE_VERSION = "2"  # 2: named by the feature inputs. Bump when the fitting changes: stored results are then unused
CV_FITS_DIR = MODEL_DIR / "cv"  # committed out-of-fold results of the release's cross-validation (Tables 9-10)
REFIT_ENV = "VQALIB_REFIT"
_OOF_NAMES = ("probabilities", "predicted", "fold_of", "thresholds")


FEATURE_INPUTS = ("answer_id", "sentence_index", "sentence", "question")  # what feature_matrix reads of a unit


def out_of_fold_key(units: pd.DataFrame, truth: np.ndarray, *, folds: list, params: dict) -> str:
    """Name of a cross-validation's out-of-fold results: 32 hex digits of a SHA-256 of every input (Tables 9-10); the
    features' texts and encoder are hashed, not the features, so a stored result is found without embedding."""
    from vqalib.core.encoders import DECIMALS, EMBED_VERSION, model_identity

    digest = hashlib.sha256()
    columns = [units[name].astype(str).tolist() for name in ("source", *FEATURE_INPUTS)]
    # row by row as str (a 2-D to_numpy(dtype="U") of Arrow strings gave the same in 18x the time)
    digest.update("\x1f".join(str(value) for row in zip(*columns) for value in row).encode("utf-8"))
    for array in (truth, *[np.asarray(rows) for _, rows in folds]):
        digest.update(np.ascontiguousarray(array).tobytes())
    spec = params.get("encoder")
    encoder = model_identity(None if spec in (None, PACKAGED_ENCODER) else spec)[1]
    digest.update(repr((sorted(params.items()), encoder, HIDDEN_LAYERS, DECIMALS, EMBED_VERSION, FEATURES_VERSION,
                        sklearn.__version__, np.__version__, CV_CACHE_VERSION)).encode())
    return digest.hexdigest()[:32]


def _read_out_of_fold(path: Path, shapes: list[tuple], *, sealed: bool) -> tuple | None:
    """The four arrays of a stored result (no pickle), or None when missing or malformed; ``sealed``: a cache entry."""
    from vqalib.core.caches import read_entry

    if sealed:
        payload = read_entry(path, kind="cross-validation cache")
        if payload is None:
            return None
        source = io.BytesIO(payload)
    elif not path.exists():
        return None
    else:
        source = path
    try:
        with np.load(source, allow_pickle=False) as stored:
            found = tuple(stored[n] for n in _OOF_NAMES)
        if [a.shape for a in found] == shapes:
            return found
        raise ValueError("unexpected array shapes")
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as err:  # a pickle: not unpickled
        warnings.warn(f"ignoring unreadable out-of-fold file {path} ({err}); refitting it", stacklevel=3)
        return None


def _out_of_fold(features: Callable[[], np.ndarray], truth: np.ndarray, units: pd.DataFrame, *, folds: list, params: dict,
                 cache_dir: Path | None = None, fits_dir: Path | None = CV_FITS_DIR, refit: bool = False,
                 key: str | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Out-of-fold probabilities, decisions, folds and thresholds: committed, cached, or fitted (``features`` called
    only then); ``refit`` (or ``VQALIB_REFIT=1`` for committed ones) fits anew and writes to ``fits_dir``."""
    from vqalib.core.caches import write_entry
    from vqalib.core.io import cache_root, write_atomic

    name = f"{key or out_of_fold_key(units, truth, folds=folds, params=params)}.npz"
    cache_path = Path(cache_dir or cache_root("classify-cv")) / name
    shapes = [truth.shape, truth.shape, (len(units),), (len(folds), truth.shape[1])]
    if not refit:
        committed = [Path(fits_dir) / name] if fits_dir is not None and config.get(REFIT_ENV) != "1" else []
        for path, sealed in (*((c, False) for c in committed), (cache_path, True)):
            found = _read_out_of_fold(path, shapes, sealed=sealed)
            if found is not None:
                return found
    config.model_call(f"{params['kind']} classifier cross-validation ({len(folds)} folds)")
    features = features()
    probabilities = np.zeros(truth.shape)
    predicted = np.zeros(truth.shape, dtype=int)
    fold_of = np.zeros(len(units), dtype=int)
    thresholds = np.zeros((len(folds), truth.shape[1]))
    models = _fit_row_sets(features, truth, units.reset_index(drop=True), [train for train, _ in folds], **params)
    for fold, ((_, test_rows), model) in enumerate(zip(folds, models)):
        probabilities[test_rows] = model.predict_proba(features[test_rows])
        predicted[test_rows] = model.decide(probabilities[test_rows])
        fold_of[test_rows] = fold
        thresholds[fold] = model.thresholds
    buffer = io.BytesIO()
    np.savez(buffer, probabilities=probabilities, predicted=predicted, fold_of=fold_of, thresholds=thresholds)
    write_entry(cache_path, buffer.getvalue(), kind="cross-validation cache")
    if refit and fits_dir is not None:
        write_atomic(Path(fits_dir) / name, buffer.getvalue())
    return probabilities, predicted, fold_of, thresholds


def cross_validate(sentences: pd.DataFrame, answers: pd.DataFrame, *, kind: str = "role", n_splits: int = 5,
                   seed: int = 0, estimator: str = "mlp", exclude_sources: tuple[str, ...] = UNTRUSTED_SOURCES,
                   tune: bool = True, inner_splits: int = 3, n_random: int = 20, encoder: str | None = None,
                   cache_dir: Path | None = None, fits_dir: Path | None = CV_FITS_DIR,
                   refit: bool = False) -> CVResult:
    """Grouped k-fold cross-validation of the classifier and the Majority and Random baselines (VizWiz-LF Tables 9-10).

    Parameters
    ----------
    sentences, answers : pandas.DataFrame
        The release's sentences and answers.
    kind : {"role", "info"}, default "role"
    n_splits : int, default 5
        Number of outer folds.
    seed : int, default 0
        Seed of the folds, the fits and the Random draws.
    estimator : {"mlp", "logreg"}, default "mlp"
    exclude_sources : tuple of str, default :data:`~vqalib.papers.vizwiz_lf.classifier.UNTRUSTED_SOURCES`
        Sources not trained on; still predicted and scored.
    tune : bool, default True
        Tune per-label thresholds on inner folds (else 0.5).
    inner_splits : int, default 3
        Number of inner folds for the thresholds.
    n_random : int, default 20
        Number of Random baseline draws averaged.
    encoder : str, optional
        As in :func:`~vqalib.papers.vizwiz_lf.classifier_features.encoder_spec`.
    cache_dir : Path, optional
        The embedding and out-of-fold cache; None: the shared defaults.
    fits_dir : Path or None, default :data:`CV_FITS_DIR`
        Folder of committed out-of-fold results; None: none are read or written.
    refit : bool, default False
        Fit anew even when a stored result exists, and write it to ``fits_dir``.
    """
    start = time.perf_counter()
    labels, column, _ = _labels(kind)
    units = sentence_units(sentences, answers).reset_index(drop=True)
    truth = label_matrix(units, kind=kind)
    spec = encoder_spec(encoder)
    folds = question_folds(units, n_splits=n_splits, seed=seed)
    params = dict(kind=kind, seed=seed, estimator=estimator, exclude_sources=tuple(exclude_sources), tune=tune,
                  inner_splits=inner_splits, encoder=spec)
    key = out_of_fold_key(units, truth, folds=folds, params=params)
    features = lambda: feature_matrix(units, encoder=encoder, cache_dir=cache_dir)  # noqa: E731 (only when fitting)
    probabilities, predicted, fold_of, fold_thresholds = _out_of_fold(features, truth, units, folds=folds,
                                                                       params=params, cache_dir=cache_dir,
                                                                       fits_dir=fits_dir, refit=refit, key=key)
    thresholds = [{"fold": fold, **dict(zip(labels, row))} for fold, row in enumerate(fold_thresholds)]
    trusted = ~units["source"].isin(exclude_sources).to_numpy()
    masks = {subset: mask for subset, mask in (("all", np.ones(len(units), dtype=bool)), ("trusted sources", trusted))
             if subset == "all" or not mask.all()}
    randoms = _random_f1(truth, folds, masks, labels=labels, seed=seed, n_random=n_random, cache_dir=cache_dir)
    name = f"MiniLM + context ({estimator})"
    tables = []
    for subset, mask in masks.items():
        mine = f1_table(truth[mask], predicted[mask], labels=labels).merge(
            grouped_f1_intervals(truth[mask], predicted[mask], groups=units["question_id"][mask],
                                 labels=(*labels, "Weighted average"), seed=seed).rename(columns={"name": "label"}),
            on="label")
        tables.append(mine.assign(model=name, subset=subset))
        tables.append(f1_table(truth[mask], majority_predictions(len(units), kind=kind)[mask], labels=labels)
                      .assign(model="Majority", subset=subset))
        random_table = randoms[randoms["subset"] == subset].drop(columns="subset").reset_index(drop=True)
        tables.append(random_table.assign(model=f"Random (mean of {n_random})", subset=subset))
    scores = pd.concat(tables, ignore_index=True)[["model", "subset", "label", "f1", "ci_low", "ci_high", "support"]]
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
                    thresholds=pd.DataFrame(thresholds), seconds=time.perf_counter() - start,
                    fits_key=key)


def answer_decisions(predictions: pd.DataFrame) -> pd.DataFrame:
    """Answer-level abstention: an answer abstains when a sentence has Answer Failure, by labels and by predictions,
    with ``p_max`` and ``fold`` when available (VizWiz-LF §7, Table 5)."""
    frame = predictions.assign(by_labels=abstains(predictions["labels"]),
                               by_predictions=abstains(predictions["predicted"]))
    columns = {"by_labels": ("by_labels", "any"), "by_predictions": ("by_predictions", "any")}
    if "p_Answer Failure" in frame:
        columns["p_max"] = ("p_Answer Failure", "max")
    if "fold" in frame:
        columns["fold"] = ("fold", "first")
    return frame.groupby(["source", "question_id"], sort=False).agg(**columns).reset_index()


def _kappa(a: np.ndarray, b: np.ndarray) -> float:
    """Cohen's kappa; NaN when neither side varies."""
    return cohen_kappa_score(a, b) if len(set(a)) > 1 or len(set(b)) > 1 else np.nan


def abstention_agreement(predictions: pd.DataFrame, *, confidence: float = 0.95) -> pd.DataFrame:
    """Per source, agreement of abstention from predicted roles and from labels (VizWiz-LF §7, Table 5).

    ``*_next_answer``: labels against the next answer's prediction, as labels unrelated to their own answer agree.

    Parameters
    ----------
    predictions : pandas.DataFrame
        Sentence predictions as :func:`answer_decisions` takes them.
    confidence : float, default 0.95
        Confidence level of the Wilson interval.
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
    """Agreement with label-based abstention under two answer-level rules, per source (VizWiz-LF §7, Table 5).

    The threshold rule's ``t`` is chosen per fold on the other folds' trusted answers, so no answer picks its own.

    Parameters
    ----------
    predictions : pandas.DataFrame
        Sentence predictions with ``p_Answer Failure`` and ``fold``.
    exclude_sources : tuple of str, default :data:`~vqalib.papers.vizwiz_lf.classifier.UNTRUSTED_SOURCES`
        Sources whose answers do not choose the thresholds (still scored).
    grid : numpy.ndarray, default 0.10 to 0.90 in steps of 0.05
        Candidate thresholds; the first of equally good ones wins.
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
