"""The metric catalog (:mod:`vqalib.core.metrics.catalog`): every metric declared once, with its citation,
variant, range and direction, and called in one shape."""

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from vqalib.core import registry
from vqalib.core.io import project_root
from vqalib.core.metrics import cache, meteor_nltk
from vqalib.core.metrics.catalog import METRICS, metric
from vqalib.papers.vizwiz_lf import table4, table4_protocols

PAIRS = pd.DataFrame({"reference": ["a red car", "pasta with tomato sauce"],
                      "candidate": ["the car is red", "a bowl of soup"]})


def test_every_metric_is_declared_completely():
    assert set(METRICS) == {"lex_overlap", "rouge", "meteor", "meteor_nltk", "meteor_nltk_wordnet", "bertscore"}
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


NLTK_NAMES = re.compile(r"NLTK(?:'s)? METEOR|METEOR \(NLTK[^)]*\)")
TEXT_FILES = ("*.py", "*.toml", "*.md", "*.csv", "*.ipynb")
SKIPPED = {".git", ".venv", "build", ".cache", "node_modules", "data", "scores", "runs"}


def _project_text_files() -> list[Path]:
    root = project_root()
    files = [root / "README.md", root / "ARCHITECTURE.md", *(root / "data" / "paper").glob("*.csv"),
             *(root / "data" / "claims").glob("*.csv")]
    for top in root.iterdir():
        if top.is_dir() and top.name not in SKIPPED and not top.name.startswith("."):
            files += [p for pattern in TEXT_FILES for p in top.rglob(pattern)]
    return files


def test_the_nltk_meteor_variants_have_one_name_each_read_from_the_catalog():
    """Every NLTK METEOR variant is named by its catalog label wherever it is named (code, declarations, figures,
    notebooks, explanations, README): "NLTK's METEOR" alone would hide that WordNet is switched off."""
    labels = {metric("meteor_nltk").label, metric("meteor_nltk_wordnet").label}
    assert metric("meteor_nltk").label == "METEOR (NLTK, no WordNet)" and all(labels)
    assert table4.METRIC_NAMES["meteor_nltk"] == metric("meteor_nltk").label
    assert all(metric(m).variant.startswith(metric(m).label) for m in ("meteor_nltk", "meteor_nltk_wordnet"))
    assert metric("meteor_nltk").label in registry.table("vizwiz-lf_table04_protocol_grid").title
    basis, why = table4_protocols.CHOICES[("meteor", "meteor_nltk")]
    assert basis == "fitted" and why.startswith(metric("meteor_nltk").label) and "nothing in the paper's text" in why
    wrong = [f"{path.relative_to(project_root())}: {m.group(0)!r}" for path in _project_text_files()
             if path.name != "test_metric_catalog.py"
             for m in NLTK_NAMES.finditer(path.read_text(encoding="utf-8", errors="replace"))
             if m.group(0) not in labels]
    assert not wrong, "\n".join(wrong)


def test_the_wordnet_variant_is_online_only_and_says_how_to_enable_it(monkeypatch):
    """Offline the NLTK variant is METEOR (NLTK, no WordNet) alone; asked for WordNet without its data, the run stops
    with the download command; with WordNet (here a stand-in without synonyms) it scores like the offline one."""
    monkeypatch.delenv("VQALIB_METEOR_WORDNET", raising=False)
    assert table4.nltk_meteor_variants() == ("meteor_nltk",)
    monkeypatch.setenv("VQALIB_METEOR_WORDNET", "1")
    assert table4.nltk_meteor_variants() == ("meteor_nltk", "meteor_nltk_wordnet")
    monkeypatch.setattr(meteor_nltk, "wordnet_found", lambda: False)
    with pytest.raises(ValueError, match="nltk.downloader wordnet"):
        metric("meteor_nltk_wordnet").score(PAIRS)
    import nltk.corpus

    monkeypatch.setattr(meteor_nltk, "wordnet_found", lambda: True)
    monkeypatch.setattr(nltk.corpus, "wordnet", meteor_nltk._NoWordNet())
    assert np.array_equal(metric("meteor_nltk_wordnet").score(PAIRS), metric("meteor_nltk").score(PAIRS))
