"""vqalib.papers.vizwiz_lf.classifier: offline role / information-source classifier (VizWiz-LF Tables 9-10, §7 abstention)."""

from __future__ import annotations

import hashlib
import json
import pickle
import re
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from vqalib.papers.vizwiz_lf import (classifier, classifier_cv, classifier_features, classifier_io, classifier_tables,
                                     label_noise, labelling as vizwiz_lf_labelling,
                                     llm_classifier as vizwiz_lf_llm_classifier, taxonomy)


class _Planted:
    """Unpickling this creates ``marker``: the side effect of a pickle someone planted."""

    def __init__(self, marker: Path) -> None:
        self.marker = Path(marker)

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def _planted(marker: Path) -> bytes:
    proof = marker.with_name(marker.name + "-proof")
    pickle.loads(pickle.dumps(_Planted(proof)))
    assert proof.exists()  # the payload is live: unpickling it would leave the marker
    return pickle.dumps(_Planted(marker))


@pytest.fixture(scope="module")
def small(vizwiz):
    """Every source's answers to 60 questions (about 850 sentences): fast, but real."""
    keep = sorted(vizwiz.answers["question_id"].unique())[:60]
    return (vizwiz.sentences[vizwiz.sentences["question_id"].isin(keep)].reset_index(drop=True),
            vizwiz.answers[vizwiz.answers["question_id"].isin(keep)].reset_index(drop=True))


@pytest.fixture(scope="module")
def small_model(small):
    sentences, answers = small
    return classifier.train(sentences, answers, kind="role", seed=0, inner_splits=2)


def test_folds_never_split_a_question(vizwiz):
    units = classifier_features.sentence_units(vizwiz.sentences, vizwiz.answers)
    folds = classifier.question_folds(units, n_splits=5, seed=0)
    assert len(folds) == 5
    tested = np.concatenate([test for _, test in folds])
    assert sorted(tested) == list(range(len(units)))  # every sentence is tested exactly once
    qid = units["question_id"].to_numpy()
    for train, test in folds:
        assert not set(qid[train]) & set(qid[test])  # so every source's answer to a question is on one side
    assert classifier.question_folds(units, seed=1)[0][1].tolist() != folds[0][1].tolist()  # the seed shuffles


def test_f1_table_on_a_hand_made_example():
    truth = np.array([[1, 0], [1, 1], [0, 1], [0, 0]])
    predicted = np.array([[1, 0], [0, 1], [0, 1], [1, 0]])
    table = classifier_cv.f1_table(truth, predicted, labels=("A", "B")).set_index("label")
    # A: 1 true positive, 1 false positive, 1 false negative -> 0.5; B: perfect -> 1.0
    assert table.loc["A", "f1"] == pytest.approx(0.5)
    assert table.loc["B", "f1"] == pytest.approx(1.0)
    assert table.loc["Weighted average", "f1"] == pytest.approx((2 * 0.5 + 2 * 1.0) / 4)
    assert table["support"].tolist() == [2, 2, 4]


def test_baselines():
    majority = classifier_cv.majority_predictions(3, kind="role")
    assert (majority[:, taxonomy.ROLES.index("Answer")] == 1).all() and majority.sum() == 3
    info = classifier_cv.majority_predictions(2, kind="info")
    assert (info[:, taxonomy.INFO_SOURCES.index("Image Content")] == 1).all()
    train = np.array([[1, 0, 0], [0, 1, 1]])
    draws = classifier_cv.random_predictions(train, 50, rng=np.random.default_rng(0))
    assert {tuple(r) for r in draws} <= {(1, 0, 0), (0, 1, 1)}  # only combinations seen in training
    again = classifier_cv.random_predictions(train, 50, rng=np.random.default_rng(0))
    assert np.array_equal(draws, again)


def test_decide_gives_every_sentence_a_role_and_allows_no_source():
    p = np.array([[0.2, 0.4, 0.1], [0.9, 0.1, 0.8], [0.1, 0.1, 0.3]])
    roles = classifier.decide(p, thresholds=np.array([0.5, 0.5, 0.5]), min_labels=1)
    assert roles.tolist() == [[0, 1, 0], [1, 0, 1], [0, 0, 1]]
    sources = classifier.decide(p, thresholds=np.array([0.5, 0.5, 0.5]), min_labels=0)
    assert sources[0].sum() == 0


