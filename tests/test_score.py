"""`vqalib score` / `vqalib import` (vqalib.compendium.score): released answers given back in every format give the
released numbers of figures/; bad inputs give named errors; an import is read by the notebooks like a run."""

import json

import numpy as np
import pandas as pd
import pytest

from vqalib.compendium import score as scoring
from vqalib.compendium import scorecard_files
from vqalib.compendium.scorecard_schema import scorecard_folders
from vqalib.core.answer_matching import lmms_doc_hash
from vqalib.core.io import DataFormatError, project_root
from vqalib.papers.vizwiz_lf.loading import load_vizwiz_lf

FIGURES = project_root() / "figures"
MODEL = "LLaVA (scored)"


@pytest.fixture(scope="module")
def llava():
    answers = load_vizwiz_lf().answers
    return answers[answers["source"] == "LLaVA"][["question_id", "answer"]].reset_index(drop=True)


def _plain(llava, folder):
    path = folder / "llava.csv"
    llava.to_csv(path, index=False)
    return path, None


def _lmms(llava, folder):
    """An lmms-eval samples file as lmms-eval's logger lays it out, keyed only by doc_id (joined via the task data)."""
    docs = [{"item_id": str(q), "question_id": str(q)} for q in llava["question_id"]][::-1]  # another order
    data = folder / "task.jsonl"
    data.write_text("".join(json.dumps(d) + "\n" for d in docs))
    text = dict(zip(llava["question_id"].astype(str), llava["answer"]))
    lines = [{"doc_id": k, "target": "", "arguments": [], "resps": [[text[d["item_id"]]]],
              "filtered_resps": [text[d["item_id"]]], "doc_hash": lmms_doc_hash(d)} for k, d in enumerate(docs)]
    path = folder / "2026-12-02_samples_vizwiz_lf_vanilla.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path, data


def _vlmevalkit(llava, folder):
    path = folder / "MyModel_VizWizLF_openended.tsv"
    pd.DataFrame({"index": range(len(llava)), "question_id": llava["question_id"], "question": "",
                  "answer": "", "prediction": llava["answer"]}).to_csv(path, sep="\t", index=False)
    return path, None


def _figures_value(stem, **keys):
    table = pd.read_csv(FIGURES / f"{stem}.csv", keep_default_na=False, na_values=[""])
    for key, value in keys.items():
        table = table[table[key].astype(str) == value]
    assert len(table) == 1, keys
    return float(table["reproduced"].iloc[0])


@pytest.mark.parametrize("make", [_plain, _lmms, _vlmevalkit], ids=["plain", "lmms-eval", "vlmevalkit"])
def test_released_answers_give_the_released_numbers(llava, tmp_path, make):
    path, task_data = make(llava, tmp_path)
    card = scoring.score([path], dataset="vizwiz-lf", model=MODEL, task_data=task_data, compare=False)
    assert card.coverage["matched"] == 600 and not card.coverage["missing"]
    words = card.tables["vizwiz-lf_table01_word_counts"]
    for category in ("Identification", "Description", "Reading", "Others", "Total"):
        mine = words[(words["category"] == category) & (words["statistic"] == "mean_words")]["value"].iloc[0]
        assert round(mine, 4) == _figures_value("vizwiz-lf_table01_word_counts", category=category, column="LLaVA",
                                                statistic="mean_words")
    full = card.tables["vizwiz-lf_table04_full_set_bootstrap"]
    for metric in ("ROUGE", "METEOR"):
        for reference in ("s_r", "l_r"):
            mine = full[(full["metric"] == metric) & (full["reference"] == reference) & (full["candidate"] == "l_c")]
            assert round(float(mine["value"].iloc[0]), 4) == _figures_value(
                "vizwiz-lf_table04_full_set_bootstrap", source="LLaVA", metric=metric, reference=reference,
                candidate="l_c")
    abst = card.tables["vizwiz-lf_table05_abstention"].set_index("metric")["value"]
    released = pd.read_csv(FIGURES / "vizwiz-lf_table05_abstention_offline_classifier.csv").set_index("source")
    for metric in ("abs-acc", "abs-prec", "abs-recall", "abs-f1", "abs-%"):
        assert round(abst[metric], 4) == released.loc["LLaVA", metric]
    assert card.sources[0]["format"] == {"_plain": "plain", "_lmms": "lmms-eval",
                                         "_vlmevalkit": "vlmevalkit"}[make.__name__]


