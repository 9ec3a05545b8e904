"""Grouped cross-validation of the offline classifiers and the abstention agreement they give
(VizWiz-LF Tables 9-10: per-label and weighted F1 with Majority and Random baselines; §7, Table 5:
answer-level abstention decisions from predicted roles against the released labels).

Folds are grouped by question (a question's answers from all sources stay on one side). The
out-of-fold results are ``.npz`` arrays named by a hash of their inputs: the release's are committed
in ``data/models/cv/`` beside the final models, any other is cached on disk (:func:`_out_of_fold`).
"""

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
    """Per-label F1, support and the support-weighted average F1 (VizWiz-LF Tables 9-10).

    The weighted average is scikit-learn's ``f1_score(average="weighted")`` over the
    label-indicator matrix, the paper's "weighted average F1".

    Parameters
    ----------
    truth, predicted : numpy.ndarray of shape (n_sentences, n_labels)
        0/1 true and predicted labels.
    labels : tuple of str
        Label names, in column order.

    Returns
    -------
    pandas.DataFrame
        ``label``, ``f1``, ``support``: one row per label, then "Weighted average" (0 when no label
        has support) with the total support.
    """
    per_label = f1_score(truth, predicted, average=None, labels=range(len(labels)), zero_division=0)
    support = truth.sum(axis=0)
    weighted = f1_score(truth, predicted, average="weighted", zero_division=0) if support.sum() else 0.0
    return pd.DataFrame({"label": [*labels, "Weighted average"], "f1": [*per_label, weighted],
                         "support": [*support, support.sum()]})


def majority_predictions(n: int, *, kind: str) -> np.ndarray:
    """The Majority baseline: "Answer" for roles, "Image Content" for sources (Tables 9-10).

    Parameters
    ----------
    n : int
        Number of sentences.
    kind : {"role", "info"}
        Which labels.

    Returns
    -------
    numpy.ndarray of shape (n, n_labels)
        int 0/1, the majority label set in every row.
    """
    labels, _, majority = _labels(kind)
    out = np.zeros((n, len(labels)), dtype=int)
    out[:, labels.index(majority)] = 1
    return out


def random_predictions(train_truth: np.ndarray, n: int, *, rng: np.random.Generator) -> np.ndarray:
    """The Random baseline: each sentence gets the label combination of a random training sentence (Tables 9-10).

    Parameters
    ----------
    train_truth : numpy.ndarray of shape (n_train, n_labels)
        0/1 labels of the training sentences.
    n : int
        Number of sentences to predict.
    rng : numpy.random.Generator
        Draws the training rows (uniformly, with replacement).

    Returns
    -------
    numpy.ndarray of shape (n, n_labels)
        The drawn rows of ``train_truth``.
    """
    return train_truth[rng.integers(0, len(train_truth), size=n)]