def test_tune_thresholds_finds_the_separating_value():
    p = np.array([[0.1], [0.2], [0.3], [0.6], [0.7]])
    truth = np.array([[0], [0], [1], [1], [1]])
    assert 0.2 < classifier.tune_thresholds(p, truth)[0] <= 0.3  # any value there gives F1 = 1
    assert classifier.tune_thresholds(p, np.zeros_like(truth))[0] == 0.5  # no positives: default


def test_context_features_follow_sentence_order():
    units = pd.DataFrame({"answer_id": ["a", "a", "a", "b"], "sentence_index": [2, 0, 1, 0],
                          "sentence": ["Third.", "First.", "Second.", "Alone."], "question": ["Q?"] * 4})
    x = classifier_features.feature_matrix(units)
    context = pd.DataFrame(x[:, -len(classifier_features.CONTEXT_FEATURES):], columns=classifier_features.CONTEXT_FEATURES)
    assert context["relative_position"].tolist() == [1.0, 0.0, 0.5, 0.0]
    assert context["is_first"].tolist() == [0, 1, 0, 1] and context["is_last"].tolist() == [1, 0, 0, 1]
    assert context["single_sentence"].tolist() == [0, 0, 0, 1]
    assert context.loc[1, "cos_previous"] == 0 and context.loc[0, "cos_next"] == 0 and context.loc[3, "cos_next"] == 0
    assert context.loc[2, "cos_previous"] != 0 and context.loc[2, "cos_next"] != 0
    assert x.shape[1] == 4 * classifier_features.EMBED_DIM + len(classifier_features.CONTEXT_FEATURES)


def test_training_is_deterministic_and_gives_every_sentence_a_role(small, small_model):
    sentences, answers = small
    again = classifier.train(sentences, answers, kind="role", seed=0, inner_splits=2)
    features = classifier_features.feature_matrix(classifier_features.sentence_units(sentences, answers))
    p1, p2 = small_model.predict_proba(features), again.predict_proba(features)
    assert np.array_equal(p1, p2) and np.array_equal(small_model.thresholds, again.thresholds)
    predicted = small_model.decide(p1)
    assert (predicted.sum(axis=1) >= 1).all()
    meta = small_model.metadata
    assert meta["training_data"]["excluded_sources"] == ["GPT-4V"]
    assert "GPT-4V" not in meta["training_data"]["sources"]
    assert meta["sklearn_version"] and meta["encoder"] == classifier_features.PACKAGED_ENCODER
    assert len(meta["training_data"]["sha256"]) == 64


@pytest.mark.full  # slow for `make test` (its 10-minute budget); CI runs it in `make test-full`
def test_save_load_round_trip_is_identical_and_small(small, small_model, tmp_path):
    sentences, answers = small
    path = classifier_io.save(small_model, tmp_path / "role.skops")
    loaded = classifier_io.load(path)
    features = classifier_features.feature_matrix(classifier_features.sentence_units(sentences, answers))
    assert np.array_equal(loaded.predict_proba(features), small_model.predict_proba(features))
    assert loaded.metadata == small_model.metadata and loaded.encoder == classifier_features.PACKAGED_ENCODER
    assert loaded.labels == small_model.labels and np.array_equal(loaded.thresholds, small_model.thresholds)
    assert path.stat().st_size < 3_000_000  # the scikit-learn pipeline only: no encoder weights
    assert hasattr(small_model.pipeline[-1], "_optimizer")  # saving a slim copy leaves the model intact
    assert path.read_bytes()[:2] == b"PK" and zipfile.is_zipfile(path)  # skops' zip, not a pickle
    assert classifier_io.save(loaded, tmp_path / "again.skops").read_bytes() == path.read_bytes()  # byte-identical