@pytest.mark.full  # slow for `make test` (its 10-minute budget); CI runs it in `make test-full`
def test_a_new_answer_is_labelled_by_the_final_classifier(llava, tmp_path):
    changed = llava.head(40).assign(answer=lambda f: "I think: " + f["answer"])
    path = tmp_path / "new.jsonl"
    changed.to_json(path, orient="records", lines=True)
    card = scoring.score([path], dataset="vizwiz-lf", model="Changed", compare=True, n_resamples=50)
    assert card.tables["labelled_by"].set_index("labelled_by")["answers"].to_dict() == {"classifier": 40}
    assert card.coverage["matched"] == 40 and len(card.coverage["missing"]) == 560
    diffs = card.tables["paired_differences"]
    assert set(diffs["versus"]) >= {"GPT-4V", "LLaVA", "Expert"} and (diffs["n"] <= 40).all()
    assert (diffs.loc[diffs["versus"] == "LLaVA", "n"] == 40).all()  # a source without an answer: fewer pairs
    rouge = diffs[(diffs["versus"] == "LLaVA") & (diffs["metric"] == "ROUGE") & (diffs["reference"] == "l_r")
                  & (diffs["candidate"] == "l_c")].iloc[0]
    assert rouge["ci_low"] <= rouge["difference"] <= rouge["ci_high"] and 0 <= rouge["wilcoxon_p"] <= 1
    assert "round_trip" not in card.tables and not diffs["note"].str.startswith("self-comparison").any()
    lexical = diffs[(diffs["versus"] == "LLaVA") & diffs["metric"].str.startswith("Lex")].iloc[0]
    assert lexical["note"] == "equal scores on every question, no test"  # words added, no crowd word lost or won
    out = scorecard_files.write(card, tmp_path / "card")
    text = out.read_text()
    assert "scored on 40 of 600 vizwiz-lf questions (560 missing)" in text and "<caption" in text
    assert '<h2 id="verdict">Verdict</h2>' in text and "Round trip" not in text and "self-comparison" not in text
    assert str(tmp_path) not in text  # no machine path: a scorecard is the same file on every machine
    assert "Compendium home" not in text and "numbers come from the files beside this page" in text  # not a checkout
    written = json.loads((tmp_path / "card" / "scorecard.json").read_text())
    assert written["source"]["path"] == "new.jsonl" and written["coverage"]["matched"] == 40
    assert "paper: GPT-4V" in (tmp_path / "card" / "vizwiz-lf_table04_full_set_bootstrap.md").read_text()
    again = scorecard_files.write(card, tmp_path / "card2")
    assert again.read_bytes() == out.read_bytes()  # nothing of the machine or the time in the page


@pytest.mark.full  # a whole released file under both protocols (tokenizer and METEOR JVMs)
def test_commvqa_authors_csv_gives_the_released_row(tmp_path):
    from vqalib.core import upstream

    path = upstream.verified_path("commvqa/results/idefics_baseline_results.csv")
    card = scoring.score([path], dataset="commvqa", model="IDEFICS (scored)", conditions=["baseline"])
    table = card.tables["commvqa_table01_benchmark"]
    authors = table[table["protocol"] == "authors"].set_index("metric")["value"]
    for metric in ("BLEU-1", "BLEU-4", "METEOR", "ROUGE", "CIDEr"):
        assert round(authors[metric], 4) == _figures_value("commvqa_table01_benchmark", model="IDEFICS",
                                                           condition="baseline", metric=metric)
    corrected = table[table["protocol"] == "corrected"]
    assert (corrected["ci_low"] <= corrected["value"]).all() and (corrected["value"] <= corrected["ci_high"]).all()


