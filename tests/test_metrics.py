import io
import pickle
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scistats

from vqalib.core.judge.cache import CachedJudge
from vqalib.core.metrics import (bertscore, cache as metrics_cache, lexical_overlap, meteor, meteor_nltk,
                                 rouge as metrics_rouge, tokenize)
from vqalib.papers.vizwiz_lf import table4, table4_tables
from vqalib.core.metrics.catalog import METRICS


# --- library-backed metrics on hand-made text ------------------------------------------

def test_ptb_tokenize_keeps_texts_aligned_across_line_breaks():
    texts = ["Line one\rstill one.", "Two\u2028parts here", "Plain, text!", "a\nb"]
    assert tokenize.ptb_tokenize(texts) == ["line one still one", "two parts here", "plain text", "a b"]


@pytest.fixture(scope="module")
def pycocoevalcap_meteor():
    """pycocoevalcap's own METEOR (one JVM for the tests that compare with it)."""
    from pycocoevalcap.meteor.meteor import Meteor

    reference = Meteor()
    yield reference
    del reference


@pytest.mark.full  # pycocoevalcap's own METEOR JVM (about 20 s with the next test)
def test_rouge_and_meteor_bounds_and_meteor_equals_pycocoevalcap_compute_score(pycocoevalcap_meteor):
    refs = ["the car is red", "pasta sauce", "the car is red", "pasta sauce", "a man named bob"]
    cands = ["the car is red", "a photo of a dog", "the red car", "sauce", ""]
    rouge = metrics_rouge.rouge_l(refs[:2], cands[:2])
    assert rouge[0] == pytest.approx(1.0) and rouge[1] == 0.0
    nltk = meteor_nltk.meteor_nltk(refs[:2], cands[:2])
    assert nltk[0] > 0.9 and nltk[1] == 0.0
    met = meteor.meteor(refs, cands)  # one session for every pair
    assert met[0] > 0.9 and met[1] == 0.0
    _, expected = pycocoevalcap_meteor.compute_score({i: [r] for i, r in enumerate(refs[2:])},
                                                     {i: [c] for i, c in enumerate(cands[2:])})
    assert met[2:].tolist() == [float(x) for x in expected]


METEOR_REFS = [["a red shirt", "the shirt is red"], ["a man", "a man named bob"], ["paris", "it is paris france"],
               ["an apple", "fruit", "it looks like an apple"]]
METEOR_CANDS = ["the shirt is red", "", "it is in paris", "she is eating an apple"]


@pytest.mark.full  # pycocoevalcap's own METEOR JVM
def test_meteor_session_equals_compute_score_and_pools_exactly(pycocoevalcap_meteor):
    expected, expected_seg = pycocoevalcap_meteor.compute_score({i: r for i, r in enumerate(METEOR_REFS)},
                                                                {i: [c] for i, c in enumerate(METEOR_CANDS)})
    with meteor.MeteorSession() as session:
        stats = session.statistics(METEOR_CANDS, METEOR_REFS)
        score, segments = session.evaluate(stats)
        additive = meteor.meteor_additive(np.array([[float(x) for x in s.split()] for s in stats]))
        subsets = [[0, 1, 2, 3], [0, 2], [0, 0, 3], [1, 2, 3], [2]]
        listed = [session.evaluate([stats[i] for i in rows])[0] for rows in subsets]
        pooled = session.evaluate_pooled(np.stack([additive[rows].sum(axis=0) for rows in subsets]))
    assert score == expected and np.allclose(segments, expected_seg)
    assert segments[0] == 1.0  # an exact match: its chunk is left out of the aggregate
    assert pooled == pytest.approx(listed)


def test_bertscore_with_the_offline_backbone():
    backbone = bertscore.bertscore_backbone()
    assert "MiniLM" in backbone.label and backbone.num_layers == 4
    f1 = bertscore.bertscore_f1(["the car is red", "the car is red"], ["the car is red", "bananas in a bowl"],
                              backbone=backbone)
    assert f1[0] == pytest.approx(1.0) and f1[1] < f1[0]