def test_sentence_classifier_is_a_scikit_learn_estimator(small, small_model, tmp_path):
    """It has fit/predict/predict_proba/get_params; fitting the features of the trusted sources
    gives the model train() gives, and a loaded model describes itself the same way."""
    from sklearn.base import clone, is_classifier
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted

    sentences, answers = small
    assert is_classifier(small_model)
    assert small_model.get_params() == {"kind": "role", "estimator": "mlp", "seed": 0, "tune": True, "inner_splits": 2,
                                        "encoder": classifier_features.PACKAGED_ENCODER, "encoder_name": classifier_features.ENCODER_NAME}
    fresh = clone(small_model)
    with pytest.raises(NotFittedError):
        check_is_fitted(fresh)
    units = classifier_features.sentence_units(sentences, answers)
    x, y = classifier_features.feature_matrix(units), classifier_features.label_matrix(units, kind="role")
    trusted = ~units["source"].isin(classifier.UNTRUSTED_SOURCES).to_numpy()
    assert fresh.fit(x[trusted], y[trusted], groups=units["question_id"].to_numpy()[trusted]) is fresh
    check_is_fitted(fresh)
    assert np.array_equal(fresh.predict_proba(x), small_model.predict_proba(x))
    assert np.array_equal(fresh.thresholds, small_model.thresholds) and fresh.labels == taxonomy.ROLES
    assert np.array_equal(fresh.predict(x), small_model.decide(small_model.predict_proba(x)))
    with pytest.raises(ValueError, match="needs groups"):
        clone(fresh).fit(x, y)
    loaded = classifier_io.load(classifier_io.save(small_model, tmp_path / "role.skops"))
    assert loaded.get_params() == {**small_model.get_params(), "inner_splits": 3}  # not recorded: the default


@pytest.mark.full  # slow for `make test` (its 10-minute budget); CI runs it in `make test-full`
def test_logreg_models_round_trip_under_the_allow_list(small, tmp_path):
    sentences, answers = small
    model = classifier.train(sentences, answers, kind="info", seed=0, estimator="logreg", tune=False)
    loaded = classifier_io.load(classifier_io.save(model, tmp_path / "info.skops"))
    features = classifier_features.feature_matrix(classifier_features.sentence_units(sentences, answers))
    assert np.array_equal(loaded.predict_proba(features), model.predict_proba(features))


def test_load_rejects_other_objects(tmp_path):
    import skops.io

    skops.io.dump({"not": "a model"}, tmp_path / "x.skops")
    with pytest.raises(classifier_io.ModelFileError, match="not a vqalib.classify.SentenceClassifier/skops-1"):
        classifier_io.load(tmp_path / "x.skops")


def test_planted_pickles_are_refused_before_anything_is_unpickled(tmp_path, monkeypatch):
    """A pickle or joblib file where a model is expected, whatever its name, is refused
    with an error naming it; the committed models and the default paths load only skops files."""
    import joblib

    marker = tmp_path / "ran"
    planted = [tmp_path / "vizwiz-lf_role_classifier.skops", tmp_path / "model.joblib"]
    for path in planted:
        path.write_bytes(_planted(marker))
    joblib.dump(_Planted(marker), tmp_path / "compressed.joblib", compress=3)
    for path in (*planted, tmp_path / "compressed.joblib"):
        with pytest.raises(classifier_io.ModelFileError, match=re.escape(str(path)) + ".*never loaded"):
            classifier_io.load(path)
    # default_models() reads MODEL_PATHS in vqalib.papers.vizwiz_lf.labelling
    monkeypatch.setattr(vizwiz_lf_labelling, "MODEL_PATHS", {"role": planted[0], "info": planted[1]})
    with pytest.raises(classifier_io.ModelFileError, match="unpickling can run code"):
        vizwiz_lf_labelling.default_models()
    assert not marker.exists()


