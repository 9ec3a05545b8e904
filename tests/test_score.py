"""`vqalib score` / `vqalib import` (vqalib.compendium.score): released answers given back in every format give the
released numbers of figures/; bad inputs give named errors; an import is read by the notebooks like a run."""

import json

import numpy as np
import pandas as pd
import pytest

from vqalib.compendium import score as scoring
from vqalib.compendium import scorecard_files
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