@pytest.mark.full  # two whole released files under both protocols (tokenizer and METEOR JVMs)
def test_commvqa_both_conditions_by_item_id_give_the_context_effect(tmp_path):
    from vqalib.papers.commvqa.loading import load_commvqa

    results = load_commvqa().results
    paths = []
    for condition in ("baseline", "contextual"):
        rows = results[(results["model"] == "LLaVA") & (results["condition"] == condition)].dropna(
            subset=["question_id"]).drop_duplicates("question_id")
        path = tmp_path / f"{condition}.csv"
        rows.assign(item_id=rows["question_id"].astype(int), answer=rows["generated_answer"])[
            ["item_id", "answer"]].to_csv(path, index=False)
        paths.append(path)
    card = scoring.score(paths, dataset="commvqa", model="LLaVA (ids)", conditions=["baseline", "contextual"],
                         n_resamples=100)
    table = card.tables["commvqa_table01_benchmark"]
    authors = table[table["protocol"] == "authors"].set_index(["condition", "metric"])["value"]
    for (condition, metric), value in authors.items():  # keyed by item id, scored on the released references
        assert round(value, 4) == _figures_value("commvqa_table01_benchmark", model="LLaVA", condition=condition,
                                                 metric=metric)
    effect = card.tables["commvqa_table01_context_effect"]
    assert set(effect["metric"]) == {"BLEU-1", "BLEU-4", "METEOR", "ROUGE", "CIDEr"}
    assert np.allclose(effect["difference"], effect["contextual"] - effect["baseline"])


def test_afgv_tier_answers(tmp_path):
    from vqalib.papers.afgv.question_sets import tier_items

    items = tier_items()
    path = tmp_path / "afgv.csv"
    items.head(300).assign(answer=lambda f: f["reference"]).assign(question_id=lambda f: f["question_id"])[
        ["question_id", "tier", "answer"]].to_csv(path, index=False)
    card = scoring.score([path], dataset="afgv", model="Echo")
    tiers = card.tables["afgv_tier_accuracy_predictions"].set_index("tier")
    assert (tiers["accuracy"] == 1.0).all() and card.coverage["matched"] == 300


def test_ids_of_another_dataset_are_refused_by_name(tmp_path):
    path = tmp_path / "wrong.csv"
    pd.DataFrame({"question_id": range(1100, 1110), "answer": "x"}).to_csv(path, index=False)
    with pytest.raises(DataFormatError, match=r"0 of 10 ids match vizwiz-lf: 1100, 1101, 1102, 1103, 1104 …; "
                                              r"is this commvqa\?"):
        scoring.score([path], dataset="vizwiz-lf", model="M")


@pytest.mark.full  # imports and scores a whole released file (about 6 s): make test-full, keeping the cold make test within its budget
def test_import_writes_a_run_the_notebooks_read(llava, tmp_path):
    from vqalib.papers.vizwiz_lf import abstention_tables, labelling
    from vqalib.runner.handoff import discover_runs, load_run

    source = tmp_path / "m.csv"
    llava.head(30).assign(answer=lambda f: f["answer"] + " Indeed.").to_csv(source, index=False)
    out, coverages = scoring.import_answers([source], dataset="vizwiz-lf", model="my-model",
                                            out=tmp_path / "runs" / "my-model.jsonl")
    runs = discover_runs(tmp_path / "runs")
    assert runs.loc[0, ["model", "strategy", "questions", "answers", "test_model"]].tolist() == [
        "my-model", "vanilla", 30, 30, False]
    records = load_run(out, finals_only=True)
    assert records.loc[0, "imported_from"]["sha256"] and records.loc[0, "engine"] == "import"
    _, answers, metrics = abstention_tables.score_runs(records, load_vizwiz_lf().answers,
                                                       labeller=labelling.label_answers)
    assert metrics.loc[0, ["model", "method", "n"]].tolist() == ["my-model", "vanilla", 30]
    with pytest.raises(FileExistsError, match="exists; give another --out or --overwrite"):
        scoring.import_answers([source], dataset="vizwiz-lf", model="my-model", out=out)


