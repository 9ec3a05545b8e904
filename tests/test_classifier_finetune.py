"""vqalib.papers.vizwiz_lf.classifier_finetune and classifier_choice: the fine-tuned sentence classifier, its committed
files, and which classifier labels answers (VizWiz-LF Tables 9-10)."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pandas as pd
import pytest

from vqalib.core import inference
from vqalib.papers.vizwiz_lf import classifier_choice, classifier_cv, classifier_finetune as ft, taxonomy
from vqalib.papers.vizwiz_lf import classifier_finetune_fits as fits
from vqalib.papers.vizwiz_lf.classifier_features import sentence_units


def _units(rows):
    frame = pd.DataFrame(rows, columns=["source", "question_id", "sentence_index", "sentence", "question", "roles",
                                        "info_sources"])
    frame["answer_id"] = frame["source"] + "|" + frame["question_id"].astype(str)
    return frame


HAND = _units([
    ("Expert", 1, 1, "It is blue.", "What colour?", ["Answer"], ["Image Content"]),
    ("Expert", 1, 0, "The photo shows a shirt.", "What colour?", ["Auxiliary"], ["Image Content"]),
    ("Expert", 1, 2, "Retake it in daylight.", "What colour?", ["Suggestion"], []),
    ("GPT-4V", 1, 0, "I cannot tell.", "What colour?", ["Answer Failure"], ["Image Quality"]),
])


def test_pair_texts_give_each_sentence_its_question_and_neighbours_in_answer_order():
    first, second = ft.pair_texts(HAND)
    assert first == HAND["sentence"].tolist()
    assert second[0] == "What colour? [SEP] The photo shows a shirt. [SEP] Retake it in daylight."
    assert second[1] == "What colour? [SEP] (start) [SEP] It is blue."
    assert second[2] == "What colour? [SEP] It is blue. [SEP] (end)"
    assert second[3] == "What colour? [SEP] (start) [SEP] (end)"  # another answer: never a neighbour


def test_decide_gives_every_sentence_a_role_and_allows_no_source():
    p = np.full((2, len(ft.LABELS)), 0.1)
    p[0, 2] = 0.3  # no role reaches 0.5: the most probable one
    p[1, [0, 1]] = 0.5  # 0.5 counts
    labels = ft.decide(p)
    assert labels[0, :ft.N_ROLES].tolist() == [0, 0, 1, 0, 0, 0, 0, 0] and labels[0, ft.N_ROLES:].sum() == 0
    assert labels[1, :2].tolist() == [1, 1]
    assert ft.LABELS == (*taxonomy.ROLES, *taxonomy.INFO_SOURCES)


def test_row_keys_change_with_the_text_the_context_and_the_labels():
    base = fits.row_keys(HAND)
    assert len(set(base.tolist())) == len(HAND)
    neighbour = HAND.copy()
    neighbour.loc[1, "sentence"] = "The photo shows a coat."  # row 0's previous sentence
    changed = fits.row_keys(neighbour)
    assert changed[0] != base[0] and changed[1] != base[1] and changed[3] == base[3]
    relabelled = HAND.copy()
    relabelled.at[3, "roles"] = ["Answer"]
    assert (fits.row_keys(relabelled) != base).tolist() == [False, False, False, True]


def test_stored_out_of_fold_results_are_read_only_for_their_own_rows_and_settings(tmp_path):
    result = dict(probabilities=np.arange(4 * len(ft.LABELS), dtype=float).reshape(4, -1) / 100,
                  fold=np.array([0, 0, 0, 1]), key=fits.settings_key(), row_keys=fits.row_keys(HAND),
                  seconds=np.array([1.0, 2.0]))
    path = fits.write_out_of_fold(result, tmp_path / "oof.npz")
    with np.load(path, allow_pickle=False) as data:  # plain arrays: readable without pickle
        assert set(data.files) == {"probabilities", "fold", "key", "row_keys", "seconds"}
    read = fits.read_out_of_fold(HAND, path=path)
    assert np.array_equal(read["probabilities"], result["probabilities"])
    # a part of the release (whole answers, in another order) gets its own rows
    part = HAND.iloc[[3]].reset_index(drop=True)
    assert np.array_equal(fits.read_out_of_fold(part, path=path)["probabilities"], result["probabilities"][[3]])
    assert fits.read_out_of_fold(HAND, path=path, settings=dict(ft.SETTINGS, epochs=1)) is None
    edited = HAND.copy()
    edited.loc[2, "sentence"] = "Retake it outside."
    assert fits.read_out_of_fold(edited, path=path) is None
    assert fits.read_out_of_fold(HAND, path=tmp_path / "absent.npz") is None


def test_cv_results_score_like_the_frozen_classifier():
    p = np.zeros((4, len(ft.LABELS)))
    for k, name in enumerate(["Answer", "Auxiliary", "Suggestion", "Answer"]):
        p[k, ft.LABELS.index(name)] = 0.9
    p[[0, 1, 3], ft.LABELS.index("Image Content")] = 0.9
    results = fits.cv_results(HAND, dict(probabilities=p, fold=np.array([0, 0, 0, 1]), key="k", seconds=np.array([1.0])))
    role = results["role"].scores
    mine = role[(role["subset"] == "all") & (role["label"] == "Answer")].iloc[0]
    assert mine["f1"] == pytest.approx(2 / 3) and mine["model"] == fits.MODEL_NAME
    trusted = role[(role["subset"] == "trusted sources") & (role["label"] == "Weighted average")].iloc[0]
    assert trusted["f1"] == 1.0 and trusted["ci_low"] == 1.0  # GPT-4V (the only miss) is not a trusted source
    assert results["role"].predictions["predicted"].tolist() == [("Answer",), ("Auxiliary",), ("Suggestion",),
                                                                ("Answer",)]
    assert results["info"].predictions["predicted"].tolist()[2] == ()
    answers = classifier_cv.answer_decisions(results["role"].predictions)
    assert answers["by_labels"].tolist() == [False, True] and answers["by_predictions"].tolist() == [False, False]


def test_grouped_f1_intervals_bracket_the_estimate_and_are_seeded():
    rng = np.random.default_rng(1)
    truth = rng.integers(0, 2, (400, 3))
    predicted = np.where(rng.random((400, 3)) < 0.8, truth, 1 - truth)
    groups = np.repeat(np.arange(100), 4)
    names = ("a", "b", "c", "Weighted average")
    intervals = inference.grouped_f1_intervals(truth, predicted, groups=groups, labels=names)
    table = classifier_cv.f1_table(truth, predicted, labels=names[:3]).merge(
        intervals.rename(columns={"name": "label"}), on="label")
    assert len(table) == 4 and ((table["ci_low"] <= table["f1"]) & (table["f1"] <= table["ci_high"])).all()
    assert (table["ci_high"] - table["ci_low"]).between(0.02, 0.3).all()
    assert intervals.equals(inference.grouped_f1_intervals(truth, predicted, groups=groups, labels=names))
    perfect = inference.grouped_f1_intervals(truth, truth, groups=groups, labels=names)
    assert (perfect[["ci_low", "ci_high"]] == 1.0).all().all()


def test_choose_takes_the_fine_tuned_classifier_only_when_it_scores_higher():
    assert classifier_choice.choose({"frozen": 0.664, "finetuned": 0.673}) == "finetuned"
    assert classifier_choice.choose({"frozen": 0.664, "finetuned": 0.664}) == "frozen"
    assert classifier_choice.choose({"frozen": 0.664}) == "frozen"


@pytest.fixture(scope="module")
def tiny(vizwiz):
    """A network trained for one epoch on the answers to 8 questions (one layer): seconds, but real."""
    keep = sorted(vizwiz.answers["question_id"].unique())[:8]
    units = sentence_units(vizwiz.sentences[vizwiz.sentences["question_id"].isin(keep)],
                           vizwiz.answers).reset_index(drop=True)
    settings = dict(ft.SETTINGS, top=1, epochs=1, n_splits=2)
    return units, settings, ft.fit(units, settings=settings, echo=lambda line: None)


@pytest.mark.full  # trains a network (about 15 s)
def test_saved_weights_are_float16_safetensors_and_predict_the_same_on_one_thread(tiny, tmp_path):
    import torch

    units, settings, net = tiny
    path = ft.save(net, tmp_path / "w.safetensors", metadata={"settings": settings, "note": "tiny"})
    assert not zipfile.is_zipfile(path) and path.read_bytes()[8:9] == b"{"  # a JSON header, no pickle
    header = json.loads(path.read_bytes()[8:8 + int.from_bytes(path.read_bytes()[:8], "little")])
    assert {v["dtype"] for k, v in header.items() if k != "__metadata__"} == {"F16"}
    model = ft.load(path)
    assert model[1]["note"] == "tiny" and next(model[0].parameters()).dtype == torch.float64
    two = ft.predict_proba(units, model=model)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        one = ft.predict_proba(units.iloc[::-1], model=model)[::-1]  # other batches, other padding, one thread
    finally:
        torch.set_num_threads(threads)
    assert two.shape == (len(units), len(ft.LABELS)) and np.abs(one - two).max() <= fits.CHECK_TOLERANCE
    assert np.array_equal(ft.decide(one), ft.decide(two))
    assert ft.predict_proba(units.iloc[:0], model=model).shape == (0, len(ft.LABELS))


def test_the_committed_files_are_small_plain_and_made_from_this_release(vizwiz):
    folder = ft.FINETUNED_DIR
    weights = folder / ft.WEIGHTS_FILE
    assert weights.stat().st_size <= 25 * 2**20
    units = sentence_units(vizwiz.sentences, vizwiz.answers)
    stored = fits.read_out_of_fold(units)
    assert stored is not None, "data/models/finetuned/out_of_fold.npz was not made from this release"
    assert sorted(set(stored["fold"].tolist())) == [0, 1, 2, 3, 4] and not np.isnan(stored["probabilities"]).any()
    with np.load(folder / fits.CHECK_FILE, allow_pickle=False) as data:
        assert np.array_equal(data["rows"], fits.check_rows(units))
    scores = classifier_choice.recorded_scores()
    assert set(scores) == {"frozen", "finetuned"}
    # the recorded score is the one the committed out-of-fold results give
    cv = fits.cv_results(units, stored)["role"].scores
    assert round(float(cv[(cv["subset"] == "all") & (cv["label"] == "Weighted average")]["f1"].iloc[0]), 3) == \
        scores["finetuned"]