def test_skops_files_with_types_outside_the_allow_list_are_refused(small_model, tmp_path):
    """skops itself trusts every scikit-learn estimator; load admits only the classifier's own types,
    checked on the JSON schema before skops builds any object."""
    import skops.io
    from sklearn.tree import DecisionTreeClassifier

    other = tmp_path / "tree.skops"
    skops.io.dump({"format": classifier_io.MODEL_FORMAT, "pipeline": DecisionTreeClassifier()}, other)
    with pytest.raises(classifier_io.ModelFileError, match=re.escape(str(other)) + ".*DecisionTreeClassifier"):
        classifier_io.load(other)
    # a hand-edited schema that names a function instead of the pipeline's class
    source = classifier_io.save(small_model, tmp_path / "role.skops")
    with zipfile.ZipFile(source) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    schema = json.loads(members["schema.json"])
    schema["content"]["pipeline"].update(__module__="pathlib", __class__="Path.touch")
    members["schema.json"] = json.dumps(schema).encode()
    edited = tmp_path / "edited.skops"
    with zipfile.ZipFile(edited, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    with pytest.raises(classifier_io.ModelFileError, match="pathlib.Path.touch"):
        classifier_io.load(edited)


@pytest.mark.full  # cross-validates on the real features (about 5 s): make test-full, keeping the cold make test within its budget
def test_planted_pickle_in_the_cross_validation_cache_is_never_run(tmp_path, cv_inputs):
    """The out-of-fold cache (``classify-cv``) reads ``.npz`` arrays only; a pickle, or an
    object array, in its place is ignored with a warning naming it and recomputed."""
    features, truth, units, folds, params = cv_inputs
    cache, marker = tmp_path / "cv", tmp_path / "ran"
    first = classifier_cv._out_of_fold(lambda: features, truth, units, folds=folds, params=params, cache_dir=cache)
    [stored] = list(cache.glob("*.npz"))
    for planted in (_planted(marker), None):
        if planted is None:  # an .npz whose array is a pickled object
            np.savez(stored, probabilities=np.array([_Planted(marker)], dtype=object))
        else:
            stored.write_bytes(planted)
        with pytest.warns(UserWarning, match=re.escape(str(stored))):
            again = classifier_cv._out_of_fold(lambda: features, truth, units, folds=folds, params=params, cache_dir=cache)
        assert not marker.exists()
        assert all(np.array_equal(a, b) for a, b in zip(first, again))


def test_cross_validate_on_a_subset(small):
    sentences, answers = small
    result = classifier_cv.cross_validate(sentences, answers, kind="role", n_splits=3, seed=0, tune=False, n_random=3)
    scores = result.scores.set_index(["model", "subset", "label"])
    mine = "MiniLM + context (mlp)"
    assert set(result.scores["model"]) == {mine, "Majority", "Random (mean of 3)"}
    assert 0.3 < scores.loc[(mine, "all", "Weighted average"), "f1"] <= 1
    assert scores.loc[("Majority", "all", "Confirmation"), "f1"] == 0
    weighted = scores.xs("Weighted average", level="label")["f1"]
    assert weighted[(mine, "all")] > weighted[("Majority", "all")]
    p = result.predictions
    assert len(p) == len(sentences) and p["predicted"].map(len).min() >= 1
    assert (p.groupby("question_id")["fold"].nunique() == 1).all()  # a question sits in one test fold
    agreement = classifier_cv.abstention_agreement(p)
    assert set(agreement["source"]) == set(sentences["source"]) and agreement["agreement"].between(0, 1).all()


def test_abstention_agreement_on_a_hand_made_frame():
    p = pd.DataFrame({"source": ["A", "A", "A", "B"], "question_id": [1, 1, 2, 1],
                      "labels": [("Answer",), ("Answer Failure",), ("Answer",), ("Answer",)],
                      "predicted": [("Answer Failure",), ("Answer",), ("Answer Failure",), ("Answer",)]})
    t = classifier_cv.abstention_agreement(p).set_index("source")
    assert t.loc["A", "agreement"] == 0.5 and t.loc["B", "agreement"] == 1.0  # A/1 agrees, A/2 does not
    assert t.loc["A", "abstain_labels"] == 0.5 and t.loc["A", "n_answers"] == 2
    d = classifier_cv.answer_decisions(p)  # one row per answer, in order of appearance
    assert d[["source", "question_id"]].values.tolist() == [["A", 1], ["A", 2], ["B", 1]]
    assert d["by_labels"].tolist() == [True, False, False] and d["by_predictions"].tolist() == [True, True, False]
    assert "p_max" not in d and "fold" not in d  # only when the sentence columns exist


def test_abstention_agreement_detects_labels_displaced_by_one_answer():
    # the labels of answer i describe answer i + 1: own agreement is poor, next-answer agreement perfect
    decisions = [True, False, False, True, True, False, True, False]
    p = pd.DataFrame({"source": "A", "question_id": range(8),
                      "labels": [("Answer Failure",) if d else ("Answer",) for d in decisions[1:] + [False]],
                      "predicted": [("Answer Failure",) if d else ("Answer",) for d in decisions]})
    t = classifier_cv.abstention_agreement(p.sample(frac=1, random_state=0)).iloc[0]  # row order must not matter
    assert t["agreement_next_answer"] == 1.0 and t["kappa_next_answer"] == pytest.approx(1.0)
    assert t["agreement"] == 0.375 and t["kappa"] < 0
    assert 0.1 < t["agreement_ci_low"] < 0.375 < t["agreement_ci_high"] < 0.75  # Wilson interval of 3 of 8


def test_abstention_threshold_is_chosen_on_the_other_folds_only():
    # fold 0: answers abstain at P >= 0.3; fold 1: at P >= 0.7. Each fold's threshold comes from the other fold.
    p = pd.DataFrame({"source": "A", "question_id": [1, 2, 3, 4], "fold": [0, 0, 1, 1],
                      "labels": [("Answer Failure",), ("Answer",), ("Answer Failure",), ("Answer",)],
                      "predicted": [("Answer",)] * 4, "p_Answer Failure": [0.35, 0.2, 0.75, 0.5]})
    t = classifier_cv.abstention_decision_variants(p, exclude_sources=(), grid=np.array([0.3, 0.7])).set_index("rule")
    rule = "max P(Answer Failure) >= t, t tuned on the other folds"
    # fold 0 gets t = 0.7 (fold 1's best): 0.35 and 0.2 both "answer" -> 1 of 2; fold 1 gets t = 0.3 -> 1 of 2
    assert t.loc[rule, "agreement"] == 0.5
    assert t.loc["any sentence predicted Answer Failure", "agreement"] == 0.5


def test_label_noise_duplicates_and_misaligned_answers():
    sentences = pd.DataFrame({
        "source": ["A", "B", "A", "B", "A"], "question_id": [1, 1, 2, 2, 3], "sentence_index": 0,
        "sentence": ["Yes.", "yes", "It is red", "it is RED!", "Unique."],
        "roles": [("Answer",), ("Answer",), ("Answer",), ("Auxiliary",), ("Misc",)],
        "info_sources": [("Image Content",)] * 5})
    noise = label_noise.label_noise(sentences).set_index(["measure", "kind", "source"])["value"]
    # pairs: yes A<->B agree; red A<->B disagree. Answer: 2 TP, 1 FP, 1 FN -> 2/3 on support 3; Auxiliary 0 on 1
    assert noise[("duplicate_consistency_f1", "role", "all")] == pytest.approx((3 * 2 / 3 + 0) / 4)
    assert noise[("duplicate_exact_agreement", "role", "all")] == 0.5
    assert noise[("duplicate_consistency_f1", "info", "all")] == 1.0

    units = pd.DataFrame({"source": "A", "question_id": [1, 1, 1, 2, 2], "sentence_index": [0, 1, 2, 0, 1]})
    truth = np.array([[0, 1], [1, 0], [1, 0], [1, 0], [0, 1]])  # answer 1: lists shifted by one
    probabilities = np.array([[0.95, 0.05], [0.95, 0.05], [0.05, 0.95], [0.9, 0.1], [0.1, 0.9]])
    table = label_noise.misaligned_answers(units, probabilities, truth).set_index("question_id")
    assert table.loc[1, "misaligned"] and table.loc[1, "rotated"]
    assert not table.loc[2, "misaligned"]


def test_split_sentences_regex():
    split = lambda t: vizwiz_lf_labelling.split_sentences(t, splitter="regex")  # noqa: E731
    assert split("I cannot tell what this is because the photo is blurry. Please retake it.") == [
        "I cannot tell what this is because the photo is blurry", "Please retake it"]
    assert split("Dr. Smith sells 3.5 oz cans in the U.S. now! Is it red? Yes.") == [
        "Dr. Smith sells 3.5 oz cans in the U.S. now!", "Is it red?", "Yes"]
    assert split('It says "Soup." Then more.') == ['It says "Soup."', "Then more"]
    assert split("") == [] and split("   ") == []
    with pytest.raises(ValueError):
        vizwiz_lf_labelling.split_sentences("x", splitter="nltk")


@pytest.mark.parametrize("which", ["frozen", "finetuned"])
@pytest.mark.full  # slow for `make test` (its 10-minute budget); CI runs it in `make test-full`
def test_label_answers_with_the_committed_models(which):
    frame = pd.DataFrame({
        "model": ["m1", "m1"], "question": ["What is this?", "What color is this shirt?"],
        "answer": ["I cannot tell what this is because the photo is blurry. Please retake it.",
                   "The shirt is dark blue with white stripes. It appears to be made of cotton."]})
    sentences, answers = vizwiz_lf_labelling.label_answers(frame, classifier=which)
    assert list(sentences.columns) == ["model", "answer_index", "sentence_index", "sentence", "roles", "info_sources"]
    assert sentences["sentence"].tolist()[:2] == ["I cannot tell what this is because the photo is blurry",
                                                  "Please retake it"]
    assert len(sentences) == 4 and answers["n_sentences"].tolist() == [2, 2]
    assert all(isinstance(r, tuple) and len(r) >= 1 and set(r) <= set(taxonomy.ROLES) for r in sentences["roles"])
    assert all(set(i) <= set(taxonomy.INFO_SOURCES) for i in sentences["info_sources"])
    assert answers["abstains"].dtype == bool
    assert answers["abstains"].tolist() == [True, False]  # the committed models get these two clear cases
    assert "Answer Failure" in sentences.loc[0, "roles"]
    empty_s, empty_a = vizwiz_lf_labelling.label_answers(pd.DataFrame({"question": ["Q?"], "answer": [""]}),
                                                         classifier=which)
    assert empty_s.empty and empty_a["n_sentences"].tolist() == [0] and empty_a["abstains"].tolist() == [False]


def test_committed_models_metadata():
    role, info = vizwiz_lf_labelling.default_models()
    assert role.kind == "role" and info.kind == "info" and role.min_labels == 1 and info.min_labels == 0
    for model, path in ((role, classifier.MODEL_PATHS["role"]), (info, classifier.MODEL_PATHS["info"])):
        assert path.stat().st_size < 3_000_000 and path.suffix == ".skops" and zipfile.is_zipfile(path)
        assert model.metadata["cross_validation"]["f1"]["all: Weighted average"] > 0.6
        assert model.encoder_name == classifier_features.ENCODER_NAME
    assert not list(classifier.MODEL_DIR.glob("*.joblib")) and not list(classifier.MODEL_DIR.glob("*.pkl"))  # no pickles


# --- the paper's few-shot LLM classifier (A.2.2) ----------------------------------------------

def test_llm_prompt_has_definitions_and_eight_examples():

    for kind in ("role", "info"):
        messages = vizwiz_lf_llm_classifier.classification_messages(question="What is this?", sentences=["A cup.", "It is red."],
                                                    kind=kind)
        user = messages[-1]["content"]
        assert len(vizwiz_lf_llm_classifier.ROLE_EXAMPLES if kind == "role" else vizwiz_lf_llm_classifier.INFO_EXAMPLES) == 8
        assert user.count("Question:") == 9 and user.endswith("[0] A cup. [1] It is red. " + ("Roles:" if kind == "role" else "Types:"))
    assert "Answer Failure" in vizwiz_lf_llm_classifier.ROLE_INSTRUCTION and "Image Quality" in vizwiz_lf_llm_classifier.INFO_INSTRUCTION


def test_llm_prompts_are_packaged_data_files():
    """The few-shot prompts are JSON files of vqalib.papers.vizwiz_lf, loaded by name; every
    taxonomy label occurs in its instruction and in the examples' labels, which are all canonical."""
    from importlib import resources

    from vqalib.core.prompts import prompt_file

    folder = resources.files("vqalib.papers.vizwiz_lf").joinpath("prompts")
    assert sorted(p.name for p in folder.iterdir() if p.name.endswith(".json")) == ["info_classifier.json", "lave.json",
                                                                                   "role_classifier.json"]
    for name, kind, labels, header in (("role_classifier", "role", taxonomy.ROLES, "Roles"),
                                       ("info_classifier", "info", taxonomy.INFO_SOURCES, "Types")):
        prompt = prompt_file("vqalib.papers.vizwiz_lf", name)
        assert prompt["header"] == header and len(prompt["examples"]) == 8
        examples = vizwiz_lf_llm_classifier.ROLE_EXAMPLES if kind == "role" else vizwiz_lf_llm_classifier.INFO_EXAMPLES
        assert examples == tuple((e["question"], tuple(e["sentences"]), tuple(map(tuple, e["labels"])))
                                 for e in prompt["examples"])
        assert all(len(e["labels"]) == len(e["sentences"]) for e in prompt["examples"])
        used = {label for e in prompt["examples"] for row in e["labels"] for label in row}
        canonical = {taxonomy.canonical_label(label, kind=kind)[0] for label in used}
        assert canonical == set(labels)  # every label of the taxonomy is shown, and nothing else
        for label in used:
            assert f"# {'Role' if kind == 'role' else 'Type'}: {label} # Definition" in prompt["instruction"]
        messages = vizwiz_lf_llm_classifier.classification_messages(question="Q?", sentences=["S."], kind=kind)
        assert messages[0] == {"role": "system", "content": prompt["instruction"]}
        # the messages are byte-identical to those of the Python-string prompt this file replaced
        digest = hashlib.sha256("\x00".join(m["content"] for m in messages).encode()).hexdigest()
        assert [len(m["content"]) for m in messages] == ([3176, 3983] if kind == "role" else [1645, 4155])
        assert digest == ("d240218248e7cd36ff767c6cc99b61958abb35e9dd6e0a42818f699984fe6b7c" if kind == "role"
                          else "a79fa2a739b415dc53b9faa0f04714d624e39b7cc1b6f588337a0a47ffde4be1")
    with pytest.raises(ValueError, match="not a prompt file name"):
        prompt_file("vqalib.papers.vizwiz_lf", "../../x")
    load_again = prompt_file("vqalib.papers.vizwiz_lf", "role_classifier")
    load_again["examples"].clear()  # a copy: the module's examples are untouched
    assert len(prompt_file("vqalib.papers.vizwiz_lf", "role_classifier")["examples"]) == 8


def test_llm_parser_is_strict():

    ok = vizwiz_lf_llm_classifier.parse_labels("Roles: [0] Confirmation of Photo, Answer [1] Answer Failure, Explanation of Reasoning",
                               n_sentences=2)
    assert ok == [("Confirmation", "Answer"), ("Answer Failure", "Explanation")]
    assert vizwiz_lf_llm_classifier.parse_labels("Types: [0] Image Content [1] N/A", n_sentences=2, kind="info") == [("Image Content",), ()]
    with pytest.raises(vizwiz_lf_llm_classifier.LabelParseError, match="expected labels for sentences 0..2"):
        vizwiz_lf_llm_classifier.parse_labels("[0] Answer [1] Misc", n_sentences=3)          # wrong sentence count
    with pytest.raises(vizwiz_lf_llm_classifier.LabelParseError, match="unknown role label 'Greeting'"):
        vizwiz_lf_llm_classifier.parse_labels("[0] Answer [1] Greeting", n_sentences=2)      # unknown label
    with pytest.raises(vizwiz_lf_llm_classifier.LabelParseError, match="no role"):
        vizwiz_lf_llm_classifier.parse_labels("[0] Answer [1] ", n_sentences=2)


def test_llm_classify_counts_unparseable_replies(tmp_path, capsys):
    from vqalib.core.judge.cache import CachedJudge

    class Scripted:
        name, model = "scripted", "fixed"

        def complete(self, messages, *, temperature=0.0, max_tokens=256):
            return "Roles: [0] Answer" if "cup" in messages[-1]["content"].split("Question:")[-1] else "no idea"

    answers = pd.DataFrame({"answer_id": [1, 2], "question": ["What is this?", "What is that?"],
                            "sentences": [["A cup."], ["A dog.", "It sits."]]})
    out = vizwiz_lf_llm_classifier.llm_classify(answers, judge=CachedJudge(Scripted(), cache_dir=tmp_path), progress=False)
    assert out.loc[out["answer_id"] == 1, "labels"].tolist() == [("Answer",)]
    assert out.loc[out["answer_id"] == 2, "status"].str.startswith("unparseable").all()
    assert "1 of 2 replies unparseable" in capsys.readouterr().out


def test_embeddings_do_not_depend_on_what_the_cache_held(tmp_path):
    """Tables 9-10 must be byte-identical across machines whose caches filled in different orders."""
    texts = ["A short one.", "A much longer sentence about a blurry photo of a cereal box on a table.", "Red."]
    together = classifier_features.embed_texts(texts, cache_dir=tmp_path / "a")
    classifier_features.embed_texts(texts[1:2], cache_dir=tmp_path / "b")  # a different history
    apart = classifier_features.embed_texts(texts, cache_dir=tmp_path / "b")
    assert np.array_equal(together, apart)


# --- notebook 05's classifier tables (classifier_tables, llm_classifier.llm_sample) --------------

def test_paper_f1_rows_use_the_papers_names():
    scores = pd.DataFrame({"model": ["MLP", "MLP", "Random (seed 0)", "MLP"], "subset": ["all", "all", "all", "Expert"],
                           "label": ["Answer Failure", "Weighted average", "Answer Failure", "Answer Failure"],
                           "f1": [0.8, 0.7, 0.3, 0.9], "support": [10, 20, 10, 5]})
    rows = classifier_tables.paper_f1_rows(scores, "role")
    assert list(rows.columns) == ["model", "f1", "support", "role"]
    assert rows["role"].tolist() == [taxonomy.paper_role_name("Answer Failure"), "Average",
                                     taxonomy.paper_role_name("Answer Failure")]
    assert rows["model"].tolist() == ["MLP", "MLP", "Random"]
    info = classifier_tables.paper_f1_rows(scores.assign(label=["Image", "Weighted average", "Image", "Image"]), "info")
    assert info["info_source"].tolist() == [taxonomy.paper_info_name("Image"), "Average",
                                            taxonomy.paper_info_name("Image")]
    overview = classifier_tables.f1_overview({"role": scores, "info": scores})
    assert list(overview.index.get_level_values("kind").unique()) == ["role", "info"]
    assert overview.loc[("role", "Answer Failure"), ("MLP", "Expert")] == 0.9


def test_rederived_abstention_and_kappa_text():
    p = pd.DataFrame({"source": ["A", "A", "A", "B"], "question_id": [1, 1, 2, 1],
                      "labels": [("Answer",), ("Answer Failure",), ("Answer",), ("Answer",)],
                      "predicted": [("Answer Failure",), ("Answer",), ("Answer Failure",), ("Answer",)]})
    answers = pd.DataFrame({"source": ["A", "A", "A", "B"], "question_id": [1, 2, 3, 1],  # A/3 has no predictions
                            "answerability": ["unanswerable", "answerable", "unanswerable", "answerable"]})
    agreement = classifier_cv.abstention_agreement(p)
    t = classifier_tables.rederived_abstention(answers, p, agreement).set_index("source")
    assert list(t.columns[:2]) == ["n_answers", "abstain_labels"] and t.loc["A", "n"] == 3
    assert t.loc["A", "abs-%"] == pytest.approx(200 / 3) and t.loc["A", "abs-recall"] == 0.5  # A/3 answers
    assert t.loc["B", "abs-%"] == 0.0
    assert classifier_tables.next_answer_kappa_text(agreement, source="C") == ""
    text = classifier_tables.next_answer_kappa_text(agreement.assign(kappa=0.5, kappa_next_answer=0.25), source="A")
    assert text == "A labels vs the classifier: kappa 0.50 with their own answer, 0.25 with the next answer in the file"


def test_llm_sample_takes_the_first_answers_with_their_questions():
    sentences = pd.DataFrame({"source": ["A", "A", "B", "A"], "question_id": [2, 2, 1, 1],
                              "sentence": ["First.", "Second.", "Other.", None]})
    answers = pd.DataFrame({"source": ["A", "B", "A"], "question_id": [2, 1, 1], "question": ["q2", "q1", "q1"]})
    sample = vizwiz_lf_llm_classifier.llm_sample(sentences, answers, n=2)
    assert sample.to_dict("records") == [
        {"source": "A", "question_id": 2, "sentences": ["First.", "Second."], "question": "q2"},
        {"source": "B", "question_id": 1, "sentences": ["Other."], "question": "q1"}]
