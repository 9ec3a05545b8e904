"""The fine-tuned classifier's committed files in ``data/models/finetuned/`` and their check (VizWiz-LF Tables 9-10).

The final network, a check sample recomputed from the committed weights, and keyed out-of-fold probabilities: a
changed row or setting is never scored stale, and ``make reproduce`` never trains."""

from __future__ import annotations

import hashlib
import io
import json
import platform
import time
from pathlib import Path

import numpy as np
import pandas as pd

from vqalib.core.encoders import DECIMALS, model_identity
from vqalib.core.inference import grouped_f1_intervals
from vqalib.core.io import write_atomic
from vqalib.papers.vizwiz_lf.classifier import UNTRUSTED_SOURCES, question_folds
from vqalib.papers.vizwiz_lf.classifier_io import hash_problems, record_hashes
from vqalib.papers.vizwiz_lf.classifier_finetune import (
    FINETUNED_DIR, LABELS, N_ROLES, SETTINGS, WEIGHTS_FILE, _probabilities, _train, _training_inputs, decide, fit,
    load, pair_texts, predict_proba, save, truth_matrix)

OUT_OF_FOLD_FILE = "out_of_fold.npz"
CHECK_FILE = "check_sample.npz"
CHECK_EVERY = 10  # check_sample: every 10th release sentence (852), about 10 s of float64 inference
CHECK_TOLERANCE = 2e-6  # probabilities may differ by one rounding step across kernels; labels may not
VERSION = "1"  # bump when the model or the inputs change: every stored key includes it
MODEL_NAME = "MiniLM fine-tuned"  # its rows in Tables 9-10


def settings_key(settings: dict = SETTINGS) -> str:
    """SHA-256 of what every out-of-fold probability depends on besides its own rows (settings, labels, encoder)."""
    payload = dict(version=VERSION, settings=settings, encoder=model_identity(None)[1],
                   untrusted=list(UNTRUSTED_SOURCES), labels=list(LABELS))
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def row_keys(units: pd.DataFrame) -> np.ndarray:
    """Per sentence, 16 bytes of SHA-256 of its identity, text, context and labels (dtype ``S16``)."""
    units = units.reset_index(drop=True)
    first, second = pair_texts(units)
    truth = truth_matrix(units)
    keys = []
    for k, row in enumerate(units[["source", "question_id", "sentence_index"]].astype(str).itertuples(index=False)):
        text = json.dumps([*row, first[k], second[k], truth[k].tolist()])
        keys.append(hashlib.sha256(text.encode("utf-8")).digest()[:16])
    return np.array(keys, dtype="S16")


def cross_validate(units: pd.DataFrame, *, settings: dict = SETTINGS, echo=print) -> dict:
    """Train one network per question-grouped fold and predict its held-out sentences (Tables 9-10): rounded
    ``probabilities``, ``fold``, ``key``, ``row_keys`` and ``seconds`` per fold."""
    units = units.reset_index(drop=True)
    truth = truth_matrix(units)
    folds = question_folds(units, n_splits=settings["n_splits"], seed=settings["seed"])
    trusted = ~units["source"].isin(UNTRUSTED_SOURCES).to_numpy()
    base, inputs = _training_inputs(units, settings=settings, what=f"{len(units)} sentences, {len(folds)} folds")
    probabilities = np.full(truth.shape, np.nan)
    fold_of = np.full(len(units), -1)
    seconds = []
    for k, (train_rows, test_rows) in enumerate(folds):
        echo(f"fold {k + 1}/{len(folds)}: training on {int(trusted[train_rows].sum())} sentences")
        start = time.perf_counter()
        net = _train(inputs, truth, train_rows[trusted[train_rows]], base=base, settings=settings, echo=echo)
        probabilities[test_rows] = _probabilities(net, inputs, test_rows)
        fold_of[test_rows] = k
        seconds.append(time.perf_counter() - start)
    return dict(probabilities=np.round(probabilities, DECIMALS), fold=fold_of, key=settings_key(settings),
                row_keys=row_keys(units), seconds=np.array(seconds))


