"""VizWiz-LF Table 4 protocols: relations of the declared protocol's cells, the sample draws, the l'_r
reference, the seed sweep, and the committed grid and declared table."""

import numpy as np
import pandas as pd
import pytest

from vqalib.core import report
from vqalib.core.io import project_root
from vqalib.papers.vizwiz_lf import table4, table4_protocols as tp

FIGURES = project_root() / "figures"


def test_default_protocol_cells_are_same_and_fitted_choices_are_named():
    for metric in ("ROUGE", "METEOR"):
        for ref, cand in table4.SETTINGS:
            assert tp.cell_relation(tp.DEFAULT, metric=metric, reference=ref, candidate=cand, source="GPT-4V") == "same"
    d = tp.DECLARED
    assert tp.cell_relation(d, metric="ROUGE", reference="s_r", candidate="l_c", source="Gemini") == "same"
    assert tp.cell_relation(d, metric="ROUGE", reference="l_r", candidate="l_c", source="GPT-4V") == "same"
    assert tp.cell_relation(d, metric="METEOR", reference="l_r", candidate="l_c", source="Gemini") == \
        "fitted: meteor = meteor_nltk"
    gemini = tp.cell_relation(d, metric="ROUGE", reference="l_r", candidate="l_c_prime", source="Gemini")
    gpt = tp.cell_relation(d, metric="ROUGE", reference="l_r", candidate="l_c_prime", source="GPT-4V")
    assert "answer_labels" not in gemini and "answer_labels = classifier_gpt4v" in gpt
    assert "long_reference" not in gpt  # l'_r is named by the Table 4 caption: not fitted


def test_every_declared_choice_says_its_basis():
    choices = tp.choices_table(tp.DECLARED)
    assert set(choices["basis"]) <= {"default", "paper", "fitted"}
    assert choices.set_index("option").loc["long_reference", "basis"] == "paper"
    with pytest.raises(ValueError, match="meteor"):
        tp.Protocol(meteor="bleu")


def test_sample_draws_repeat_paper_sample():
    answers = pd.DataFrame({"question_id": np.repeat(np.arange(40), 3), "source": ["GPT-4V", "Gemini", "Expert"] * 40,
                            "question_type": np.repeat(["A", "B", "C", "D"], 30)})
    draws = table4.sample_draws(answers, seeds=range(5), per_category=4)
    assert draws[3] == table4.paper_sample(answers, per_category=4, seed=3)
    assert all(len(d) == 16 for d in draws) and draws[0] != draws[1]


def _tiny():
    answers = pd.DataFrame({
        "source": ["Expert", "GPT-4V", "Expert", "GPT-4V"], "question_id": [1, 1, 2, 2],
        "question_type": ["A", "A", "B", "B"], "answerability": ["answerable"] * 4, "question": ["q1", "q1", "q2", "q2"],
        "crowd_majority": ["red", "red", "blue", "blue"], "crowd_answers": [("red",)] * 2 + [("blue",)] * 2,
        "answer": ["It is red. Nice shot.", "Red it is. Bright.", "Too blurry.", "Blue. Maybe."]})
    sentences = pd.DataFrame({
        "source": ["Expert", "Expert", "GPT-4V", "GPT-4V", "Expert", "GPT-4V", "GPT-4V"],
        "question_id": [1, 1, 1, 1, 2, 2, 2], "sentence_index": [0, 1, 0, 1, 0, 0, 1],
        "sentence": ["It is red.", "Nice shot.", "Red it is.", "Bright.", "Too blurry.", "Blue.", "Maybe."],
        "roles": [("Answer",), ("Auxiliary",), ("Answer",), (), ("Answer Failure",), ("Answer",), ()]})
    return answers, sentences


@pytest.mark.parametrize("rule, expected", [("zero", ""), ("exclude", ""), ("whole_answer", "Too blurry.")])
def test_long_reference_prime_uses_the_experts_answer_sentences(rule, expected):
    answers, sentences = _tiny()
    protocol = tp.Protocol(long_reference="l_r_prime", no_answer=rule)
    pairs = tp.protocol_pairs(answers, sentences, sentences, protocol=protocol, sources=["GPT-4V"])
    prime = pairs[(pairs["reference_kind"] == "l_r") & (pairs["candidate_kind"] == "l_c_prime")].set_index("question_id")
    assert prime.loc[1, "reference"] == "It is red."
    assert prime.loc[2, "reference"] == expected  # the expert gave no Answer sentence to question 2
    # without a reference the pair has no candidate either, unless the whole expert answer stands in
    assert pd.isna(prime.loc[2, "candidate"]) == (rule != "whole_answer")


def test_classifier_labels_replace_the_released_ones_for_gpt4v_only():
    answers, sentences = _tiny()
    predictions = sentences.assign(predicted=[()] * len(sentences))
    classified = tp.classifier_sentences(sentences, predictions)
    pairs = tp.protocol_pairs(answers, sentences, classified, protocol=tp.Protocol(answer_labels="classifier_gpt4v"),
                              sources=["GPT-4V", "Expert"])
    prime = pairs[(pairs["reference_kind"] == "s_r") & (pairs["candidate_kind"] == "l_c_prime")]
    assert prime[prime["source"] == "GPT-4V"]["candidate"].isna().all()
    assert prime[(prime["source"] == "Expert") & (prime["question_id"] == 1)]["candidate"].tolist() == ["It is red."]


def test_seed_sweep_percentiles_on_hand_made_scores():
    answers = pd.DataFrame({"question_id": np.arange(8), "source": "GPT-4V", "question_type": ["A", "B"] * 4})
    scores = pd.DataFrame({"source": "GPT-4V", "question_id": np.arange(8), "metric": "rouge", "reference_kind": "s_r",
                           "candidate_kind": "l_c", "score": np.arange(8, dtype=float)})
    paper = pd.DataFrame({"source": ["GPT-4V"], "metric": ["ROUGE"], "reference": ["s_r"], "candidate": ["l_c"],
                          "paper": [100.0], "paper_decimals": [0]})
    sweep = tp.seed_sweep({"p": scores}, answers, paper, n_draws=20, per_category=2, sources=("GPT-4V",))
    row = sweep.iloc[0]
    first = table4.paper_sample(answers, per_category=2, seed=0, sources=("GPT-4V",))
    assert row["seed0_value"] == pytest.approx(np.mean(first))
    assert row["paper_percentile"] == 100.0 and row["share_within"] == 0.0 and row["n_draws"] == 20


def test_committed_grid_and_declared_table_agree():
    """The declared protocol is the grid's best and reaches at least 13 of the 20 ROUGE/METEOR cells; its same
    and fitted cells are counted apart."""
    grid = pd.read_csv(FIGURES / "vizwiz-lf_table04_protocol_grid.csv", keep_default_na=False)
    summary = tp.grid_summary(grid.assign(within=grid["within"].astype(str).eq("True")))
    declared = summary[summary["declared"]].iloc[0]
    assert declared["within"] == summary["within"].max() >= 13 and declared["cells"] == 20
    table = pd.read_csv(FIGURES / "vizwiz-lf_table04_declared_protocol.csv")
    counts = report.agreement_summary(table.assign(within_tolerance=table["within_tolerance"].map(
        {True: True, False: False}).astype("boolean")))
    assert counts["within"] + counts["fitted_within"] == declared["within"]
    assert counts["compared"] + counts["fitted"] == 20
