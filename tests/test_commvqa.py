"""vqalib.papers.commvqa: loader validation, the two Table 1 protocols, and the text analyses."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from vqalib.core import report
from vqalib.core.metrics.meteor import MeteorSession
from vqalib.core.io import DataFormatError, read_csv_text
from vqalib.papers.commvqa import (entities, facts as commvqa_facts, loading, names, protocols, table1, table1_cache,
                                   table1_runs, text as commvqa_text)

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def small(tmp_path) -> loading.CommVQA:
    """The hand-made fixture: 5 annotation rows, 5 result rows of one 'model'."""
    ann = shutil.copy(FIXTURES / "commvqa_annotations.json", tmp_path / "annotations.json")
    res = shutil.copy(FIXTURES / "commvqa_results.csv", tmp_path / "toy_baseline_results.csv")
    return loading.load_commvqa(annotations_path=Path(ann), result_paths={("toy", "baseline"): Path(res)})


# --- references: both protocols -----------------------------------------------------------

@pytest.mark.parametrize("answers, authors", [
    (["a", "b", "c"], ["a", "b", "c"]),
    (["Red, with stripes", "blue", "green"], ["red", "with stripes"]),  # 4 fragments: first two only
    (["Red, with stripes", "blue"], ["red", "with stripes", "blue"]),  # exactly 3 fragments: all kept
    (["It's red", "no"], ["its red", "no"]),  # apostrophe removed with the quotes
    (['A man named "Bob"', "a man"], ["a man named bob", "a man"]),
    (["Yes, it's red.", "It is red", "Red, with white stripes"], ["yes", "its red."]),
    (["x [1]", "y"], ["x 1", "y"]),  # brackets stripped everywhere
])
def test_authors_references_split_on_commas_like_their_script(answers, authors):
    cell = str(answers)  # the release's cells are Python list reprs
    assert protocols.authors_references(cell) == authors


@pytest.mark.parametrize("answers", [
    ["a", "b", "c"], ["Red, with stripes", "blue"], ["It's red", 'He said "hi"'], ["line\nbreak", "tab\there"],
    ["", "ünïcode"],
])
def test_corrected_references_are_the_list_as_written(answers):
    assert loading.parse_answers_cell(str(answers), file="f.csv", row=0) == tuple(answers)


def test_authors_references_keep_python_escapes_as_text():
    cell = str(["Old woman\n", "nurse"])
    assert protocols.authors_references(cell) == ["old woman\\n", "nurse"]


@pytest.mark.parametrize("cell", ["['a', 'b'", "[a, b]", "__import__('os').system('true')", "{'a': 1}", "[1, 2]",
                                  "[]"])
def test_malformed_answers_cell_is_refused_naming_file_row_and_column(cell):
    with pytest.raises(DataFormatError, match=r"f\.csv: row 7, column 'answers'"):
        loading.parse_answers_cell(cell, file="f.csv", row=7)


def test_malformed_cell_in_a_file_names_the_file_row_and_column(tmp_path):
    res = shutil.copy(FIXTURES / "commvqa_results_malformed.csv", tmp_path / "bad_results.csv")
    with pytest.raises(DataFormatError, match=r"bad_results\.csv: row 2, column 'answers': not a Python list"):
        loading.load_commvqa(annotations_path=FIXTURES / "commvqa_annotations.json",
                             result_paths={("toy", "baseline"): Path(res)})


def _load_with(tmp_path: Path, *, annotations: bytes | None = None, results: bytes | None = None):
    """load_commvqa on the hand-made files with the annotations or the result file replaced by ``bytes``."""
    ann, res = tmp_path / "annotations.json", tmp_path / "toy_baseline_results.csv"
    ann.write_bytes(annotations if annotations is not None else (FIXTURES / "commvqa_annotations.json").read_bytes())
    res.write_bytes(results if results is not None else (FIXTURES / "commvqa_results.csv").read_bytes())
    return loading.load_commvqa(annotations_path=ann, result_paths={("toy", "baseline"): res})


def _fixture_with(name: str, old: bytes, new: bytes) -> bytes:
    data = (FIXTURES / name).read_bytes()
    assert data.count(old) == 1, old
    return data.replace(old, new)


@pytest.mark.parametrize("content, words", [
    (_fixture_with("commvqa_annotations.json", b'"Where is this?"', b'"Wh\xe9re is this?"'),
     r"annotations\.json: row 2 field 'question': not UTF-8 text: byte 0xe9 at line \d+, byte column \d+"),
    (b"", r"annotations\.json: top level: the file is empty \(0 bytes\)"),
    (b"{}", r"annotations\.json: top level: the file holds an object, expected an array of rows"),
    (b"[]", r"annotations\.json: top level: the array has no rows"),
    (b'"rows"', r"annotations\.json: top level: the file holds a string, expected an array of rows"),
    (b'{"0": {"image": "shirt.jpeg"}}', r"annotations\.json: top level: the file holds an object, expected an array"),
    (_fixture_with("commvqa_annotations.json", b'"context": "news",', b'"context": "news", "context": "health",'),
     r"annotations\.json: row 1: field 'context' appears 2 times\. A key must not repeat"),
    (b'[{"image": "a.jpeg"}, 3]', r"annotations\.json: row 0 lacks required field 'context'"),
])
def test_malformed_annotations_file_names_file_row_and_field(tmp_path, content, words):
    with pytest.raises(DataFormatError, match=words):
        _load_with(tmp_path, annotations=content)


@pytest.mark.parametrize("content, words", [
    (_fixture_with("commvqa_results.csv", b"She is eating an apple.", b"She is eating an \xe0pple."),
     r"toy_baseline_results\.csv: row 3 \(line 5\), column 'generated_answer': not UTF-8 text: byte 0xe0 at line 5"),
    (b"", r"toy_baseline_results\.csv: line 1 \(header\): the file is empty \(0 bytes\)"),
    (b"\n\n", r"toy_baseline_results\.csv: line 1 \(header\): the file is empty \(2 bytes\)"),
    (b",image,description,context,question,answers,generated_answer\n",
     r"toy_baseline_results\.csv: row 0 \(line 2\): no data rows; the file has only the header line"),
    (b"{}", r"toy_baseline_results\.csv: line 1 \(header\): lacks required column\(s\) \['image', 'context', "),
    (b"[]\n[]\n", r"toy_baseline_results\.csv: line 1 \(header\): lacks required column\(s\)"),
    (_fixture_with("commvqa_results.csv", b",description,", b",answers,"),
     r"toy_baseline_results\.csv: line 1 \(header\): column\(s\) \['answers'\] appear more than once"),
    (_fixture_with("commvqa_results.csv", b"She is eating an apple.", b'She is eating an apple.,"extra"'),
     r"toy_baseline_results\.csv: not a readable CSV table: .*line 5"),
])
def test_malformed_results_file_names_file_row_and_column(tmp_path, content, words):
    with pytest.raises(DataFormatError, match=words):
        _load_with(tmp_path, results=content)


def test_result_file_with_a_bom_and_the_real_files_read_as_before(tmp_path, data_dir):
    bom = tmp_path / "bom.csv"
    bom.write_bytes(b"\xef\xbb\xbf" + (FIXTURES / "commvqa_results.csv").read_bytes())
    plain = pd.read_csv(FIXTURES / "commvqa_results.csv", dtype=str, keep_default_na=False)
    assert read_csv_text(bom, required=names.RESULT_COLUMNS).equals(plain)
    for model in names.MODELS:
        for condition in names.CONDITIONS:
            path = data_dir / names.result_key(model, condition)
            assert read_csv_text(path).equals(pd.read_csv(path, dtype=str, keep_default_na=False))


def test_candidates_under_both_protocols(small):
    authors = protocols.protocol_inputs(small.results, protocol="authors")
    corrected = protocols.protocol_inputs(small.results, protocol="corrected")
    assert list(authors["candidate"]) == ["yes, the shirt is red.", "", "", "she is eating an apple.",
                                          "no, it is sunny."]
    assert list(corrected["candidate"]) == ["Yes, the shirt is red.", "", "None", "She is eating an apple.",
                                            "No, it is sunny."]
    assert corrected["references"].iloc[0] == ["Yes, it's red.", "It is red", "Red, with white stripes"]


# --- the authors' subsets -----------------------------------------------------------------

def test_subsets_equal_the_scripts_global_seed_sampling():
    n = 1215
    items = list(zip(range(n), [f"c{i}" for i in range(n)], [f"img{i}" for i in range(n)]))
    ours = protocols.authors_subsets(n)
    for i in range(3):
        random.seed(i)
        theirs = random.sample(items, int(0.8 * n))
        assert ours[i] == [t[0] for t in theirs]
    assert [len(s) for s in ours] == [972] * 3


def test_subsets_are_seed_stable_and_leave_the_global_generator_alone():
    random.seed(123)
    before = random.random()
    random.seed(123)
    first = protocols.authors_subsets(50, seeds=(0, 1, 2))
    assert random.random() == before
    assert protocols.authors_subsets(50, seeds=(0, 1, 2)) == first
    assert first[0] != first[1] and len(set(first[0])) == 40


# --- loader validation ----------------------------------------------------------------

def test_loader_counts_every_quirk(small):
    report = small.validation
    assert report.total(check="missing_generated_answer") == 1
    assert report.total(check="row_without_answers") == 1
    assert report.total(check="question_not_in_annotations") == 1
    assert report.total(check="generated_answer_read_as_missing") == 1
    assert report.total(check="fewer_than_3_answers") == 1
    assert report.total(check="authors_references_differ") == 2  # rows 0 and 2: answers with commas
    frame = report.to_frame()
    assert frame.loc[frame["check"] == "question_not_in_annotations", "examples"].str.contains("Is it raining").all()


def test_loader_matches_results_and_marks_the_benchmark_subset(small):
    res = small.results
    assert list(res["question_id"].astype("float").fillna(-1).astype(int)) == [0, 1, 2, 4, -1]
    assert list(res["match"]) == ["question"] * 4 + ["unmatched"]  # row 3 matched after trimming white space
    assert small.annotations["in_benchmark"].tolist() == [True, True, True, False, True]
    assert small.results["generated_answer"].isna().tolist() == [False, True, False, False, False]
    assert len(small.answers) == 3 + 2 + 3 + 3 and small.answers["words"].iloc[0] == 3


def test_registered_release_validation_counts(data_dir):
    data = loading.load_commvqa(data_dir=data_dir)
    r = data.validation
    assert len(data.annotations) == 2984 and data.annotations["in_benchmark"].sum() == 1215
    assert r.total(check="row_without_answers") == 239
    assert r.total(check="missing_generated_answer", file="blip2_contextual_results.csv") == 51
    assert r.total(check="missing_generated_answer", file="blip2_baseline_results.csv") == 5
    assert r.total(check="generated_answer_read_as_missing", file="blip2_baseline_results.csv") == 3
    assert r.total(check="question_not_in_annotations") == 8  # one edited question in each of the eight files
    assert data.results["question_id"].notna().all()
    # all four benchmarked models, both prompts, the same 1,215 questions
    sizes = data.results.groupby(["model", "condition"]).size()
    assert set(sizes.index) == {(m, c) for m in names.MODELS.values() for c in names.CONDITIONS}
    assert (sizes == 1215).all()
    for model in ("LLaVA", "mPLUG-Owl"):  # the two files added: no missing or NA-read generated answers
        for condition in names.CONDITIONS:
            file = f"{'llava' if model == 'LLaVA' else 'mplug_owl'}_{condition}_results.csv"
            assert r.total(check="missing_generated_answer", file=file) == 0


# --- scoring machinery ------------------------------------------------------------------

TOY_REFS = [["a red shirt", "the shirt is red"], ["a man", "a man named bob"], ["paris", "it is paris france"],
            ["an apple", "fruit", "it looks like an apple"]]
TOY_CANDS = ["the shirt is red", "", "it is in paris", "she is eating an apple"]


def test_pooled_bleu_equals_the_library():
    from pycocoevalcap.bleu.bleu import Bleu

    stats = table1._bleu_statistics(TOY_CANDS, TOY_REFS)
    for rows in ([0, 1, 2, 3], [0, 2], [3, 3, 1]):
        lib, _ = Bleu(4).compute_score({i: TOY_REFS[r] for i, r in enumerate(rows)},
                                       {i: [TOY_CANDS[r]] for i, r in enumerate(rows)}, verbose=0)
        assert table1._bleu_from_pooled(stats[rows].sum(axis=0))[0] == pytest.approx(lib)


def test_cider_of_counted_rows_is_the_librarys_bit_for_bit():
    from pycocoevalcap.cider.cider import Cider

    stats = table1.FileStatistics.__new__(table1.FileStatistics)  # the CIDEr part alone: no METEOR JVM
    stats.refs, stats.cands, stats._cooked = TOY_REFS, TOY_CANDS, None
    for rows in ([0, 1, 2, 3], [0, 2], [3, 3, 1], [1, 1, 1, 0]):  # subsets and bootstrap draws with repeats
        lib, segments = Cider().compute_score({i: list(TOY_REFS[r]) for i, r in enumerate(rows)},
                                              {i: [TOY_CANDS[r]] for i, r in enumerate(rows)})
        ours, our_segments = stats.cider(rows)
        assert ours == float(lib) and np.array_equal(our_segments, np.asarray(segments, dtype=float))


@pytest.mark.full  # scores a protocol twice with METEOR's JVM (about 7 s): make test-full, keeping the cold make test within its budget
def test_protocol_scores_are_cached_by_content_and_come_back_bit_identical(small, tmp_path, monkeypatch):
    """A second scoring of the same inputs and settings reads Parquet/npz (no pickle) instead of running
    the tokenizer, METEOR and the bootstrap again, and returns exactly what was computed; other inputs miss."""
    monkeypatch.setenv("VQALIB_CACHE_DIR", str(tmp_path / "cache"))
    first = table1.score_protocol(small.results, protocol="corrected", n_resamples=20, progress=False)
    folders = list((tmp_path / "cache" / "commvqa" / "table1").iterdir())
    assert len(folders) == 1 and not any(p.suffix in {".pkl", ".joblib"} for p in folders[0].iterdir())
    monkeypatch.setattr(table1, "tokenize_inputs", lambda inputs: pytest.fail("scored again"))
    again = table1.score_protocol(small.results, protocol="corrected", n_resamples=20, progress=False)
    for name in ("scores", "subsets", "per_question"):
        pd.testing.assert_frame_equal(getattr(first, name), getattr(again, name), check_exact=True)
    assert first.resamples.keys() == again.resamples.keys()
    assert all(np.array_equal(first.resamples[k], again.resamples[k]) for k in first.resamples)
    with pytest.raises(pytest.fail.Exception, match="scored again"):  # another seed is another key
        table1.score_protocol(small.results, protocol="corrected", n_resamples=20, seed=1, progress=False)


def test_score_protocol_on_the_fixture(small):
    with MeteorSession() as meteor:  # one JVM for both protocols, as notebook 08
        authors = table1.score_protocol(small.results, protocol="authors", meteor=meteor, progress=False)
        corrected = table1.score_protocol(small.results, protocol="corrected", n_resamples=50, meteor=meteor,
                                          progress=False)
    a = authors.scores.set_index("metric")
    sub = authors.subsets.groupby("metric")["value"].mean()
    assert np.allclose(a.loc[list(sub.index), "value"], sub)
    assert set(authors.subsets["n_rows"]) == {4}  # int(0.8 * 5)
    c = corrected.scores.set_index("metric")
    assert (c["ci_low"] <= c["value"] + 1e-9).all() and (c["value"] <= c["ci_high"] + 1e-9).all()
    assert (c["n_empty_candidates"] == 1).all() and (a["n_empty_candidates"] == 2).all()
    again = table1.score_protocol(small.results, protocol="corrected", n_resamples=50, progress=False)
    pd.testing.assert_frame_equal(corrected.scores, again.scores)


@pytest.mark.model_outputs
def test_authors_protocol_reproduces_paper_table1(data_dir):
    """The 40 released cells (four models x two prompts x five metrics; CLIPScore needs the images) under the
    authors' protocol, at the paper's three decimals: 39 equal, BLIP-2 contextual BLEU-4 the known exception."""

    data = loading.load_commvqa(data_dir=data_dir)
    scores = table1.score_protocol(data.results, protocol="authors", progress=False).scores
    paper = report.load_paper_table("commvqa_table01_benchmark", value="value")
    cmp = report.compare(table1.table1_rows(scores), "commvqa_table01_benchmark", paper=paper)
    compared = cmp[cmp["within_tolerance"].notna()]
    assert len(compared) == 40
    off = compared[~compared["within_tolerance"].astype(bool)]
    assert list(zip(off["model"], off["condition"], off["metric"])) == [("BLIP-2", "contextual", "BLEU-4")]


# --- text analyses ----------------------------------------------------------------------

@pytest.mark.parametrize("question, polar", [
    ("Is the shirt red?", True), ("are there trees", True), ("Isn't it late?", True),
    ("Is the guitar electric or acoustic?", False), ("What colour is it?", False), ("  Does it fly?", True),
])
def test_polar_rule(question, polar):
    assert commvqa_text.is_polar(question) is polar


@pytest.mark.parametrize("answer, kind", [
    ("Yes", "yes/no only"), ("no.", "yes/no only"), ("Yes, it is red", "yes/no + more"),
    ("It is red", "no yes/no"), ("", "no yes/no"), ("Nope!", "yes/no only"),
])
def test_answer_kind(answer, kind):
    assert commvqa_text.answer_kind(answer) == kind


def test_hedges_and_polar_answers_on_the_fixture(small):
    hedges = commvqa_text.hedge_counts(small.answers)
    release = hedges[(hedges["subset"] == "release") & (hedges["context"] == "all")].set_index("hedge")
    assert release.loc["appear(s) to be", "occurrences"] == 1 and release.loc["it looks like", "occurrences"] == 1
    polar = commvqa_text.polar_answers(small.annotations, small.answers).set_index("subset")
    assert polar.loc["release", "polar_questions"] == 1 and polar.loc["release", "answers"] == 3
    assert polar.loc["release", "share yes/no + more"] == pytest.approx(1 / 3)


def test_interrogative_welch_tests_match_scipy(small):
    from scipy import stats

    table = commvqa_text.interrogative_tests(small.annotations, words=("who", "what"))
    row = table[(table["subset"] == "release") & (table["word"] == "what") & (table["context"] == "health")].iloc[0]
    has = small.annotations["question"].str.lower().str.contains(r"\bwhat\b").to_numpy(float)
    inside = (small.annotations["context"] == "health").to_numpy()
    assert row["share_context"] == 1.0 and row["n_rest"] == 4
    expected = stats.ttest_ind(has[inside], has[~inside], equal_var=False)
    assert np.isnan(row["t"]) == np.isnan(expected.statistic)


def test_text_fact_comparison_judges_only_same_quantities():
    paper = pd.DataFrame({"fact_id": ["CV01", "CV37"], "section": ["", ""], "description": ["q", "acc"],
                          "unit": ["", "%"], "note": ["", ""], "paper": [1215.0, 57.0], "paper_decimals": [0, 0]})
    facts = [commvqa_facts.Fact("CV01", "benchmark", 1215, "same", ""),
             commvqa_facts.Fact("CV37", "release", 41.0, "analogous: other model", "")]
    out = commvqa_facts.compare_text_facts(facts, paper)
    assert out.set_index("fact_id").loc["CV01", "within_tolerance"] == True  # noqa: E712
    assert pd.isna(out.set_index("fact_id").loc["CV37", "within_tolerance"])


class _Planted:
    """Unpickling this creates ``marker``: the side effect of a pickle someone planted in a cache."""

    def __init__(self, marker: Path) -> None:
        self.marker = Path(marker)

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def test_planted_pickles_in_the_entity_cache_are_never_run(tmp_path, monkeypatch):
    """Named entities are cached as JSON keyed by model and texts; a pickle in a cache
    file's place, or in the old joblib.Memory folder, is never unpickled: the file is ignored with a
    warning naming it and the entities are recomputed, identical; then they come from the cache."""
    import pickle
    import re

    pickle.loads(pickle.dumps(_Planted(tmp_path / "proof")))
    assert (tmp_path / "proof").exists()  # the payload is live: unpickling it would leave the marker
    cache, marker = tmp_path / "cache", tmp_path / "ran"
    texts = ["Barack Obama visited Paris in 2010.", "A red cup on a table.", None, "A red cup on a table."]
    first = entities.entity_mentions(texts, cache=cache, progress=False)
    assert first[2] == () and first[1] == first[3] and all(isinstance(m, tuple) for m in first)
    [stored] = [p for p in cache.rglob("*") if p.is_file()]
    assert stored.suffix == ".json" and stored.parent.name == "entities"
    legacy = cache / "joblib" / "vqalib" / "commvqa" / "_entities" / ("0" * 32) / "output.pkl"
    legacy.parent.mkdir(parents=True)
    for planted in (pickle.dumps(_Planted(marker)), b'{"key": "x", "entities": "not entities"}'):
        stored.write_bytes(planted)
        legacy.write_bytes(pickle.dumps(_Planted(marker)))  # where joblib.Memory used to keep entities
        with pytest.warns(UserWarning, match="discarding entity cache entry " + re.escape(str(stored))):
            again = entities.entity_mentions(texts, cache=cache, progress=False)
        assert not marker.exists()
        assert again == first

    def fail(*_args, **_kwargs):
        raise AssertionError("recomputed instead of read from the cache")

    monkeypatch.setattr(entities, "_entities", fail)
    assert entities.entity_mentions(texts, cache=cache, progress=False) == first


# --- notebook 07's helpers: smoke subset, Table 1 assembly, alt texts, displays -----------------

FIGURES = Path(__file__).parents[1] / "figures"


def test_smoke_subset_and_load_summary(small):
    ann, ans, res = loading.smoke_subset(small.annotations, small.answers, small.results, rows=2)
    assert (ann["question_id"] < 2).all() and (ans["question_id"] < 2).all() and (res["row"] < 2).all()
    assert len(ann) == 2 and len(res) == 2 and set(ans["question_id"]) <= set(ann["question_id"])
    text = loading.load_summary(small)
    assert text.startswith(f"{len(small.annotations)} annotation rows, ")
    assert f"{len(small.answers)} human answers" in text and "toy_baseline_results.csv" in text


def test_benchmark_runs_keeps_commvqa_runs_of_real_models_unless_asked():
    runs = pd.DataFrame({"path": ["a", "b", "c"], "dataset": ["commvqa", "commvqa", "vizwiz-lf"],
                         "test_model": [False, True, False]})
    assert list(table1_runs.benchmark_runs(runs)["path"]) == ["a"]
    assert list(table1_runs.benchmark_runs(runs, include_test_runs=True)["path"]) == ["a", "b"]


def test_run_results_of_no_records_is_empty_with_zero_counts():
    out = table1_runs.run_results(pd.DataFrame(), annotations=pd.DataFrame(), benchmark=pd.Series([], dtype=int))
    assert out.empty and "generated_answer" in out.columns and out.attrs["counts"]["records"] == 0


def _scores(model: str, value: float) -> pd.DataFrame:
    return pd.DataFrame([{"model": model, "condition": c, "metric": m, "value": value, "ci_low": value,
                          "ci_high": value} for c in names.CONDITIONS for m in names.METRICS])


def test_assemble_table1_adds_not_run_cells_and_run_rows():
    table = table1_runs.assemble_table1(_scores("IDEFICS", 0.2))
    assert set(table["status"]) == {"reproduced (authors' protocol)", f"not run: {table1_runs.CLIPSCORE_NOT_RUN}"}
    assert len(table) == 2 * len(names.METRICS) + len(table1_runs.clipscore_cells())
    answers = pd.DataFrame({"model": ["tiny"] * 3, "condition": ["baseline", "baseline", "contextual"]})
    with_runs = table1_runs.assemble_table1(_scores("IDEFICS", 0.2), run_scores=_scores("tiny", 0.1), run_answers=answers)
    tiny = with_runs[with_runs["model"] == "tiny"].set_index(["condition", "metric"])
    assert tiny.loc[("baseline", "BLEU-1"), "status"] == "from runs/ (authors' protocol, 2 of the benchmark rows)"
    assert tiny.loc[("contextual", "CIDEr"), "status"].endswith("1 of the benchmark rows)")
    assert list(with_runs.columns) == ["model", "condition", "metric", "value", "status"]
    empty = table1_runs.assemble_table1(_scores("IDEFICS", 0.2), run_scores=None, run_answers=answers.iloc[:0])
    pd.testing.assert_frame_equal(empty, table)


def test_protocol_steps_joins_the_papers_values():
    authors = table1_cache.ProtocolScores("authors", _scores("IDEFICS", 0.2), subsets=pd.DataFrame(
        {"model": ["IDEFICS"], "condition": ["baseline"], "metric": ["BLEU-1"], "value": [0.25]}), per_question=None)
    corrected = table1_cache.ProtocolScores("corrected", _scores("IDEFICS", 0.3), subsets=authors.subsets, per_question=None)
    paper = pd.DataFrame({"model": ["IDEFICS"], "condition": ["baseline"], "metric": ["BLEU-1"], "paper": [0.21],
                          "other": ["x"]})
    plain = table1.protocol_steps(authors, corrected)
    steps = table1.protocol_steps(authors, corrected, paper=paper)
    assert list(steps.columns) == [*plain.columns, "paper"] and len(steps) == len(plain)
    first = steps.set_index(["model", "condition", "metric"])
    assert first.loc[("IDEFICS", "baseline", "BLEU-1"), "paper"] == 0.21
    assert first["paper"].isna().sum() == len(steps) - 1


@pytest.mark.parametrize("stem, alt_text", [
    ("commvqa_table01_protocols", lambda read: table1.protocol_alt_text(
        read("commvqa_table01_protocols"), read("commvqa_table01_benchmark"))),
    ("commvqa_fig05_entities_by_context", lambda read: entities.fig05_alt_text(
        entities.fig05_rates(read("commvqa_fig05_entities_by_context")))),
])
def test_alt_texts_from_the_committed_tables_are_the_committed_alt_texts(stem, alt_text):
    text = alt_text(lambda s: pd.read_csv(FIGURES / f"{s}.csv"))
    assert text and text in (FIGURES / f"{stem}.alt.txt").read_text()


def test_protocol_alt_text_names_the_cells_off_and_the_largest_change():
    steps = _scores("A", 0.2)[["model", "condition", "metric"]].assign(authors=0.2, corrected_all_rows=0.25)
    steps = pd.concat([steps, steps.assign(model="B", authors=0.3, corrected_all_rows=0.2)], ignore_index=True)
    steps.loc[(steps["model"] == "A") & (steps["metric"] == "CIDEr"), "corrected_all_rows"] = 0.9
    compared = steps[["model", "condition", "metric"]].assign(within_tolerance=True)
    compared.loc[0, "within_tolerance"] = False
    text = table1.protocol_alt_text(steps, compared)
    assert "each with 4 rows: A and B," in text and "except A baseline BLEU-1)" in text
    assert "higher in 10 of 20 cells, most for A baseline CIDEr (+0.700)" in text
    assert "the same under both protocols for 0 of the 5 metrics" in text  # A and B swap places everywhere


def test_fig05_rates_and_groups_leave_out_other():
    rates = pd.DataFrame([{"subset": s, "context": c, "entity": e, "per_answer": 0.1 * i}
                          for s in ("benchmark", "release") for i, c in enumerate(names.CONTEXTS)
                          for e in (*entities.ENTITY_GROUP_ORDER, "any entity")])
    fig5 = entities.fig05_rates(rates)
    assert set(fig5["subset"]) == {"benchmark"} and "OTHER" not in set(fig5["entity"])
    assert entities.fig05_groups()[-1] == "any entity" and "OTHER" not in entities.fig05_groups()
    assert set(entities.fig05_groups()) == set(fig5["entity"])
    text = entities.fig05_alt_text(fig5)
    last = names.CONTEXTS[-1]
    assert f"from 0.00 per answer ({names.CONTEXTS[0]}) to 0.50 ({last})" in text
    assert f"People are mentioned most in {last} answers and organisations most in {last} answers" in text


def test_paper_interrogative_cells_and_text_facts_view():
    tests = pd.DataFrame({"word": ["who", "what", "who", "where"], "context": ["social media", "shopping", "news",
                                                                              "shopping"], "p": [0.1] * 4})
    assert commvqa_text.paper_interrogative_cells(tests).index.tolist() == [0, 1]
    facts = pd.DataFrame({"fact_id": ["CV01"], "subset": ["benchmark"], "description": ["q"], "how": ["n"],
                          "reproduced": [1.23456], "paper": [1.2], "diff": [0.03456], "within_tolerance": [True],
                          "relation": ["same"], "unit": [""]})
    view = commvqa_facts.text_facts_view(facts)
    assert "unit" not in view.columns and view["reproduced"].iloc[0] == 1.235 and view.columns[0] == "fact_id"


# --- the ORG/PERSON x travel/science interaction (§4.3) -------------------------------------------

def test_loglinear_interaction_is_the_log_odds_ratio_with_its_wald_se():
    from scipy import stats

    a, b, c, d = 12, 5, 7, 9  # rows: reference context, other context; columns: reference entity, other
    fit = entities.loglinear_interaction(pd.DataFrame([[a, b], [c, d]], index=["science", "travel"],
                                                      columns=["ORG", "PERSON"]))
    assert fit["status"] == "fitted"
    assert fit["beta"] == pytest.approx(np.log(a * d / (b * c)))
    assert fit["se"] == pytest.approx(np.sqrt(1 / a + 1 / b + 1 / c + 1 / d))
    assert fit["z"] == pytest.approx(fit["beta"] / fit["se"])
    assert fit["p"] == pytest.approx(2 * stats.norm.sf(abs(fit["z"])))
    assert fit["p_fisher"] == pytest.approx(stats.fisher_exact([[a, b], [c, d]]).pvalue)
    even = entities.loglinear_interaction(pd.DataFrame([[6, 4], [9, 6]]))  # no interaction: exactly 0, not -0.0
    assert even["beta"] == 0 and np.copysign(1, even["beta"]) == 1 and even["p"] == pytest.approx(1)


def test_loglinear_interaction_equals_the_per_answer_poisson_regression():
    import statsmodels.api as sm
    import statsmodels.formula.api as smf

    rng = np.random.default_rng(0)
    long = pd.DataFrame([{"context": ctx, "entity": ent, "n": int(rng.poisson(rate))}
                         for ctx, rates in (("science", (0.2, 0.4)), ("travel", (0.5, 0.1)))
                         for _ in range(300) for ent, rate in zip(("ORG", "PERSON"), rates)])
    per_answer = smf.glm("n ~ entity * context", long, family=sm.families.Poisson()).fit(tol=1e-12,
                                                                                       tol_criterion="params")
    table = long.pivot_table(index="context", columns="entity", values="n", aggfunc="sum")
    fit = entities.loglinear_interaction(table)
    assert fit["beta"] == pytest.approx(per_answer.params["entity[T.PERSON]:context[T.travel]"])
    assert fit["se"] == pytest.approx(per_answer.bse["entity[T.PERSON]:context[T.travel]"])


def test_loglinear_interaction_with_a_zero_cell_has_no_estimate_and_says_so():
    fit = entities.loglinear_interaction(pd.DataFrame([[3, 0], [4, 5]]))
    assert fit["status"] == entities.ZERO_CELL
    assert all(np.isnan(fit[k]) for k in ("beta", "se", "z", "p")) and 0 < fit["p_fisher"] <= 1
    with pytest.raises(ValueError, match="2 x 2"):
        entities.loglinear_interaction(pd.DataFrame([[1, 2, 3], [4, 5, 6]]))


def _interaction_answers() -> tuple[pd.DataFrame, list[tuple]]:
    """Travel answers that mention organisations, science answers that mention people; the last two
    answers are outside the benchmark subset."""
    org, person = ("ORG", "Acme"), ("PERSON", "Ada")
    rows = [("travel", True, (org, org)), ("travel", True, (org, person)), ("travel", True, (org, ("GPE", "Rome"))),
            ("science magazines", True, (person, person)), ("science magazines", True, (person, org)),
            ("news", True, (org, person, person)), ("travel", False, (org,)), ("science magazines", False, (person,))]
    answers = pd.DataFrame([{"context": c, "in_benchmark": b} for c, b, _ in rows])
    return answers, [m for _, _, m in rows]


def test_org_person_interaction_counts_the_two_contexts_and_follows_the_papers_sign():
    answers, mentions = _interaction_answers()
    out = entities.org_person_interaction(answers, mentions).set_index("subset")
    bench, release = out.loc["benchmark"], out.loc["release"]
    assert (bench["org_a"], bench["person_a"], bench["org_b"], bench["person_b"]) == (4, 1, 1, 3)
    assert (release["org_a"], release["person_a"], release["org_b"], release["person_b"]) == (5, 1, 1, 4)
    # organisations more often in travel, people in science: negative, as the paper's beta = -2.22
    assert bench["log_odds_ratio"] == pytest.approx(np.log(1 * 1 / (4 * 3))) and bench["log_odds_ratio"] < 0
    assert bench["se"] == pytest.approx(np.sqrt(1 / 4 + 1 + 1 + 1 / 3))
    assert set(out["status"]) == {"fitted"}
    no_people = entities.org_person_interaction(answers, [tuple(e for e in m if e[0] != "PERSON") for m in mentions])
    assert set(no_people["status"]) == {entities.ZERO_CELL} and no_people["log_odds_ratio"].isna().all()


def test_interaction_facts_are_the_papers_quantity(small):
    answers, mentions = _interaction_answers()
    facts = commvqa_facts.paper_facts(annotations=small.annotations, answers=small.answers,
                                      hedges=commvqa_text.hedge_counts(small.answers),
                                      polar=commvqa_text.polar_answers(small.annotations, small.answers),
                                      interrogatives=commvqa_text.interrogative_tests(small.annotations),
                                      interaction=entities.org_person_interaction(answers, mentions))
    cells = {(f.fact_id, f.subset): f for f in facts if f.fact_id in ("CV47", "CV48")}
    assert set(cells) == {(i, s) for i in ("CV47", "CV48") for s in ("benchmark", "release")}
    assert cells["CV47", "benchmark"].relation == "same" and cells["CV48", "benchmark"].relation == "same"
    assert cells["CV47", "release"].relation.startswith("analogous: the full release")  # as every release cell
    assert "Poisson log-linear" in cells["CV47", "benchmark"].how
    assert cells["CV47", "benchmark"].reproduced == pytest.approx(np.log(1 / 12))
    paper = commvqa_facts.load_text_facts()
    out = commvqa_facts.compare_text_facts(facts, paper).set_index(["fact_id", "subset"])
    assert out.loc[("CV47", "benchmark"), "relation"] == "same"
    assert out.loc[("CV47", "benchmark"), "paper"] == -2.22 and out.loc[("CV48", "benchmark"), "paper"] == 0.67
    assert not pd.isna(out.loc[("CV47", "benchmark"), "within_tolerance"])  # judged, not only shown


def test_the_ner_identity_is_spacys_package_version_or_a_folders_meta(tmp_path):
    import json

    import spacy

    from vqalib.papers.commvqa import entities

    assert entities.ner_model_identity() == (f"{entities.SPACY_MODEL}=={spacy.util.get_package_version(entities.SPACY_MODEL)}"
                                             f"|spacy=={spacy.__version__}|{entities.NER_CACHE_VERSION}")
    (tmp_path / "meta.json").write_text(json.dumps({"lang": "en", "name": "tiny_ner", "version": "0.1.0"}))
    assert entities.ner_model_identity(str(tmp_path)).startswith(f"{tmp_path}==en_tiny_ner-0.1.0|spacy==")