def test_backbone_configuration(monkeypatch):
    monkeypatch.setenv(bertscore.BERTSCORE_MODEL_ENV, "roberta-large")
    monkeypatch.delenv(bertscore.BERTSCORE_LAYERS_ENV, raising=False)
    b = bertscore.bertscore_backbone()
    assert b.model_type == "roberta-large" and b.num_layers is None and b.label == "roberta-large"
    assert bertscore.bertscore_backbone("x", num_layers=3).label == "x (layer 3)"


def test_a_layer_the_backbone_lacks_is_named_with_the_setting_and_the_range(monkeypatch, tmp_path):
    from vqalib.core.config import SettingError

    monkeypatch.delenv(bertscore.BERTSCORE_MODEL_ENV, raising=False)
    monkeypatch.setenv(bertscore.BERTSCORE_LAYERS_ENV, "999")  # the packaged MiniLM has 6 (its config.json, no model)
    with pytest.raises(SettingError, match=r"^VQALIB_BERTSCORE_LAYERS='999': expected a whole number from 1 to 6, "
                                           r"the layers of the BERTScore backbone all-MiniLM-L6-v2$"):
        bertscore.bertscore_backbone()
    monkeypatch.setenv(bertscore.BERTSCORE_LAYERS_ENV, "6")
    assert bertscore.bertscore_backbone().num_layers == 6
    with pytest.raises(ValueError, match=r"^num_layers='7': expected a whole number from 1 to 6"):
        bertscore.bertscore_backbone(num_layers=7)
    local = tmp_path / "two-layers"
    local.mkdir()
    (local / "config.json").write_text('{"model_type": "bert", "num_hidden_layers": 2}')
    with pytest.raises(ValueError, match="from 1 to 2"):  # refused before bert-score loads anything
        bertscore.bertscore_f1(["a"], ["b"], backbone=bertscore.Backbone(str(local), 3, "two-layers (layer 3)"))


def _row(**kw):
    base = dict(reference="pasta sauce", whole_answer="This jar holds pasta sauce, maybe marinara.",
                crowd_answers=("pasta sauce", "marinara", "unanswerable", "sauce"), question="What is in this jar?")
    base.update(kw)
    return pd.DataFrame([base])


@pytest.mark.parametrize("definition, expected", [
    ("crowd_pooled_recall", 3 / 4),      # {pasta, sauce, marinara, unanswerable}: 3 found
    ("majority_recall", 1.0),
    ("crowd_recall_mean", (1 + 1 + 0 + 1) / 4),
    ("crowd_recall_max", 1.0),
    ("crowd_contained", 1.0),            # 3 of 4 crowd answers contained -> min(1, 3/3)
    ("majority_precision", 2 / 7),       # this jar holds pasta sauce maybe marinara
    ("majority_jaccard", 2 / 7),
    ("question_recall", 2 / 5),          # what is in this jar: this, jar
])
def test_lexical_overlap_definitions(definition, expected):
    assert lexical_overlap.lexical_overlap(_row(), definition=definition)[0] == pytest.approx(expected)


def test_lexical_overlap_rejects_unknown_definition():
    with pytest.raises(ValueError, match="unknown definition"):
        lexical_overlap.lexical_overlap(_row(), definition="bleu")


# --- evaluation pairs on the real release ---------------------------------------------