@pytest.mark.full  # slow for `make test` (its 10-minute budget); CI runs it in `make test-full`
def test_a_run_file_is_scored_like_the_file_it_was_imported_from(llava, tmp_path):
    source = tmp_path / "m.csv"
    llava.to_csv(source, index=False)
    run, _ = scoring.import_answers([source], dataset="vizwiz-lf", model="llava-again", out=tmp_path / "r.jsonl")
    from_run = scoring.score([run], dataset="vizwiz-lf", compare=False)  # the model's name comes from the run
    from_csv = scoring.score([source], dataset="vizwiz-lf", model="llava-again", compare=False)
    assert from_run.model == "llava-again" and from_run.sources[0]["format"] == "vqalib-run"
    for stem in ("vizwiz-lf_table01_word_counts", "vizwiz-lf_table04_full_set_bootstrap", "vizwiz-lf_table05_abstention"):
        pd.testing.assert_frame_equal(from_run.tables[stem], from_csv.tables[stem])


@pytest.mark.full  # slow for `make test` (its 10-minute budget); CI runs it in `make test-full`
def test_cli_score_and_its_errors(llava, tmp_path, capsys):
    from vqalib.compendium.cli import main

    wrong = tmp_path / "wrong.csv"
    llava.head(3).assign(question_id=[999999, 999998, 999997]).to_csv(wrong, index=False)
    assert main(["score", str(wrong), "--dataset", "vizwiz-lf", "--model", "M", "--out", str(tmp_path / "x")]) == 1
    assert "error: " in capsys.readouterr().err and not (tmp_path / "x").exists()
    twice = tmp_path / "twice.jsonl"
    pd.concat([llava.head(2), llava.head(1)]).to_json(twice, orient="records", lines=True)
    assert main(["score", str(twice), "--dataset", "vizwiz-lf", "--model", "M", "--out", str(tmp_path / "y")]) == 1
    assert "answered more than once: 1 (lines 1/3)" in capsys.readouterr().err
    assert main(["score", str(twice), "--dataset", "vizwiz-lf", "--model", "M", "--duplicates", "last", "--no-compare",
                 "--n-resamples", "20", "--out", str(tmp_path / "y")]) == 0
    assert "scored on 2 of 600 vizwiz-lf questions (598 missing, 1 duplicate)" in capsys.readouterr().out
    assert json.loads((tmp_path / "y" / "scorecard.json").read_text())["coverage"]["duplicate"] == ["1"]


def _by_image_name(llava, folder, *, named=412):
    """LLaVA's answers, the first ``named`` keyed by their VizWiz image file name (what most VizWiz users have)."""
    from vqalib.papers.vizwiz_lf.image_names import image_file_names

    names = image_file_names()
    ids = [names[str(q)] if k < named else str(q) for k, q in enumerate(llava["question_id"])]
    path = folder / "by_image.csv"
    pd.DataFrame({"question_id": ids, "answer": llava["answer"]}).to_csv(path, index=False)
    return path


def test_vizwiz_image_file_names_are_question_ids_counted_in_the_coverage(llava, tmp_path):
    from vqalib.papers.vizwiz_lf.image_names import image_file_names

    assert image_file_names()["1"] == "VizWiz_train_00014902.jpg"  # the release's image_url of question 1
    from vqalib.core.answer_matching import match_answers

    answers, _, _ = scoring.read_all([_by_image_name(llava, tmp_path)], dataset="vizwiz-lf")
    ids = scoring.dataset_ids("vizwiz-lf")
    aliases = scoring.question_aliases(answers, dataset="vizwiz-lf", ids=ids)
    matched, coverage = match_answers(answers, ids=ids, dataset="vizwiz-lf", aliases=aliases)
    assert coverage["matched"] == 600 and coverage["aliased"] == {"VizWiz image file name": 412}
    assert matched["item_id"].tolist() == ids and (matched["answer"] == llava["answer"]).all()
    assert scoring.coverage_text(coverage).endswith("(412 matched by VizWiz image file name)")
    twice = tmp_path / "twice.csv"  # question 1 by its image and by its id: `vqalib score` maps before it matches
    pd.DataFrame({"question_id": ["VizWiz_train_00014902.jpg", "1"], "answer": ["a", "b"]}).to_csv(twice, index=False)
    with pytest.raises(DataFormatError, match=r"1 vizwiz-lf ids answered more than once: 1 \(lines 2/3\)"):
        scoring.score([twice], dataset="vizwiz-lf", model="M")


