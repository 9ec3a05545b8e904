"""vqalib.papers.commvqa.context: embeddings cache, context classifier (Figure 2), description similarity (Figure 4)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from vqalib.papers.commvqa import context
from vqalib.papers.commvqa.names import CONTEXTS


def _clusters(seed: int = 0, per: int = 40, spread: float = 0.3) -> tuple[np.ndarray, list[str]]:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(len(CONTEXTS), 16))
    x = np.vstack([c + spread * rng.normal(size=(per, 16)) for c in centres])
    return x, [c for c in CONTEXTS for _ in range(per)]


def test_classifier_separates_clusters_and_reports_chance():
    x, y = _clusters()
    summary, confusion = context.context_classifier(x, y, n_splits=5, seed=0)
    row = summary.iloc[0]
    assert row["accuracy"] > 0.95 and row["chance"] == pytest.approx(1 / 6) and row["n_questions"] == 240
    assert confusion.to_numpy().sum() == 240 and list(confusion.index) == list(CONTEXTS)


def test_classifier_is_at_chance_on_noise_and_deterministic():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(240, 16))
    y = [CONTEXTS[i % 6] for i in range(240)]
    first, _ = context.context_classifier(x, y, n_splits=5, seed=3)
    again, _ = context.context_classifier(x, y, n_splits=5, seed=3)
    pd.testing.assert_frame_equal(first, again)
    assert first["accuracy"].iloc[0] < 0.35


def test_pairwise_matrix_is_symmetric_with_empty_diagonal():
    x, y = _clusters(spread=3.0)
    pairs = context.pairwise_accuracy(x, y, n_splits=4, seed=0, progress=False)
    assert len(pairs) == 15
    m = context.pairwise_matrix(pairs)
    assert np.isnan(np.diag(m.to_numpy())).all()
    assert np.allclose(m.fillna(0).to_numpy(), m.fillna(0).to_numpy().T)


def test_similarity_tests_on_synthetic_scores():
    rng = np.random.default_rng(0)
    rows = [{"source": "M", "condition": c, "question_id": q,
             "similarity": rng.normal(0.3 + 0.1 * (c == "contextual"), 0.05)}
            for c in ("baseline", "contextual") for q in range(200)]
    rows += [{"source": "Human", "condition": "human", "question_id": q, "similarity": 0.3} for q in range(10)]
    tests = context.similarity_tests(pd.DataFrame(rows)).iloc[0]
    assert tests["source"] == "M" and tests["stars"] == "***" and tests["paired_n"] == 200
    assert round(tests["difference"], 1) == 0.1  # the simulated shift


def test_embed_is_cached_unit_length_and_order_free(tmp_path):
    texts = ["What colour is the car?", "Who is the man?", "What colour is the car?"]
    first = context.embed(texts, cache_dir=tmp_path, progress=False)
    assert first.shape == (3, 384) and np.linalg.norm(first, axis=1) == pytest.approx(np.ones(3))
    assert np.array_equal(first[0], first[2])
    again = context.embed(list(reversed(texts)), cache_dir=tmp_path, progress=False)
    assert np.array_equal(again[::-1], first)
    assert any(tmp_path.rglob("shard-*.npz")) and not any(tmp_path.rglob("*.pkl"))  # arrays, never pickles


FIGURES = Path(__file__).parents[1] / "figures"


def test_fig02_alt_text_names_the_easiest_and_hardest_pair():
    pairs = pd.DataFrame({"context_a": ["news", "news", "shopping"], "context_b": ["shopping", "health", "health"],
                          "accuracy": [0.8, 0.55, 0.7], "majority_share": [0.5, 0.6, 0.5]})
    text = context.fig02_alt_text(pairs)
    assert "The easiest pair is news vs shopping (0.80), the hardest news vs health (0.55); 2 of 3 pairs" in text


def test_fig04_alt_text_counts_the_models_that_move_closer():
    summary = pd.DataFrame({"source": ["Human", "A", "A", "B", "B"],
                            "condition": ["human", "baseline", "contextual", "baseline", "contextual"],
                            "mean": [0.3, 0.2, 0.4, 0.5, 0.45]})
    tests = pd.DataFrame({"source": ["A", "B"], "difference": [0.2, -0.05]})
    text = context.fig04_alt_text(summary, tests)
    assert "human answers 0.30; A baseline 0.20 and contextual 0.40; B baseline 0.50 and contextual 0.45." in text
    assert "1 of 2 models move closer to the description with the context prompt, B the least." in text


@pytest.mark.parametrize("stem, alt_text", [
    ("commvqa_fig02_pairwise_accuracy", lambda read: context.fig02_alt_text(read("commvqa_fig02_pairwise_accuracy"))),
    ("commvqa_fig04_description_similarity", lambda read: context.fig04_alt_text(
        read("commvqa_fig04_description_similarity"), read("commvqa_fig04_similarity_tests"))),
])
def test_alt_texts_from_the_committed_tables_are_the_committed_alt_texts(stem, alt_text):
    text = alt_text(lambda s: pd.read_csv(FIGURES / f"{s}.csv"))
    assert text and text in (FIGURES / f"{stem}.alt.txt").read_text()
