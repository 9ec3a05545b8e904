"""The classifiers' committed fitted artefacts (VizWiz-LF Tables 9-10, §7): final models and out-of-fold results.

Committed so ``make reproduce`` need not spend 3 CPU-minutes on fits a refit gives back exactly; out-of-fold files
are named by a hash of their inputs, so a changed input is refitted, never served stale."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from vqalib.core.out_folders import OutputKind, check_out, record_written
from vqalib.papers.vizwiz_lf.classifier import MODEL_DIR, MODEL_PATHS, SentenceClassifier, train
from vqalib.papers.vizwiz_lf.classifier_cv import CV_FITS_DIR, CVResult, abstention_agreement, cross_validate
from vqalib.papers.vizwiz_lf.classifier_features import feature_matrix, sentence_units
from vqalib.papers.vizwiz_lf.classifier_finetune import FINETUNED_DIR
from vqalib.papers.vizwiz_lf.classifier_io import ModelFileError, hash_problems, load, record_hashes, save

KINDS = ("role", "info")
OUT_OF_FOLD_FILE = re.compile(r"[0-9a-f]{32}\.npz")  # cv/<out_of_fold_key>.npz: the only files a refit removes
MODELS = OutputKind(what="classifier folder", option="vqalib classify train --out", marker=MODEL_PATHS["role"].name,
                    is_marker=lambda path: True, home=MODEL_DIR)  # data/models: rewritten in place, git keeps it


def cv_metadata(result: CVResult, *, seed: int, agreement: pd.DataFrame | None) -> dict:
    """The ``cross_validation`` entry of a saved model's metadata: the Tables 9-10 scores it was judged by, and the
    abstention ``agreement`` (roles only)."""
    mine = result.scores["model"].str.startswith("MiniLM")  # the classifier, not a baseline
    meta = {"folds": f"5, grouped by question_id, seed {seed}",
            "f1": {f"{row.subset}: {row.label}": round(float(row.f1), 3) for row in result.scores[mine].itertuples()},
            "weighted_f1_by_source": {
                row.source: round(float(row.weighted_f1), 3)
                for row in result.by_source[result.by_source["model"].str.startswith("MiniLM")].itertuples()}}
    if agreement is not None:
        meta["abstention_agreement"] = {row.source: round(float(row.agreement), 3) for row in agreement.itertuples()}
    return meta


def write_fits(sentences: pd.DataFrame, answers: pd.DataFrame, *, out: Path, seed: int = 0,
               estimator: str = "mlp", echo=print) -> list[Path]:
    """Refit both classifiers' cross-validation and final models and write them, removing unused out-of-fold files.

    Parameters
    ----------
    sentences, answers : pandas.DataFrame
        The VizWiz-LF release.
    out : Path
        The model folder: new, empty or one holding the role classifier.
    seed : int
        Seed of folds and fits.
    estimator : str
        ``"mlp"`` or ``"logreg"``.
    echo : callable
        Where the cross-validation report goes.
    """
    check_out(out, kind=MODELS)  # a folder of other files is not filled with models, nor cleaned of its .npz
    written, keys = [], set()
    for kind in KINDS:
        result = cross_validate(sentences, answers, kind=kind, seed=seed, estimator=estimator,
                                fits_dir=Path(out) / "cv", refit=True)
        keys.add(f"{result.fits_key}.npz")
        written.append(Path(out) / "cv" / f"{result.fits_key}.npz")
        table = result.scores.pivot_table(index=["subset", "label"], columns="model", values="f1", sort=False)
        echo(table.round(3).to_string())
        echo(result.by_source.pivot(index="source", columns="model", values="weighted_f1").round(3).to_string())
        agreement = abstention_agreement(result.predictions) if kind == "role" else None
        if agreement is not None:
            echo(agreement.round(3).to_string(index=False))
        echo(f"{kind}: cross-validation {result.seconds:.0f} s")
        model = train(sentences, answers, kind=kind, seed=seed, estimator=estimator)
        model.metadata["cross_validation"] = cv_metadata(result, seed=seed, agreement=agreement)
        written.append(save(model, Path(out) / MODEL_PATHS[kind].name))
    for stale in sorted((Path(out) / "cv").glob("*.npz")):
        if stale.name not in keys and OUT_OF_FOLD_FILE.fullmatch(stale.name):
            stale.unlink()
    written.append(record_hashes(out, written))  # what classify check and every load compare bit for bit
    record_written(out, kind=MODELS, paths=written)  # another --out folder: what a later train may rewrite
    return written


def _same_model(fresh: SentenceClassifier, stored: SentenceClassifier, features: np.ndarray) -> bool:
    """Same thresholds and bit-identical (rounded) probabilities on every release sentence."""
    return (np.array_equal(fresh.thresholds, stored.thresholds)
            and np.array_equal(fresh.predict_proba(features), stored.predict_proba(features)))


def check_hashes(*, finetuned: bool = False) -> list[str]:
    """The committed classifiers' files bit for bit against the SHA-256 recorded at training: fast, what ``vqalib
    classify check`` reports before any refit (Tables 9-10).

    Parameters
    ----------
    finetuned : bool
        Only the fine-tuned classifier's files (``data/models/finetuned``).
    """
    folders = [FINETUNED_DIR] if finetuned else [CV_FITS_DIR.parent, FINETUNED_DIR]
    return [line for folder in folders for line in hash_problems(folder)]


def check_fits(sentences: pd.DataFrame, answers: pd.DataFrame, *, models_dir: Path | None = None,
               seed: int = 0, estimator: str = "mlp") -> list[str]:
    """Compare the committed files with the SHA-256 recorded at training, then refit what :func:`write_fits` committed
    and compare byte for byte (the check CI runs).

    Parameters
    ----------
    sentences, answers : pandas.DataFrame
        The VizWiz-LF release.
    models_dir : Path, optional
        The committed model folder; default ``data/models``.
    seed : int
        The seed the committed files were made with.
    estimator : str
        The estimator they were made with.

    Returns
    -------
    list of str
        One line per problem (empty: everything matches).
    """
    models_dir = Path(models_dir) if models_dir is not None else CV_FITS_DIR.parent
    problems, keys = hash_problems(models_dir), set()
    units = sentence_units(sentences, answers)
    features = feature_matrix(units)
    # the embeddings come from the shared cache (sealed, and the same on every machine); every fit runs anew
    with tempfile.TemporaryDirectory(prefix="vqalib-refit-") as tmp:
        for kind in KINDS:
            result = cross_validate(sentences, answers, kind=kind, seed=seed, estimator=estimator, fits_dir=Path(tmp),
                                    refit=True)
            name = f"{result.fits_key}.npz"
            keys.add(name)
            committed = models_dir / "cv" / name
            if not committed.exists():
                problems.append(f"{committed}: missing for the current inputs ({kind}); "
                                "run `vqalib classify train` and commit data/models/")
            elif committed.read_bytes() != (Path(tmp) / name).read_bytes():
                problems.append(f"{committed}: differs from a refit ({kind})")
            path = models_dir / MODEL_PATHS[kind].name
            try:
                stored = load(path)
            except ModelFileError:  # a changed file: named above by its hash
                continue
            if not _same_model(train(sentences, answers, kind=kind, seed=seed, estimator=estimator), stored, features):
                problems.append(f"{path}: a refit gives other thresholds or probabilities ({kind})")
    for stale in sorted((models_dir / "cv").glob("*.npz")):
        if stale.name not in keys:
            problems.append(f"{stale}: not made from the current inputs (stale); remove it or rerun train")
    return problems
