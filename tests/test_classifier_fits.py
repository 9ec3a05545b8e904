"""The classifiers' committed fitted artefacts (vqalib.papers.vizwiz_lf.classifier_fits, classifier_cv):
the out-of-fold results in data/models/cv/ are read instead of refitted when, and only when, they were
made from exactly the same inputs; `check` catches a changed, missing or stale file."""

from __future__ import annotations

import numpy as np
import pytest

import hashlib
import io
import shutil
import zipfile

import pandas as pd

from vqalib.core import config
from vqalib.core.caches import read_entry
from vqalib.papers.vizwiz_lf import (classifier_cv, classifier_finetune, classifier_finetune_fits, classifier_fits,
                                     classifier_io)


@pytest.fixture(scope="module")
def small(vizwiz):
    """Every source's answers to 15 questions (three per outer fold): real sentences, fast fits."""
    keep = sorted(vizwiz.answers["question_id"].unique())[:15]
    return (vizwiz.sentences[vizwiz.sentences["question_id"].isin(keep)].reset_index(drop=True),
            vizwiz.answers[vizwiz.answers["question_id"].isin(keep)].reset_index(drop=True))


def test_a_committed_result_is_read_without_fitting_and_only_for_its_own_inputs(tmp_path, monkeypatch, cv_inputs):
    features, truth, units, folds, params = cv_inputs
    fits, cache = tmp_path / "fits", tmp_path / "cache"
    fitted = classifier_cv._out_of_fold(lambda: features, truth, units, folds=folds, params=params, cache_dir=cache,
                                   fits_dir=fits, refit=True)
    name = f"{classifier_cv.out_of_fold_key(units, truth, folds=folds, params=params)}.npz"
    assert [p.name for p in fits.iterdir()] == [name]  # refit writes the committed file
    assert (fits / name).read_bytes() == read_entry(cache / name, kind="cross-validation cache")  # the cache's is sealed
    monkeypatch.setenv("VQALIB_NO_MODEL_CALLS", "1")  # from here on a fit would raise
    read = classifier_cv._out_of_fold(lambda: features, truth, units, folds=folds, params=params, cache_dir=tmp_path / "empty",
                                 fits_dir=fits)
    assert all(np.array_equal(a, b) for a, b in zip(fitted, read))
    changed = units.assign(sentence=units["sentence"].where(units.index > 0, "another sentence"))
    with pytest.raises(config.ModelCallForbidden):  # other inputs, other name: the committed file is not theirs
        classifier_cv._out_of_fold(lambda: features, truth, changed, folds=folds, params=params, cache_dir=tmp_path / "empty",
                              fits_dir=fits)
    asked = []  # a stored result is read without computing the features
    read = classifier_cv._out_of_fold(lambda: asked.append(1), truth, units, folds=folds, params=params,
                                      cache_dir=tmp_path / "empty", fits_dir=fits)
    assert not asked and all(np.array_equal(a, b) for a, b in zip(fitted, read))
    monkeypatch.setenv("VQALIB_REFIT", "1")  # the committed file is ignored: refitted
    with pytest.raises(config.ModelCallForbidden):
        classifier_cv._out_of_fold(lambda: features, truth, units, folds=folds, params=params, cache_dir=tmp_path / "empty",
                              fits_dir=fits)


def test_the_committed_files_are_plain_arrays():
    files = sorted(classifier_cv.CV_FITS_DIR.glob("*"))
    assert len(files) == 2 and all(p.suffix == ".npz" and len(p.stem) == 32 for p in files)
    for path in files:
        with np.load(path, allow_pickle=False) as stored:
            assert sorted(stored.files) == ["fold_of", "predicted", "probabilities", "thresholds"]
            assert stored["probabilities"].dtype == np.float64 and stored["fold_of"].max() == 4


@pytest.mark.full  # three refits of both classifiers: beside `vqalib classify check` in `make test-full`
def test_check_passes_on_what_train_wrote_and_names_each_problem(small, tmp_path):
    sentences, answers = small
    written = classifier_fits.write_fits(sentences, answers, out=tmp_path, echo=lambda _: None)
    assert {p.parent.name for p in written} == {"cv", tmp_path.name} and len(written) == 5  # with SHA256SUMS
    assert classifier_fits.check_fits(sentences, answers, models_dir=tmp_path) == []
    [first, second] = sorted((tmp_path / "cv").glob("*.npz"))
    first.write_bytes(second.read_bytes())  # a result that is not what a refit gives
    (tmp_path / "cv" / ("0" * 32 + ".npz")).write_bytes(second.read_bytes())  # a stale one
    problems = classifier_fits.check_fits(sentences, answers, models_dir=tmp_path)
    assert len(problems) == 3
    assert any(str(first) in p and "differs from a refit" in p for p in problems)
    assert any(f"cv/{first.name}: SHA-256 " in p for p in problems)  # and, before the refit, by its recorded hash
    assert any("0" * 32 in p and "stale" in p for p in problems)