def test_evaluation_pairs_settings(vizwiz):
    pairs = table4.evaluation_pairs(vizwiz.answers, vizwiz.sentences, question_ids=[1, 2, 3])
    counts = pairs.groupby(["source", "reference_kind"]).size()
    assert counts[("Expert", "s_r")] == 6 and ("Expert", "l_r") not in counts.index
    assert counts[("GPT-4V", "l_r")] == 6
    expert_answer = vizwiz.answers.query("source == 'Expert' and question_id == 2")["answer"].iloc[0]
    gpt = pairs.query("source == 'GPT-4V' and question_id == 2 and reference_kind == 'l_r'")
    assert (gpt["reference"] == expert_answer).all()
    s_r = pairs.query("source == 'Gemini' and question_id == 1 and reference_kind == 's_r'")["reference"]
    assert set(s_r) == {"unanswerable"}


def test_answer_sentences_text_joins_answer_sentences_in_order():
    sentences = pd.DataFrame({
        "source": ["A"] * 4 + ["B"], "question_id": [1] * 4 + [1], "sentence_index": [2, 0, 1, 3, 0],
        "sentence": ["third", "first", "second", None, "only"],
        "roles": [("Answer",), ("Answer", "Confirmation"), ("Auxiliary",), ("Answer",), ("Suggestion",)],
    })
    text = table4.answer_sentences_text(sentences)
    assert text.to_dict() == {("A", 1): "first third"}  # B has no Answer sentence: absent


def test_paper_sample_is_balanced_and_seeded(vizwiz):
    ids = table4.paper_sample(vizwiz.answers, per_category=30, seed=0)
    assert len(ids) == 120 and ids == sorted(ids)
    types = vizwiz.answers.drop_duplicates("question_id").set_index("question_id").loc[ids, "question_type"]
    assert types.value_counts().tolist() == [30, 30, 30, 30]
    assert ids == table4.paper_sample(vizwiz.answers, per_category=30, seed=0)
    assert ids != table4.paper_sample(vizwiz.answers, per_category=30, seed=1)


# --- scoring, caching, summaries -------------------------------------------------------

def _pairs():
    return pd.DataFrame({
        "source": ["A", "A", "A"], "question_id": [1, 2, 3], "question_type": ["Reading"] * 3,
        "answerability": ["answerable"] * 3, "question": ["What is it?"] * 3,
        "reference_kind": ["s_r", "s_r", "s_r"], "candidate_kind": ["l_c_prime"] * 3,
        "reference": ["red car", "pasta sauce", "a dog"],
        "candidate": ["The car is red.", None, "A dog on a sofa."],
        "crowd_answers": [("red car",), ("pasta sauce",), ("dog",)],
        "whole_answer": ["The car is red.", "I see a jar of pasta sauce.", "A dog on a sofa."],
    })


@pytest.mark.parametrize("rule", table4.NO_ANSWER_RULES)
def test_no_answer_rules(rule, tmp_path):
    scores = table4.score_pairs(_pairs(), metrics=("rouge",), no_answer=rule, cache_dir=tmp_path, progress=False)
    missing = scores.set_index("question_id").loc[2]
    if rule == "zero":
        assert missing["score"] == 0.0
    elif rule == "exclude":
        assert pd.isna(missing["score"])
    else:
        whole = metrics_rouge.rouge_l(tokenize.ptb_tokenize(["pasta sauce"]), tokenize.ptb_tokenize(["I see a jar of pasta sauce."]))
        assert missing["score"] == pytest.approx(whole[0])
    assert missing["status"] == f"no Answer sentence: {rule}"


def test_bad_no_answer_rule():
    with pytest.raises(ValueError, match="no_answer must be one of"):
        table4.score_pairs(_pairs(), metrics=("rouge",), no_answer="skip")


def test_scores_are_served_from_the_cache(tmp_path, monkeypatch):
    first = table4.score_pairs(_pairs(), metrics=("rouge",), cache_dir=tmp_path, progress=False)

    def fail(*_args, **_kwargs):
        raise AssertionError("recomputed instead of cached")

    from dataclasses import replace

    from vqalib.core.metrics import catalog as metric_catalog

    # where _score_texts looks the scorer up
    monkeypatch.setitem(metric_catalog.METRICS, "rouge", replace(metric_catalog.METRICS["rouge"], texts=fail))
    second = table4.score_pairs(_pairs(), metrics=("rouge",), cache_dir=tmp_path, progress=False)
    pd.testing.assert_frame_equal(first, second)
    changed = _pairs().assign(reference=["blue car", "pasta sauce", "a dog"])
    with pytest.raises(AssertionError, match="recomputed"):
        table4.score_pairs(changed, metrics=("rouge",), cache_dir=tmp_path, progress=False)


