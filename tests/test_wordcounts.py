import pandas as pd
import pytest

from vqalib.core import report
from vqalib.papers.vizwiz_lf import wordcounts


def test_count_words_splits_on_white_space():
    assert wordcounts.count_words(" What is\nthis?  ") == 3
    assert wordcounts.count_words("") == 0
    assert wordcounts.count_words("3.5mm jack, isn't it") == 4


def _answers(rows):
    return pd.DataFrame(rows, columns=["source", "question_id", "question_type", "question_words",
                                       "answer_words", "crowd_answer_words"])


def test_table1_on_hand_made_answers():
    answers = _answers([
        ("Expert", 1, "Identification", 4, 10, (1, 1, 2)),
        ("Expert", 2, "Identification", 6, 20, (1, 3)),
        ("Expert", 3, "Reading", 8, 30, (2,)),
        ("GPT-4V", 1, "Identification", 4, 50, (1, 1, 2)),
        ("GPT-4V", 3, "Reading", 8, 70, (2,)),
    ])
    t = wordcounts.word_count_table(answers).set_index(["category", "column"])
    assert t.loc[("Identification", "Question"), "mean_words"] == 5.0
    assert t.loc[("Identification", "Question"), "sd_words"] == pytest.approx(2 ** 0.5)
    assert t.loc[("Identification", "Answer"), "n"] == 5
    assert t.loc[("Identification", "Answer"), "mean_words"] == pytest.approx(8 / 5)
    assert t.loc[("Total", "Human"), "mean_words"] == 20.0 and t.loc[("Total", "Human"), "sd_words"] == 10.0
    assert t.loc[("Total", "GPT-4V"), "mean_words"] == 60.0
    assert ("Description", "Human") in t.index and t.loc[("Description", "Human"), "n"] == 0
    assert ("Total", "Gemini") not in t.index  # a source that is absent gets no column


def test_table1_needs_the_question_source():
    with pytest.raises(ValueError, match="no answers from 'Expert'"):
        wordcounts.word_count_table(_answers([("GPT-4V", 1, "Reading", 3, 9, (1,))]))


def test_table1_reproduces_the_paper(vizwiz):
    """Must show: within tolerance in most of the 45 mean/SD pairs; the rest are the known cells."""
    table = wordcounts.word_count_table(vizwiz.answers)
    compared = report.compare(wordcounts.long_format(table), "vizwiz-lf_table01_word_counts", value="words")
    pairs = wordcounts.pair_agreement(compared)
    assert len(pairs) == 45
    off = set(map(tuple, pairs.loc[~pairs["pair_within"], ["category", "column"]].itertuples(index=False)))
    assert off == {("Identification", "QWEN"), ("Others", "Human"), ("Others", "Answer")}
    known = report.outside(compared, "vizwiz-lf_table01_word_counts")
    assert (known["explanation"] != report.NOT_EXPLAINED).all()


def test_paper_layout():
    t = pd.DataFrame([{"category": "Total", "column": "Human", "mean_words": 41.24, "sd_words": 33.98}])
    assert wordcounts.paper_layout(t).loc["Total", "Human"] == "41.2 (34.0)"