def test_afgv_items_by_image_file_name_and_tier(tmp_path):
    from vqalib.core import declarations
    from vqalib.core.answer_matching import match_answers
    from vqalib.papers.afgv.image_names import image_tier_aliases

    blocks = {b["dataset"]: b["what"] for b in declarations.extensions("question_alias")}
    assert blocks == {"vizwiz-lf": "VizWiz image file name", "afgv": "VizWiz image file name and tier"}
    ids = ["1/simplified", "1/complex", "2/simplified"]
    assert image_tier_aliases(ids, question_set="CommVQA") == []  # its question ids are not VizWiz-LF's
    answers = pd.DataFrame({"item_id": ["VizWiz_train_00014902.jpg/complex", "2/simplified"], "answer": ["a", "b"],
                            "line": [2, 3]})
    aliases = scoring.question_aliases(answers, dataset="afgv", ids=ids)
    matched, coverage = match_answers(answers, ids=ids, dataset="afgv", aliases=aliases)
    assert matched["item_id"].tolist() == ["1/complex", "2/simplified"]
    assert coverage["aliased"] == {"VizWiz image file name and tier": 1}
    assert scoring.question_aliases(answers.assign(item_id=["1/simplified", "2/simplified"]), dataset="afgv", ids=ids) == []


def test_a_round_trip_counts_only_the_cells_with_a_released_value(tmp_path):
    """Expert's released answers given back: Table 4 has no Expert value against l_r (its own answers), so those cells
    compare nothing; they were counted as unequal ("7 of 14 cells equal")."""
    from vqalib.compendium.scorecard_verdict import verdict_text
    from vqalib.papers.vizwiz_lf.scorecard import round_trip, round_trip_summary

    words = pd.read_csv(FIGURES / "vizwiz-lf_table01_word_counts.csv")
    words = words[(words["column"] == "Human") & (words["statistic"] == "mean_words")]
    full = pd.read_csv(FIGURES / "vizwiz-lf_table04_full_set_bootstrap.csv", keep_default_na=False, na_values=[""])
    full = full[(full["source"] == "Expert") & full["metric"].isin(["ROUGE", "METEOR"]) & (full["candidate"] == "l_c")]
    offline = pd.read_csv(FIGURES / "vizwiz-lf_table05_abstention_offline_classifier.csv").set_index("source")
    metrics = ["abs-acc", "abs-prec", "abs-recall", "abs-f1", "abs-%"]
    tables = {
        "vizwiz-lf_table01_word_counts": words.assign(value=words["reproduced"])[["category", "statistic", "value"]],
        "vizwiz-lf_table04_full_set_bootstrap": pd.concat([
            full.assign(value=full["reproduced"]), full.assign(reference="l_r", value=1.0)])[
            ["metric", "reference", "candidate", "value"]],
        "vizwiz-lf_table05_abstention": pd.DataFrame({"metric": metrics, "value": offline.loc["Expert", metrics]}),
    }
    frame = round_trip(tables, source="Expert")
    assert len(frame) == 14 and frame["figures"].isna().sum() == 2 and frame["equal_4dp"].isna().sum() == 2
    assert round_trip_summary(frame) == {"equal": 12, "n": 12}
    frame.to_csv(tmp_path / "round_trip.csv", index=False)  # as a scorecard saves it and reads it back
    assert round_trip_summary(pd.read_csv(tmp_path / "round_trip.csv")) == {"equal": 12, "n": 12}
    diffs = pd.DataFrame({"model": "Expert again", "versus": ["Expert"], "metric": "ROUGE", "reference": "s_r",
                          "candidate": "l_c", "n": 600, "difference": 0.0, "ci_low": 0.0, "ci_high": 0.0,
                          "wilcoxon_p": np.nan})
    card = scoring.Scorecard(model="Expert again", dataset="vizwiz-lf", sources=[], coverage={
        "dataset": "vizwiz-lf", "questions": 600, "matched": 600, "missing": [], "empty": [], "unknown": [],
        "duplicate": []}, tables={"round_trip": frame, "paired_differences": diffs})
    assert ("Round trip: these are Expert's released answers given back, and 12 of 12 cells with a released value "
            "equal Expert's numbers in figures/ to 4 decimals; 2 have none: Table 1 mean words, Table 4 full set and "
            "Table 5 (offline classifier).") in verdict_text(card)
    llava = pd.read_csv(FIGURES / "vizwiz-lf_score_round_trip.csv")
    assert round_trip_summary(llava) == {"equal": 14, "n": 14}