# --- the committed files bit for bit: the SHA-256 recorded at training ---------------------------------------------

def test_the_hash_records_list_every_committed_model_file_and_match_it():
    models, finetuned = classifier_cv.CV_FITS_DIR.parent, classifier_finetune.FINETUNED_DIR
    assert set(classifier_io.recorded_hashes(models)) == {
        "vizwiz-lf_role_classifier.skops", "vizwiz-lf_info_classifier.skops",
        *(f"cv/{p.name}" for p in classifier_cv.CV_FITS_DIR.glob("*.npz"))}
    assert set(classifier_io.recorded_hashes(finetuned)) == {
        classifier_finetune.WEIGHTS_FILE, classifier_finetune_fits.OUT_OF_FOLD_FILE, classifier_finetune_fits.CHECK_FILE}
    assert classifier_fits.check_hashes() == []


def _flip_lowest_byte_of_a_weight(path):
    """Rewrite the skops zip at ``path`` with the lowest byte of its first float64 array's first value flipped: still a
    valid model file, whose rounded probabilities (all a refit is compared on) do not move."""
    with zipfile.ZipFile(path) as source:
        members = [(info, source.read(info)) for info in source.infolist()]
    flipped = False
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as target:
        for info, data in members:
            array = np.load(io.BytesIO(data), allow_pickle=False) if info.filename.endswith(".npy") else None
            if not flipped and array is not None and array.dtype == np.float64 and array.size:
                raw = bytearray(array.tobytes())
                raw[0] ^= 1  # little-endian: the lowest byte of the mantissa
                buffer = io.BytesIO()
                np.save(buffer, np.frombuffer(bytes(raw), dtype=np.float64).reshape(array.shape))
                data, flipped = buffer.getvalue(), True
            target.writestr(info, data)
    assert flipped


def test_a_changed_committed_file_is_refused_at_load_and_named_by_classify_check(tmp_path, monkeypatch, capsys):
    from vqalib.compendium import cli

    models = tmp_path / "models"
    shutil.copytree(classifier_cv.CV_FITS_DIR.parent, models, ignore=shutil.ignore_patterns("*.md"))
    role = models / "vizwiz-lf_role_classifier.skops"
    _flip_lowest_byte_of_a_weight(role)
    expected = classifier_io.recorded_hashes(models)[role.name]
    actual = hashlib.sha256(role.read_bytes()).hexdigest()
    assert actual != expected
    with pytest.raises(classifier_io.ModelFileError, match=f"{role.name}: SHA-256 {actual}, not the {expected} recorded "
                                                           ".*git checkout -- data/models.*vqalib classify train"):
        classifier_io.load(role)
    weights = models / "finetuned" / classifier_finetune.WEIGHTS_FILE
    data = bytearray(weights.read_bytes())
    data[len(data) // 2] ^= 1  # one bit of one float16 weight
    weights.write_bytes(bytes(data))
    with pytest.raises(classifier_io.ModelFileError, match=f"{weights.name}: SHA-256 "):
        classifier_finetune.load(weights)  # refused before the network is built
    assert [p.split(":")[0] for p in classifier_finetune_fits.check(pd.DataFrame(), models_dir=models / "finetuned")] \
        == [str(weights)]
    monkeypatch.setattr(classifier_fits, "CV_FITS_DIR", models / "cv")
    monkeypatch.setattr(classifier_fits, "FINETUNED_DIR", models / "finetuned")
    assert cli.main(["classify", "check"]) == 1  # named by file before the release is loaded or anything refitted
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert len(lines) == 2 and "identical" not in out and "Traceback" not in err
    assert lines[0].startswith(f"error: {role}: SHA-256 {actual}, not the {expected}")
    assert lines[1].startswith(f"error: {weights}: SHA-256 ")
    (models / classifier_io.HASH_RECORD).write_text("not a record\n")
    with pytest.raises(classifier_io.ModelFileError, match="SHA256SUMS, line 1: 'not a record' is not"):
        classifier_io.load(models / "vizwiz-lf_info_classifier.skops")