def _random_f1(truth: np.ndarray, folds: list, masks: dict[str, np.ndarray], *, labels: tuple[str, ...], seed: int,
               n_random: int, cache_dir: Path | None = None) -> pd.DataFrame:
    """The Random baseline's F1 table per subset (``label``, ``f1`` as the mean over ``n_random`` seeded draws from
    each fold's training labels, ``support``, ``subset``; Tables 9-10), cached by content
    (``<cache_dir>/random``, by default ``$VQALIB_CACHE_DIR/classify-cv/random``): its F1 tables took seconds in every
    notebook that cross-validates."""
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
    """The name of a cross-validation's out-of-fold results (Tables 9-10): a SHA-256 of every input
    (the texts the features are computed from, the encoder's identity and the embedding settings,
    labels, sources, folds, parameters, scikit-learn and numpy versions).

    The features themselves are not hashed: they are a function of the texts and the encoder
    (:func:`~vqalib.papers.vizwiz_lf.classifier_features.feature_matrix`), so a stored result is found
    without embedding a sentence. ``vqalib classify check`` refits from the features and compares.

    Parameters
    ----------
    units : pandas.DataFrame
        The sentence units (:func:`~vqalib.papers.vizwiz_lf.classifier_features.sentence_units`), with
        ``source`` and :data:`FEATURE_INPUTS`.
    truth : numpy.ndarray
        :func:`~vqalib.papers.vizwiz_lf.classifier_features.label_matrix` of ``units``.
    folds : list of (numpy.ndarray, numpy.ndarray)
        :func:`~vqalib.papers.vizwiz_lf.classifier.question_folds`; only the test rows are hashed.
    params : dict
        The fitting parameters (``kind``, ``seed``, ``estimator``, ``encoder``, ...).

    Returns
    -------
    str
        The first 32 hex digits of the digest (it also covers :data:`CV_CACHE_VERSION`).
    """
    from vqalib.core.encoders import DECIMALS, EMBED_VERSION, model_identity

    digest = hashlib.sha256()
    columns = [units[name].astype(str).tolist() for name in ("source", *FEATURE_INPUTS)]
    # row by row, each value as str: the bytes of the frame's values read row-major (a 2-D to_numpy(dtype="U") of
    # Arrow strings gave the same in 18x the time)
    digest.update("\x1f".join(str(value) for row in zip(*columns) for value in row).encode("utf-8"))
    for array in (truth, *[np.asarray(rows) for _, rows in folds]):
        digest.update(np.ascontiguousarray(array).tobytes())
    spec = params.get("encoder")
    encoder = model_identity(None if spec in (None, PACKAGED_ENCODER) else spec)[1]
    digest.update(repr((sorted(params.items()), encoder, HIDDEN_LAYERS, DECIMALS, EMBED_VERSION, FEATURES_VERSION,
                        sklearn.__version__, np.__version__, CV_CACHE_VERSION)).encode())
    return digest.hexdigest()[:32]