def cv_results(units: pd.DataFrame, result: dict) -> dict:
    """Out-of-fold probabilities (:func:`cross_validate` or :func:`read_out_of_fold`) as one ``CVResult`` per kind,
    ``"role"`` and ``"info"``, thresholds 0.5 (Tables 9-10)."""
    from vqalib.papers.vizwiz_lf.classifier_cv import CVResult, f1_table
    from sklearn.metrics import f1_score

    units = units.reset_index(drop=True)
    truth, probabilities = truth_matrix(units), np.asarray(result["probabilities"])
    predicted = decide(probabilities)
    trusted = ~units["source"].isin(UNTRUSTED_SOURCES).to_numpy()
    out = {}
    for kind, cols in (("role", slice(0, N_ROLES)), ("info", slice(N_ROLES, None))):
        labels = LABELS[cols]
        t, p = truth[:, cols], predicted[:, cols]
        scores = pd.concat([
            f1_table(t[mask], p[mask], labels=labels).merge(
                grouped_f1_intervals(t[mask], p[mask], groups=units["question_id"][mask], labels=(*labels, "Weighted average"))
                .rename(columns={"name": "label"}), on="label")
            .assign(model=MODEL_NAME, subset=subset)
            for subset, mask in (("all", np.ones(len(units), bool)), ("trusted sources", trusted))
            if subset == "all" or not mask.all()], ignore_index=True)
        by_source = pd.DataFrame([{"source": source, "model": MODEL_NAME, "n_sentences": len(rows),
                                   "weighted_f1": f1_score(t[rows], p[rows], average="weighted", zero_division=0)}
                                  for source, rows in units.groupby("source", sort=False).indices.items()])
        predictions = units[["source", "question_id", "sentence_index", "sentence"]].copy()
        predictions["fold"] = np.asarray(result["fold"])
        predictions["labels"] = [tuple(x for x, y in zip(labels, row) if y) for row in t]
        predictions["predicted"] = [tuple(x for x, y in zip(labels, row) if y) for row in p]
        for j, label in enumerate(labels):
            predictions[f"p_{label}"] = probabilities[:, cols][:, j]
        folds = sorted(set(np.asarray(result["fold"]).tolist()))
        out[kind] = CVResult(scores=scores[["model", "subset", "label", "f1", "ci_low", "ci_high", "support"]],
                             by_source=by_source,
                             predictions=predictions,
                             thresholds=pd.DataFrame([{"fold": f, **dict.fromkeys(labels, 0.5)} for f in folds]),
                             seconds=float(np.sum(result["seconds"])), fits_key=str(result["key"]))
    return out


def check_rows(units: pd.DataFrame) -> np.ndarray:
    """Row positions of the declared check sample: every :data:`CHECK_EVERY`-th release sentence.

    Parameters
    ----------
    units : pandas.DataFrame
        Sentence units of the release.
    """
    return np.arange(0, len(units), CHECK_EVERY)


def write_out_of_fold(result: dict, path: Path) -> Path:
    """Store a :func:`cross_validate` result as ``.npz`` (no pickle), atomically; returns ``path``."""
    buffer = io.BytesIO()
    np.savez(buffer, probabilities=result["probabilities"], fold=result["fold"], key=np.array(result["key"]),
             row_keys=result["row_keys"], seconds=result["seconds"])
    return write_atomic(Path(path), buffer.getvalue())


def read_out_of_fold(units: pd.DataFrame, *, path: Path = FINETUNED_DIR / OUT_OF_FOLD_FILE,
                     settings: dict = SETTINGS) -> dict | None:
    """The committed out-of-fold ``probabilities`` and ``fold`` aligned with ``units`` (plus ``key``, ``seconds``) when
    every row was made with these settings, else None."""
    path = Path(path)
    if not path.is_file():
        return None
    with np.load(path, allow_pickle=False) as data:
        stored = {name: data[name] for name in data.files}
    if str(stored["key"]) != settings_key(settings):
        return None
    position = {key: k for k, key in enumerate(stored["row_keys"].tolist())}
    rows = [position.get(key) for key in row_keys(units).tolist()]
    if any(r is None for r in rows):
        return None
    return dict(probabilities=stored["probabilities"][rows], fold=stored["fold"][rows], key=str(stored["key"]),
                seconds=stored["seconds"])