def _afgv_card() -> scoring.Scorecard:
    """An AFGV scorecard of two questions in the layout `vqalib score` gives (the paper's own table functions)."""
    from vqalib.papers.afgv.predictions import prediction_tables
    from vqalib.papers.afgv.scorecard import SCORECARD_TABLES, per_question_accuracy

    rows = pd.DataFrame({"question_id": ["1", "1", "1", "2", "2", "2"], "tier": ["simplified", "baseline", "complex"] * 2,
                         "question_set": "VizWiz-LF", "answer": ["yes", "no", "yes", "red", "red", "blue"],
                         "reference": ["yes", "yes", "yes", "red", "red", "red"]})
    predictions = rows.rename(columns={"answer": "prediction", "reference": "answer"}).assign(
        model="Echo", question="q", question_type="t", intent_similarity=0.9)
    tables = dict(zip(SCORECARD_TABLES, prediction_tables(predictions, threshold=0.8)))
    coverage = {"dataset": "afgv", "questions": 6, "given": 6, "matched": 6, "missing": [], "unknown": [],
                "duplicate": [], "empty": []}
    source = {"path": "echo.csv", "format": "plain", "toolkit": None, "version": None, "sha256": "0" * 64, "records": 6}
    return scoring.Scorecard(model="Echo", dataset="afgv", sources=[source], coverage=coverage, tables=tables,
                             settings={"question_set": "VizWiz-LF"}, per_question=per_question_accuracy(rows))


def test_a_written_scorecard_passes_the_checks_the_leaderboard_reads_it_with(tmp_path):
    from vqalib.compendium import leaderboard

    card = _afgv_card()
    scorecard_files.write(card, tmp_path / "scores" / "echo")
    assert scorecard_folders(tmp_path / "scores") == [tmp_path / "scores" / "echo"]
    rows, per_question = leaderboard.scorecard_rows(tmp_path / "scores" / "echo", dataset="afgv")
    assert set(rows["reference"]) == {"simplified, VizWiz-LF", "baseline, VizWiz-LF", "complex, VizWiz-LF"}
    assert len(per_question) == 6 and set(per_question["question_id"]) == {1, 2}
    back = scorecard_files.read(tmp_path / "scores" / "echo")[0]
    for stem, frame in card.tables.items():
        assert back.tables[stem].shape == frame.shape, stem
    path = tmp_path / "scores" / "echo" / "scorecard.json"
    path.write_text(path.read_text().replace('"question_set": "VizWiz-LF"', '"question_set": "GQA"'))  # not scored on
    with pytest.raises(DataFormatError, match=r"echo: scorecard\.json: field settings\['question_set'\]: "
                                              r"question_set must be one of"):
        leaderboard.scorecard_rows(tmp_path / "scores" / "echo", dataset="commvqa")  # checked whatever is ranked