def _read_out_of_fold(path: Path, shapes: list[tuple], *, sealed: bool) -> tuple | None:
    """The four arrays of a stored result, or None when the file is missing or not exactly what its
    name promises (read without pickle; a bad file is reported and left unused). ``sealed``: a cache
    entry, checked against its seal (:mod:`vqalib.core.caches`); else a committed file (git checks it)."""
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
    """Out-of-fold probabilities, decisions, fold of each row and each fold's thresholds (Tables 9-10).

    The expensive part of :func:`cross_validate` (40 MLP fits on the release), named by
    :func:`out_of_fold_key`. Like the committed final models, the release's result is a fitted
    artefact in the repository (``fits_dir``, :data:`CV_FITS_DIR`, written by ``vqalib classify
    train`` and checked against a refit by ``vqalib classify check``);
    any other result is cached under ``cache_dir`` (``$VQALIB_CACHE_DIR/classify-cv``). Both are
    ``.npz`` arrays read without pickle. Fitting is deterministic in float64, so a stored result is
    the one a new fit gives. ``refit`` (or ``VQALIB_REFIT=1`` for the committed ones) fits anew;
    with ``refit`` the result is also written to ``fits_dir``. ``key``: :func:`out_of_fold_key` of these
    inputs when the caller has it already. ``features``: a function giving the feature matrix, called only
    when the fits run (a stored result needs no sentence embedded).
    """
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
    """Grouped k-fold cross-validation of the classifier and the baselines (VizWiz-LF Tables 9-10).

    Folds come from :func:`~vqalib.papers.vizwiz_lf.classifier.question_folds`. In each fold the classifier is
    trained as by :func:`~vqalib.papers.vizwiz_lf.classifier.train` (thresholds from inner folds of the training
    part only) and predicts the
    held-out sentences of every source; Majority and Random (mean over ``n_random`` seeded
    draws from the training part's label combinations) are scored on the same sentences.
    Scores pool the out-of-fold predictions: subset ``"all"`` (every source) and
    ``"trusted sources"`` (without ``exclude_sources``). The fits come from the committed result
    in ``fits_dir`` when one was made from exactly these inputs, else from the cache, else they
    run; ``refit`` runs them and writes the result to ``fits_dir`` (:func:`_out_of_fold`).

    Parameters
    ----------
    sentences, answers : pandas.DataFrame
        The release's sentences and answers (:func:`vqalib.papers.vizwiz_lf.loading.load_vizwiz_lf`).
    kind : {"role", "info"}, default "role"
        Which labels to classify.
    n_splits : int, default 5
        Number of outer folds.
    seed : int, default 0
        Seed of the folds, the fits and the Random draws.
    estimator : {"mlp", "logreg"}, default "mlp"
        :func:`~vqalib.papers.vizwiz_lf.classifier.make_pipeline`'s model.
    exclude_sources : tuple of str, default :data:`~vqalib.papers.vizwiz_lf.classifier.UNTRUSTED_SOURCES`
        Sources not trained on; still predicted and scored (subset "all").
    tune : bool, default True
        Tune per-label thresholds on inner folds (else 0.5).
    inner_splits : int, default 3
        Number of inner folds for the thresholds.
    n_random : int, default 20
        Number of Random baseline draws averaged.
    encoder : str, optional
        As in :func:`~vqalib.papers.vizwiz_lf.classifier_features.encoder_spec`.
    cache_dir : Path, optional
        The embedding cache, and the out-of-fold cache (``<cache_dir>/<key>.npz``); None: the shared
        defaults (``$VQALIB_CACHE_DIR/embeddings`` and ``$VQALIB_CACHE_DIR/classify-cv``).
    fits_dir : Path or None, default :data:`CV_FITS_DIR`
        Folder of committed out-of-fold results; None: none are read or written.
    refit : bool, default False
        Fit anew even when a stored result exists, and write it to ``fits_dir``.

    Returns
    -------
    CVResult
        Scores, per-source scores, out-of-fold predictions, per-fold thresholds, the wall time in
        seconds and the out-of-fold key.
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
    """Answer-level abstention decisions from sentence predictions (VizWiz-LF §7, Table 5: an answer
    abstains when one of its sentences has the role Answer Failure).

    Parameters
    ----------
    predictions : pandas.DataFrame
        ``source``, ``question_id``, ``labels`` and ``predicted`` (role tuples) per sentence (the
        ``predictions`` of a role :class:`CVResult`); optionally ``p_Answer Failure`` and ``fold``.

    Returns
    -------
    pandas.DataFrame
        One row per answer (``source``, ``question_id``), in order of appearance: ``by_labels``,
        ``by_predictions`` and, when the sentence columns exist, ``p_max`` (largest P(Answer Failure))
        and ``fold``.
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

    Parameters
    ----------
    predictions : pandas.DataFrame
        Sentence predictions as :func:`answer_decisions` takes them.
    confidence : float, default 0.95
        Confidence level of the Wilson interval.

    Returns
    -------
    pandas.DataFrame
        One row per source: ``n_answers``, ``abstain_labels`` and ``abstain_predicted`` (abstention
        rates), ``agreement`` with ``agreement_ci_low``/``agreement_ci_high``, ``kappa``,
        ``agreement_next_answer`` and ``kappa_next_answer`` (NaN for too few answers).
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
    Table 5; the bar is agreement >= 90% per source,
    :data:`~vqalib.papers.vizwiz_lf.classifier_tables.ABSTENTION_CRITERION`): ``any sentence predicted
    Answer Failure`` (the default, :func:`abstention_agreement`) and ``max P(Answer Failure) >= t`` with ``t``
    chosen, for each cross-validation fold, on the *other* folds' answers of the trusted sources
    (so no answer's own label picks its threshold). One row per (source, rule).

    Parameters
    ----------
    predictions : pandas.DataFrame
        Sentence predictions with ``p_Answer Failure`` and ``fold`` (a role :class:`CVResult`'s
        ``predictions``).
    exclude_sources : tuple of str, default :data:`~vqalib.papers.vizwiz_lf.classifier.UNTRUSTED_SOURCES`
        Sources whose answers do not choose the thresholds (they are still scored).
    grid : numpy.ndarray, default 0.10 to 0.90 in steps of 0.05
        Candidate thresholds ``t``; the first of equally good ones wins.

    Returns
    -------
    pandas.DataFrame
        ``source``, ``rule``, ``n_answers``, ``agreement`` and ``threshold`` (the median of the
        per-fold thresholds over the source's answers; NaN for the sentence rule).
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