class _Planted:
    """Unpickling this creates ``marker``: the side effect of a pickle someone planted in a cache."""

    def __init__(self, marker) -> None:
        self.marker = Path(marker)

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def test_planted_pickles_in_the_metric_cache_are_never_run(tmp_path):
    """Score files are ``.npz`` arrays read without pickle; a pickle (or an object array)
    in a score file's place, or in the old joblib.Memory folder, is never unpickled: the file is
    ignored with a warning naming it and the scores are recomputed, identical."""
    pickle.loads(pickle.dumps(_Planted(tmp_path / "proof")))
    assert (tmp_path / "proof").exists()  # the payload is live: unpickling it would leave the marker
    cache, marker = tmp_path / "cache", tmp_path / "ran"
    first = table4.score_pairs(_pairs(), metrics=("rouge", "meteor_nltk"), cache_dir=cache, progress=False)
    stored = sorted(p for p in cache.rglob("*") if p.is_file())
    assert len(stored) == 2 and all(p.suffix == ".npz" for p in stored)
    stored[0].write_bytes(pickle.dumps(_Planted(marker)))
    np.savez(stored[1], scores=np.array([_Planted(marker)], dtype=object), key=np.array("x"))
    legacy = cache / "joblib" / "vqalib" / "metrics" / "_score_texts" / ("0" * 32) / "output.pkl"
    legacy.parent.mkdir(parents=True)
    legacy.write_bytes(pickle.dumps(_Planted(marker)))  # where joblib.Memory used to keep scores
    with pytest.warns(UserWarning, match="discarding metric cache entry") as caught:
        second = table4.score_pairs(_pairs(), metrics=("rouge", "meteor_nltk"), cache_dir=cache, progress=False)
    assert not marker.exists()
    pd.testing.assert_frame_equal(first, second)
    named = " ".join(str(w.message) for w in caught)
    assert all(str(path) in named for path in stored)
    from vqalib.core.caches import read_entry

    for path in stored:  # replaced by real score arrays
        with np.load(io.BytesIO(read_entry(path, kind="x")), allow_pickle=False) as data:
            assert data["vectors"].dtype == np.float64


def test_score_cache_key_covers_metric_and_backbone_and_pair_keys_cover_texts():
    from vqalib.core.shards import item_key

    key = metrics_cache.score_cache_key
    backbone = bertscore.Backbone(model_type="some/model", num_layers=4, label="x")
    base = key("bertscore", backbone)
    assert len(base) == 64 and base == key("bertscore", backbone)
    assert base != key("bertscore", bertscore.Backbone("some/model", 5, "x"))
    assert base != key("bertscore", bertscore.Backbone("other/model", 4, "x"))
    assert key("rouge", None) != key("meteor", None)
    assert item_key("a", "b") != item_key("a", "c") and item_key("a", "b") != item_key("b", "a")
    assert item_key("a b", "c") != item_key("a", "b c")  # no ambiguous joins


