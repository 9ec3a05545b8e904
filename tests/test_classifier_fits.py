"""The classifiers' committed fitted artefacts (vqalib.papers.vizwiz_lf.classifier_fits, classifier_cv):
the out-of-fold results in data/models/cv/ are read instead of refitted when, and only when, they were
made from exactly the same inputs; `check` catches a changed, missing or stale file."""

from __future__ import annotations

import numpy as np
import pytest

from vqalib.core import config
from vqalib.core.caches import read_entry
from vqalib.papers.vizwiz_lf import classifier_cv, classifier_fits


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
    assert {p.parent.name for p in written} == {"cv", tmp_path.name} and len(written) == 4
    assert classifier_fits.check_fits(sentences, answers, models_dir=tmp_path) == []
    [first, second] = sorted((tmp_path / "cv").glob("*.npz"))
    first.write_bytes(second.read_bytes())  # a result that is not what a refit gives
    (tmp_path / "cv" / ("0" * 32 + ".npz")).write_bytes(second.read_bytes())  # a stale one
    problems = classifier_fits.check_fits(sentences, answers, models_dir=tmp_path)
    assert len(problems) == 2
    assert any(str(first) in p and "differs from a refit" in p for p in problems)
    assert any("0" * 32 in p and "stale" in p for p in problems)