def write_all(units: pd.DataFrame, *, out: Path = FINETUNED_DIR, settings: dict = SETTINGS, echo=print) -> list[Path]:
    """Cross-validate, train the final model and write the three committed files (about 54 min on 2 cores).

    Parameters
    ----------
    units : pandas.DataFrame
        Sentence units of the release.
    out : Path
        The folder (``data/models/finetuned``).
    settings : dict
        Training settings.
    echo : callable
        Progress lines.
    """
    import torch

    units = units.reset_index(drop=True)
    out = Path(out)
    start = time.perf_counter()
    result = cross_validate(units, settings=settings, echo=echo)
    written = [write_out_of_fold(result, out / OUT_OF_FOLD_FILE)]
    from vqalib.papers.vizwiz_lf.classifier_cv import abstention_agreement
    from vqalib.papers.vizwiz_lf.classifier_fits import cv_metadata

    scored = cv_results(units, result)
    for kind, cv in scored.items():
        echo(cv.scores.pivot_table(index="label", columns="subset", values="f1", sort=False).round(3).to_string())
    fit_start = time.perf_counter()
    net = fit(units, settings=settings, echo=echo)
    fit_seconds = time.perf_counter() - fit_start
    metadata = dict(settings=settings, labels=list(LABELS), encoder=model_identity(None)[1], version=VERSION,
                    settings_key=result["key"], trained_on=int((~units["source"].isin(UNTRUSTED_SOURCES)).sum()),
                    cv_seconds_per_fold=[round(float(s)) for s in result["seconds"]], final_fit_seconds=round(fit_seconds),
                    torch=torch.__version__, threads=torch.get_num_threads(), machine=platform.machine(),
                    cross_validation={kind: cv_metadata(cv, seed=settings["seed"],
                                                        agreement=abstention_agreement(cv.predictions) if kind == "role" else None)
                                      for kind, cv in scored.items()})
    written.append(save(net, out / WEIGHTS_FILE, metadata=metadata))
    record_hashes(out, written)  # load() below reads only recorded bytes
    rows = check_rows(units)
    probabilities = predict_proba(units.iloc[rows], model=load(out / WEIGHTS_FILE))
    buffer = io.BytesIO()
    np.savez(buffer, rows=rows, probabilities=probabilities, key=np.array(result["key"]))
    written.append(write_atomic(out / CHECK_FILE, buffer.getvalue()))
    written.append(record_hashes(out, written))  # what classify check and every load compare bit for bit
    echo(f"fine-tuned classifier: {time.perf_counter() - start:.0f} s in all")
    return written


def check(units: pd.DataFrame, *, models_dir: Path = FINETUNED_DIR) -> list[str]:
    """The committed files bit for bit against the SHA-256 recorded at training, then the committed model's check-sample
    probabilities recomputed: within :data:`CHECK_TOLERANCE`, same labels.

    Parameters
    ----------
    units : pandas.DataFrame
        Sentence units of the release.
    models_dir : Path
        The folder of the committed files.

    Returns
    -------
    list of str
        One line per problem (empty: reproduced).
    """
    models_dir = Path(models_dir)
    units = units.reset_index(drop=True)
    problems = []
    for name in (WEIGHTS_FILE, OUT_OF_FOLD_FILE, CHECK_FILE):
        if not (models_dir / name).is_file():
            problems.append(f"{models_dir / name}: missing; run `vqalib classify train --finetuned`")
    if problems:
        return problems
    problems = hash_problems(models_dir)  # a changed file is named by its hash, before any inference
    if problems:
        return problems
    model = load(models_dir / WEIGHTS_FILE)
    if read_out_of_fold(units, path=models_dir / OUT_OF_FOLD_FILE, settings=model[1].get("settings", SETTINGS)) is None:
        problems.append(f"{models_dir / OUT_OF_FOLD_FILE}: made from other inputs or settings; "
                        "run `vqalib classify train --finetuned`")
    with np.load(models_dir / CHECK_FILE, allow_pickle=False) as data:
        rows, committed = data["rows"], data["probabilities"]
    if not np.array_equal(rows, check_rows(units)):
        return problems + [f"{models_dir / CHECK_FILE}: not the declared sample (every {CHECK_EVERY}th sentence)"]
    fresh = predict_proba(units.iloc[rows], model=model)
    gap = float(np.abs(fresh - committed).max())
    if gap > CHECK_TOLERANCE:
        problems.append(f"{models_dir / CHECK_FILE}: probabilities differ by up to {gap:.2g} "
                        f"(tolerance {CHECK_TOLERANCE:g})")
    flipped = int((decide(fresh) != decide(committed)).any(axis=1).sum())
    if flipped:
        problems.append(f"{models_dir / CHECK_FILE}: {flipped} of {len(rows)} sentences get other labels")
    return problems