def test_each_pair_is_scored_once_across_calls_rules_and_repeats(tmp_path, monkeypatch):
    """Scores are stored per (reference, candidate) pair, so a pair already scored (by the main
    run, another rule, another notebook) is not scored again, and a pair repeated in one call is scored once;
    the values equal a fresh computation."""
    fresh = metrics_cache._score_texts("rouge", ("a red car", "a dog", "a red car"), ("red car", "dog", "red car"), None)
    asked = []
    real = metrics_cache._score_texts

    def counting(metric, refs, cands, backbone):
        asked.append(list(zip(refs, cands)))
        return real(metric, refs, cands, backbone)

    monkeypatch.setattr(metrics_cache, "_score_texts", counting)  # where cached_scores looks it up
    first = metrics_cache.cached_scores("rouge", ("a red car", "a dog", "a red car"), ("red car", "dog", "red car"), None,
                                  cache_dir=tmp_path)
    assert np.array_equal(first, fresh) and len(asked[0]) == 2  # the repeated pair once
    second = metrics_cache.cached_scores("rouge", ("a dog", "a cat"), ("dog", "cat"), None, cache_dir=tmp_path)
    assert asked[1] == [("a cat", "cat")] and second[0] == first[1]


def test_summarize_bootstrap_is_seeded_and_brackets_the_mean():
    rng = np.random.default_rng(1)
    scores = pd.DataFrame({"source": "A", "metric": "rouge", "reference_kind": "s_r", "candidate_kind": "l_c",
                           "score": rng.uniform(size=200)})
    a = table4.summarize(scores, n_resamples=500, seed=3)
    b = table4.summarize(scores, n_resamples=500, seed=3)
    pd.testing.assert_frame_equal(a, b)
    row = a.iloc[0]
    assert row["n"] == 200 and row["ci_low"] < row["mean"] < row["ci_high"]
    constant = scores.assign(score=0.5)
    c = table4.summarize(constant).iloc[0]
    assert c["ci_low"] == c["mean"] == c["ci_high"] == 0.5
    with_nan = scores.assign(score=[np.nan] * 10 + list(scores["score"][10:]))
    assert table4.summarize(with_nan).iloc[0]["n"] == 190


def test_paper_in_ci():
    f = pd.DataFrame({"paper": [0.2, 0.5, np.nan], "ci_low": [0.1, 0.1, 0.1], "ci_high": [0.3, 0.3, 0.3]})
    assert table4.paper_in_ci(f).tolist()[:2] == [True, False] and pd.isna(table4.paper_in_ci(f).iloc[2])


def test_human_correlation_matches_scipy():
    rng = np.random.default_rng(0)
    human = pd.DataFrame({"source": "A", "question_id": range(30), "correctness": rng.uniform(size=30)})
    score = human["correctness"] * 0.5 + rng.normal(scale=0.1, size=30)
    scores = pd.DataFrame({"source": "A", "question_id": range(30), "metric": "rouge", "reference_kind": "s_r",
                           "candidate_kind": "l_c", "score": score})
    t = table4.human_correlation(scores, human).iloc[0]
    ref = scistats.pearsonr(score, human["correctness"])
    assert t["r"] == pytest.approx(ref.statistic) and t["p"] == pytest.approx(ref.pvalue)
    assert t["stars"] == "**" and t["n"] == 30
    assert table4.significance_stars(0.03) == "*" and table4.significance_stars(0.2) == ""


def test_not_run_rows_cover_the_papers_cells():
    from vqalib.core.report import not_run_rows

    rows = not_run_rows(table4.metric_cells(sources=["GPT-4V", "Gemini", "Expert"], metric="lave"), reason="no judge")
    assert len(rows) == 4 + 4 + 2
    assert rows["status"].eq("not run: no judge").all() and rows["metric"].eq("GPT-4 (LAVE)").all()


class ScriptedBackend:
    """A deterministic backend (no network): rates 3 when the candidate repeats the reference."""

    name, model = "scripted", "echo"

    def __init__(self):
        self.requests = 0

    def complete(self, messages, *, temperature=0.0, max_tokens=256):
        self.requests += 1
        item = messages[-1]["content"]
        if "unparseable" in item:
            return "I cannot decide."
        return "Same answer.\nRating: 3" if "red car" in item.split("Candidate answer:")[-1] else "Wrong.\nRating: 1"


