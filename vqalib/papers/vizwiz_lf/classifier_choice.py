"""Which offline classifier labels answers: frozen-feature MLP or fine-tuned MiniLM (VizWiz-LF Tables 9-10).

The rule: the higher recorded cross-validated weighted role F1 over all sources (Table 9's measure); on a tie, or
when the fine-tuned files are absent or stale, the MLP. One classifier labels roles and sources alike."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from vqalib.papers.vizwiz_lf import classifier_finetune, classifier_finetune_fits
from vqalib.papers.vizwiz_lf.classifier import MODEL_PATHS
from vqalib.papers.vizwiz_lf.classifier_cv import CVResult, cross_validate
from vqalib.papers.vizwiz_lf.classifier_features import sentence_units

FROZEN, FINETUNED = "frozen", "finetuned"
NAMES = {FROZEN: "MiniLM + context (mlp)", FINETUNED: classifier_finetune_fits.MODEL_NAME}
SCORE = "all: Weighted average"  # the recorded role score compared


def recorded_scores(*, models_dir: Path | None = None) -> dict[str, float]:
    """Cross-validated weighted role F1 (all sources) recorded in each committed model's metadata: :data:`FROZEN`, and
    :data:`FINETUNED` when its weights are committed."""
    frozen_path = MODEL_PATHS["role"] if models_dir is None else Path(models_dir) / MODEL_PATHS["role"].name
    scores = {FROZEN: _frozen_score(frozen_path)}
    folder = classifier_finetune.FINETUNED_DIR if models_dir is None else Path(models_dir) / "finetuned"
    weights = folder / classifier_finetune.WEIGHTS_FILE
    if weights.is_file():
        metadata = classifier_finetune.read_metadata(weights)
        recorded = metadata.get("cross_validation", {}).get("role", {}).get("f1", {}).get(SCORE)
        if recorded is not None:
            scores[FINETUNED] = float(recorded)
    return scores


def _frozen_score(path: Path) -> float:
    """The frozen classifier's recorded score, cached by the bytes of the file and of its hash record (reading the
    classifier imports skops, about 3 s a process); any change to either reads the file again, with its checks."""
    import hashlib
    import json

    from vqalib.core.caches import read_entry, write_entry
    from vqalib.core.io import cache_root
    from vqalib.papers.vizwiz_lf.classifier_io import HASH_RECORD, load

    record = path.parent / HASH_RECORD
    digest = hashlib.sha256(json.dumps([SCORE, "1"]).encode("utf-8") + path.read_bytes()
                            + (record.read_bytes() if record.is_file() else b"")).hexdigest()
    entry = cache_root("vizwiz-lf", "classifier-scores") / f"{digest[:32]}.json"
    payload = read_entry(entry, kind="classifier score cache", max_bytes=1024)
    if payload is not None:
        try:
            return float(json.loads(payload.decode("utf-8"))["score"])
        except (ValueError, TypeError, KeyError):  # not ours: read the classifier again and replace it
            pass
    score = float(load(path).metadata["cross_validation"]["f1"][SCORE])
    write_entry(entry, json.dumps({"score": score}).encode("utf-8"), kind="classifier score cache")
    return score


def choose(scores: dict[str, float]) -> str:
    """:data:`FINETUNED` when its score is strictly higher than :data:`FROZEN`'s, else :data:`FROZEN`."""
    return FINETUNED if scores.get(FINETUNED, float("-inf")) > scores[FROZEN] else FROZEN


def selected(*, models_dir: Path | None = None) -> str:
    """The classifier that labels answers: :data:`FROZEN` or :data:`FINETUNED` (Tables 9-10).

    Parameters
    ----------
    models_dir : Path, optional
        The committed model folder; default ``data/models``.
    """
    return choose(recorded_scores(models_dir=models_dir))


def finetuned_cv(sentences: pd.DataFrame, answers: pd.DataFrame) -> dict[str, CVResult] | None:
    """The fine-tuned classifier's committed out-of-fold results per kind, or None if made from other sentences.

    Parameters
    ----------
    sentences, answers : pandas.DataFrame
        The release, or a part of it (whole answers).
    """
    units = sentence_units(sentences, answers).reset_index(drop=True)
    result = classifier_finetune_fits.read_out_of_fold(units)
    return None if result is None else classifier_finetune_fits.cv_results(units, result)


def selected_cv(sentences: pd.DataFrame, answers: pd.DataFrame, *, cache_dir: Path | None = None) -> dict[str, CVResult]:
    """Out-of-fold results of the selected classifier per kind (``"role"``, ``"info"``), from the cache when warm.

    Parameters
    ----------
    sentences, answers : pandas.DataFrame
        The release (``load_vizwiz_lf()``'s).
    cache_dir : Path, optional
        The frozen classifier's embedding cache.
    """
    if selected() == FINETUNED and (finetuned := finetuned_cv(sentences, answers)) is not None:
        return finetuned
    return {kind: cross_validate(sentences, answers, kind=kind, cache_dir=cache_dir) for kind in ("role", "info")}


def selection_table(frozen: dict[str, CVResult], finetuned: dict[str, CVResult] | None, *,
                    choice: str, not_run: str = "") -> pd.DataFrame:
    """Both classifiers' weighted F1 (95% intervals) per kind and subset, and which one labels answers (Tables 9-10).

    Parameters
    ----------
    frozen, finetuned : dict of str to CVResult
        Per kind; ``finetuned`` None when its results are not available.
    choice : str
        :func:`selected`'s answer.
    not_run : str
        Why ``finetuned`` is None (shown in its row).
    """
    rows = []
    for key, results in ((FROZEN, frozen), (FINETUNED, finetuned)):
        if results is None:
            rows.append({"classifier": NAMES[key], "kind": "role", "subset": "all", "selected": choice == key,
                         "note": not_run})
            continue
        for kind, result in results.items():
            scores = result.scores
            mine = scores[(scores["model"] == NAMES[key]) & (scores["label"] == "Weighted average")]
            for row in mine.itertuples():
                rows.append({"classifier": NAMES[key], "kind": kind, "subset": row.subset, "weighted_f1": row.f1,
                             "ci_low": row.ci_low, "ci_high": row.ci_high, "selected": choice == key, "note": ""})
    columns = ["classifier", "kind", "subset", "weighted_f1", "ci_low", "ci_high", "selected", "note"]
    return pd.DataFrame(rows).reindex(columns=columns)


def used(frozen: dict[str, CVResult], finetuned: dict[str, CVResult] | None, *, choice: str) -> tuple[str, dict]:
    """Name and out-of-fold results of the classifier that labels answers (``finetuned`` if chosen and available).

    Parameters
    ----------
    frozen, finetuned : dict of str to CVResult
        Per kind; ``finetuned`` may be None.
    choice : str
        :func:`selected`'s answer.
    """
    if choice == FINETUNED and finetuned is not None:
        return NAMES[FINETUNED], finetuned
    return NAMES[FROZEN], frozen
