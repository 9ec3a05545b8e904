"""The metric catalog (:mod:`vqalib.core.metrics.catalog`): every metric declared once, with its citation,
variant, range and direction, and called in one shape."""

import numpy as np
import pandas as pd
import pytest

from vqalib.core.metrics import cache
from vqalib.core.metrics.catalog import METRICS, metric

PAIRS = pd.DataFrame({"reference": ["a red car", "pasta with tomato sauce"],
                      "candidate": ["the car is red", "a bowl of soup"]})


def test_every_metric_is_declared_completely():
    assert set(METRICS) == {"lex_overlap", "rouge", "meteor", "meteor_nltk", "bertscore"}
    for name, spec in METRICS.items():
        assert spec.name == name and spec.citation and spec.variant
        assert spec.low < spec.high and spec.higher_is_better
        assert (spec.texts is None) == (name == "lex_overlap")  # the one metric of pair rows, not text pairs


def test_one_call_shape_for_text_metrics(tmp_path):
    """``Metric.score(pairs)`` gives the values the per-pair cache stores for the same pairs."""
    for name in ("rouge", "meteor_nltk"):
        direct = metric(name).score(PAIRS)
        cached = cache.cached_scores(name, tuple(PAIRS["reference"]), tuple(PAIRS["candidate"]), None,
                                     cache_dir=tmp_path)
        assert direct.shape == (2,) and np.array_equal(direct, cached)
        assert ((direct >= metric(name).low) & (direct <= metric(name).high)).all()
    assert metric("rouge").score(PAIRS)[0] > metric("rouge").score(PAIRS)[1]  # shared words score higher


def test_lexical_overlap_reads_its_columns():
    rows = pd.DataFrame({"whole_answer": ["It is a red car."], "crowd_answers": [["red car", "car"]],
                         "question": ["What is it?"], "reference": ["red car"]})
    assert metric("lex_overlap").score(rows).tolist() == [1.0]
    assert metric("lex_overlap").score(rows, definition="question_recall").tolist() == pytest.approx([2 / 3])  # is, it


def test_unknown_metric_is_named():
    with pytest.raises(ValueError, match="unknown metric 'bleu'; known: lex_overlap"):
        metric("bleu")
    with pytest.raises(ValueError, match="scores pair rows"):
        cache._score_texts("lex_overlap", ("a",), ("b",), None)


@pytest.mark.full  # starts METEOR's JVM uncached (about 12 s): make test-full
def test_a_pair_that_tokenization_empties_scores_zero_uncached_too():
    """``Metric.score`` and the cache share :meth:`Metric.score_texts`: METEOR's Java side never sees an empty
    segment, whichever path scores the pair."""
    pairs = pd.DataFrame({"reference": ["...", "a red car"], "candidate": ["a car", "a red car"]})
    scores = metric("meteor").score(pairs)
    assert scores[0] == 0.0 and scores[1] > 0.9