def test_score_with_judge(tmp_path):
    backend = ScriptedBackend()
    judge = CachedJudge(backend, cache_dir=tmp_path)
    pairs = _pairs()
    pairs.loc[2, "candidate"] = "unparseable"
    scores = table4.score_with_judge(pairs, judge=judge, progress=False).set_index("question_id")
    assert scores.loc[1, "score"] == 0.0  # "The car is red." does not contain "red car": rating 1
    assert scores.loc[2, "score"] == 0.0 and scores.loc[2, "status"] == "no Answer sentence: zero"
    assert pd.isna(scores.loc[3, "score"]) and scores.loc[3, "status"] == "judge: unparseable: no rating"
    assert scores["backbone"].eq("scripted:echo").all() and backend.requests == 2


# --- notebook 03 helpers: assembling Table 4 / Table 18 ----------------------------------

def _summary_scores():
    """Scores of two sources on three questions, one metric and one setting (hand-made)."""
    return pd.DataFrame({"source": ["A"] * 3 + ["B"] * 3, "question_id": [1, 2, 3] * 2, "metric": "rouge",
                         "reference_kind": "s_r", "candidate_kind": "l_c", "score": [0.1, 0.2, 0.3, 0.5, 0.4, 0.6]})


def test_no_answer_sentence_counts():
    pairs = pd.concat([_pairs(), _pairs().assign(source="B", candidate="x")], ignore_index=True)
    counts = table4_tables.no_answer_sentence_counts(pairs)
    assert counts.index.tolist() == ["A", "B"]
    assert counts["answers without an Answer sentence"].tolist() == [1, 0]
    assert counts["share"].tolist() == pytest.approx([1 / 3, 0.0])


def test_implementations_name_backbone_and_judge():
    backbone = bertscore.Backbone(model_type="m", num_layers=4, label="MiniLM (layer 4)")
    plain = table4_tables.implementations(backbone)
    assert plain["bertscore"] == "bert-score F1, MiniLM (layer 4)" and plain["lave"] == ""
    assert plain["rouge"] == METRICS["rouge"].variant  # one string, from the metric catalog

    class Judge:
        class backend:
            name, model = "openai", "gpt-4"
    assert table4_tables.implementations(backbone, Judge())["lave"] == "LAVE (Table 17) via openai:gpt-4"


def test_sample_table4_keeps_the_sample_and_adds_not_run_rows():
    table = table4_tables.sample_table4(_summary_scores(), [1, 2], sources=["A"], implementation={"rouge": "impl"},
                                  n_resamples=50, seed=0)
    assert len(table) == 1 and table.loc[0, "value"] == pytest.approx(0.15) and table.loc[0, "metric"] == "ROUGE"
    assert table.loc[0, "implementation"] == "impl" and table.loc[0, "reference"] == "s_r"
    both = table4_tables.sample_table4(_summary_scores(), [1, 2], sources=["A"], implementation={"rouge": "impl"},
                                 n_resamples=50, seed=0, not_run={"lave": "no judge"})
    assert len(both) == 1 + 4 and both["status"].iloc[1:].eq("not run: no judge").all()


def test_compare_with_paper_and_wide_layout():
    paper = pd.DataFrame({"source": ["Gemini", "Gemini"], "metric": ["ROUGE", "ROUGE"], "reference": ["s_r", "l_r"],
                          "candidate": ["l_c", "l_c"], "paper": [0.15, 0.5], "paper_decimals": [2, 2]})
    table = pd.DataFrame({"source": ["Gemini", "Gemini"], "metric": ["ROUGE", "Lex-Overlap (Unigram)"],
                          "reference": ["s_r", ""], "candidate": ["l_c", ""], "value": [0.12, 0.3],
                          "ci_low": [0.1, 0.2], "ci_high": [0.2, 0.4]})
    compared = table4_tables.compare_with_paper(table, "vizwiz-lf_table04_automatic_eval", paper=paper)
    row = compared[compared["reference"] == "s_r"].iloc[0]
    assert row["reproduced"] == pytest.approx(0.12) and row["paper"] == pytest.approx(0.15) and row["paper_in_ci"]
    wide = table4_tables.table4_wide(compared)
    assert wide.loc["Gemini", ("ROUGE", "s_r+l_c")] == pytest.approx(0.12)
    assert wide.loc["Gemini", ("Lex-Overlap (Unigram)", "answer")] == pytest.approx(0.3)


def test_paper_cells_in_ci_and_its_sentence():
    full = pd.DataFrame({"source": ["A", "A", "B"], "metric": ["ROUGE", "BERTScore", "METEOR"],
                         "reference": "s_r", "candidate": "l_c", "reproduced": [0.1, 0.2, 0.3],
                         "ci_low": 0.0, "ci_high": 0.2, "paper": [0.1, 0.1, 0.5],
                         "paper_in_ci": pd.array([True, True, False], dtype="boolean")})
    cells = table4_tables.paper_cells_in_ci(full)
    assert cells.index.tolist() == [0, 2] and cells.columns.tolist() == table4_tables.PAPER_IN_CI_COLUMNS
    assert table4_tables.paper_in_ci_text(cells) == "1 of 2 ROUGE/METEOR cells of the paper lie inside the full-set 95% CI"


def test_no_answer_sensitivity_covers_rules_and_subsets(tmp_path):
    pairs = _pairs().assign(answerability=["answerable", "unanswerable", "answerable"])
    paper = pd.DataFrame({"source": ["A"], "metric": ["ROUGE"], "reference": ["s_r"], "candidate": ["l_c_prime"],
                          "paper": [0.4]})
    table = table4_tables.no_answer_sensitivity(pairs, paper, implementation={"rouge": "impl"}, metrics=("rouge",),
                                          cache_dir=tmp_path)
    assert len(table) == len(table4.NO_ANSWER_RULES) * 2 and table["paper"].eq(0.4).all()
    value = table.set_index(["no_answer", "questions"])["value"]
    scores = table4.score_pairs(pairs, metrics=("rouge",), no_answer="zero", cache_dir=tmp_path, progress=False)
    assert value[("zero", "all questions")] == pytest.approx(scores["score"].mean())
    assert value[("zero", "answerable only")] == pytest.approx(scores["score"].iloc[[0, 2]].mean())
    wide = table4_tables.sensitivity_wide(table)
    assert wide.shape == (1, 6) and wide.index[0] == ("ROUGE", "A", "s_r+l_c_prime")


def test_reference_gains_and_alt_text():
    shift = pd.DataFrame({"metric": ["rouge"] * 4, "source": ["A", "A", "B", "B"], "candidate_kind": "l_c",
                          "reference_kind": ["s_r", "l_r"] * 2, "mean": [0.1, 0.3, 0.2, 0.15]})
    gains = table4_tables.reference_gains(shift)
    assert gains.to_dict() == pytest.approx({("rouge", "A", "l_c"): 0.2, ("rouge", "B", "l_c"): -0.05})
    text = table4_tables.reference_shift_alt_text(shift)
    assert text.startswith("Three panels (ROUGE, METEOR, BERTScore)")
    assert text.endswith("Long references raise the score in 1 of 2 cases; the largest rise is A ROUGE (+0.20).")


def test_table18_without_and_with_human_ratings():
    scores = _summary_scores()
    missing = table4_tables.table18(scores, None)
    assert missing["status"].iloc[0] == "not run: no human ratings" and "human_ratings=" in missing["how to enable"][0]
    human = pd.DataFrame({"source": ["A"] * 3 + ["B"] * 3, "question_id": [1, 2, 3] * 2,
                          "correctness": [0.0, 0.5, 1.0, 0.2, 0.4, 0.9]})
    pd.testing.assert_frame_equal(table4_tables.table18(scores, human), table4.human_correlation(scores, human))
