import numpy as np
import pandas as pd
import pytest

from vqalib.core import report
from vqalib.core.judge import settings
from vqalib.papers.vizwiz_lf import abstention, abstention_tables


def test_abstains_from_roles():
    roles = pd.Series([("Answer",), ("Answer", "Answer Failure"), (), ("Auxiliary Failure",)])
    assert abstention.abstains(roles).tolist() == [False, True, False, False]


def test_metrics_on_a_hand_made_example():
    # 10 questions, 4 unanswerable; the model abstains on 3 of them and on 2 answerable ones
    unanswerable = np.array([1, 1, 1, 1, 0, 0, 0, 0, 0, 0], dtype=bool)
    abstained = np.array([1, 1, 1, 0, 1, 1, 0, 0, 0, 0], dtype=bool)
    s = abstention.abstention_scores(unanswerable=unanswerable, abstained=abstained)
    assert s["abs-acc"] == pytest.approx(7 / 10)
    assert s["abs-prec"] == pytest.approx(3 / 5)
    assert s["abs-recall"] == pytest.approx(3 / 4)
    assert s["abs-f1"] == pytest.approx(2 * (3 / 5) * (3 / 4) / (3 / 5 + 3 / 4))
    assert s["abs-%"] == pytest.approx(50.0)


def test_majority_never_abstains_and_scores_zero_precision():
    gold = np.array([True, False, False, False])
    assert abstention.majority_baseline(gold) == {"abs-acc": 0.75, "abs-prec": 0.0, "abs-recall": 0.0,
                                                  "abs-f1": 0.0, "abs-%": 0.0}


def test_random_baseline_expectation_and_seeded_draws():
    gold = np.array([True] * 230 + [False] * 370)
    r = abstention.random_baseline(gold, n_draws=400, seed=0).set_index("variant")
    p = 230 / 600
    expected = r.loc["expectation"]
    assert expected["abs-acc"] == pytest.approx(p * p + (1 - p) ** 2)
    assert expected["abs-prec"] == expected["abs-recall"] == expected["abs-f1"] == pytest.approx(p)
    mean, sd = r.iloc[1], r.iloc[2]
    for metric in ("abs-acc", "abs-%"):  # the draws' mean lies within 3 standard errors of the expectation
        assert abs(mean[metric] - expected[metric]) <= 3 * sd[metric] / np.sqrt(400)
    again = abstention.random_baseline(gold, n_draws=400, seed=0)
    pd.testing.assert_frame_equal(r.reset_index()[again.columns], again)


def test_metrics_per_source_and_long_format():
    answers = pd.DataFrame({"source": ["A"] * 4 + ["B"] * 2,
                            "answerability": ["unanswerable", "answerable"] * 3,
                            "abstains": [True, False, False, True, True, True]})
    m = abstention.abstention_metrics(answers).set_index("source")
    assert m.loc["A", "abs-acc"] == 0.5 and m.loc["B", "abs-%"] == 100.0 and m.loc["A", "n"] == 4
    long = abstention.long_format(m.reset_index(), model="source")
    assert long.columns.tolist() == ["model", "method", "metric", "value"]
    assert long["metric"].tolist()[:5] == list(abstention.METRICS) and len(long) == 10


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="equally long"):
        abstention.abstention_scores(unanswerable=np.array([True]), abstained=np.array([True, False]))


def test_decision_comparison_says_which_decision_is_closer_to_the_paper():
    by_labels = pd.DataFrame({"source": ["GPT-4V", "InstructBLIP", "New"], "abs-acc": [0.61, 0.63, 0.5],
                              "abs-prec": 0.5, "abs-recall": 0.5, "abs-f1": 0.5, "abs-%": 40.0})
    by_classifier = by_labels.assign(**{"abs-acc": [0.77, 0.60, 0.5]})
    paper = pd.DataFrame({"model": ["InstBLIP", "GPT-4V", "GPT-4V"], "method": ["vanilla", "vanilla", "prompt"],
                          "metric": "abs-acc", "paper": [0.63, 0.77, 0.10]})
    out = abstention.decision_comparison(by_labels=by_labels, by_classifier=by_classifier, paper=paper,
                                         paper_names={"InstructBLIP": "InstBLIP"})
    assert list(out["model"].drop_duplicates()) == ["GPT-4V", "InstructBLIP", "New"]  # rows keep the sources' order
    assert list(out.loc[out["model"] == "GPT-4V", "metric"]) == list(abstention.METRICS)
    acc = out[out["metric"] == "abs-acc"].set_index("model")
    assert acc.loc["GPT-4V", "paper"] == 0.77 and acc.loc["GPT-4V", "closer_to_paper"] == "offline classifier"
    assert acc.loc["InstructBLIP", "closer_to_paper"] == "released labels"  # matched through paper_names
    assert pd.isna(acc.loc["New", "paper"]) and pd.isna(acc.loc["New", "closer_to_paper"])
    assert out.loc[out["metric"] == "abs-f1", "closer_to_paper"].isna().all()  # the paper has no such cell here


def test_answerability_agreement_counts():
    answers = pd.DataFrame({"source": "Expert", "answerability": ["unanswerable"] * 3 + ["answerable"] * 2,
                            "abstains": [True, False, False, True, False]})
    t = abstention.answerability_agreement(answers).set_index("quantity")["count"]
    assert t["expert and crowd agree on answerability"] == 2
    assert t["crowd unanswerable, answered by the expert"] == 2
    assert t["crowd answerable, not answered by the expert"] == 1


def test_table5_vanilla_on_the_release(vizwiz):
    answers = vizwiz.answers.assign(abstains=abstention.abstains(vizwiz.answers["roles"]))
    m = abstention.abstention_metrics(answers).set_index("source")
    # Expert matches the paper's row (0.73, 0.68, 0.57, 0.62, 32) within the registry's tolerance
    expert = m.loc[["Expert"]].drop(columns="n").reset_index().rename(columns={"source": "model"})
    compared = report.compare(abstention.long_format(expert), "vizwiz-lf_table05_abstention")
    judged = compared.dropna(subset=["reproduced"])
    assert len(judged) == 5 and judged["within_tolerance"].all()
    agreement = abstention.answerability_agreement(answers).set_index("quantity")["count"]
    assert agreement["expert and crowd agree on answerability"] == 440


def test_definition_variants_on_hand_made_sentences():
    answers = pd.DataFrame({"source": "A", "question_id": [1, 2, 3],
                            "answerability": ["unanswerable", "unanswerable", "answerable"]})
    sentences = pd.DataFrame({
        "source": "A", "question_id": [1, 1, 2, 2, 3], "sentence_index": [0, 1, 0, 1, 0],
        "roles": [("Answer Failure",), ("Suggestion",), ("Answer",), ("Answer Failure",), ("Auxiliary Failure",)]})
    v = abstention.definition_variants(answers, sentences).set_index("definition")["abs-%"]
    assert v["any Answer Failure (paper, §7.1)"] == pytest.approx(200 / 3)
    assert v["Answer Failure and no Answer"] == pytest.approx(100 / 3)
    assert v["any failure role"] == pytest.approx(100.0)
    assert v["half the sentences Answer Failure"] == pytest.approx(200 / 3)
    assert v["first sentence Answer Failure"] == pytest.approx(100 / 3)


def test_strategy_metrics_and_role_mix_from_runner_records():
    records = pd.DataFrame({"model": "llava-1.5-13b", "strategy": ["abstention"] * 4 + ["vanilla"] * 4,
                            "question_id": ["1", "2", "3", "99"] * 2,  # the runner writes ids as text
                            "question": ["q1", "q2", "q3", "q99"] * 2, "kind": ["answer", "answer", "error", "answer"] * 2,
                            "answer": ["I cannot tell. It is blurry.", "A red cup.", None, "x"] * 2})
    gold = pd.DataFrame({"question_id": [1, 2, 3], "question": ["q1", "q2", "q3"],
                         "answerability": ["unanswerable", "answerable", "answerable"]})

    def labeller(frame):  # stands in for vqalib.papers.vizwiz_lf.labelling.label_answers
        sentences = frame.assign(sentence=frame["answer"].str.split(". ", regex=False)).explode("sentence")
        sentences["roles"] = sentences["sentence"].map(lambda s: ("Answer Failure",) if "cannot" in s else ("Answer",))
        return sentences, frame.assign(abstains=frame["answer"].str.contains("cannot"))

    sentences, answers = abstention.label_runs(records, gold, labeller=labeller)
    assert answers.attrs["not_in_gold"] == 2 and len(answers) == 6
    assert answers["answerability"].notna().all() and set(answers["model"]) == {"LLaVA"}
    m = abstention.strategy_metrics(answers).set_index("method")
    assert m.loc["instruction", "model"] == "LLaVA" and m.loc["instruction", "errors"] == 1
    assert m.loc["instruction", "n"] == 2 and m.loc["instruction", "abs-acc"] == 1.0
    assert m.loc["vanilla", "abs-%"] == 50.0

    mix = abstention.strategy_role_mix(sentences).set_index(["source", "label"])
    assert mix.loc[("LLaVA · instruction", "Answer Failure"), "count"] == 1
    assert mix.loc[("LLaVA · vanilla", "Answer"), "percent"] == pytest.approx(200 / 3)
    # no vanilla run: the "before" bar comes from the released labels
    released = pd.DataFrame({"source": ["LLaVA", "LLaVA"], "roles": [("Answer",), ("Auxiliary",)]})
    only_instructed = sentences[sentences["method"] == "instruction"]
    mix = abstention.strategy_role_mix(only_instructed, released=released)
    before = mix[mix["method"] == "vanilla"]
    assert set(before["origin"]) == {"release"} and before["n_annotations"].iloc[0] == 2


def test_ans_acc_pairs_use_the_crowd_answer_and_skip_errors():
    run_answers = pd.DataFrame({"model": "LLaVA", "run_model": "llava-1.5-13b", "strategy": "abstention",
                                "method": "instruction", "question_id": ["1", "2"], "question": ["q1", "q2"],
                                "answer": ["A red cup.", None], "kind": ["answer", "error"]})
    answers = pd.DataFrame({"source": ["Expert", "GPT-4V"], "question_id": [1, 1], "crowd_majority": ["red cup"] * 2,
                            "crowd_answers": [["red cup", "cup"]] * 2})
    pairs = abstention.ans_acc_pairs(run_answers, answers)
    assert len(pairs) == 1 and pairs.loc[0, "reference"] == "red cup" and pairs.loc[0, "candidate"] == "A red cup."
    assert pairs.loc[0, "source"] == "LLaVA"
    scored = pairs.assign(score=[1.0])
    assert abstention.ans_acc(scored).to_dict("records") == [
        {"model": "LLaVA", "strategy": "abstention", "method": "instruction", "value": 1.0, "metric": "ans-acc"}]


def test_ans_acc_of_released_answers_by_source():
    scores = pd.DataFrame({"source": ["A", "A", "B"], "score": [1.0, 0.0, 0.5]})
    out = abstention.ans_acc(scores, by=("source",)).set_index("source")
    assert out.loc["A", "value"] == 0.5 and out.loc["B", "value"] == 0.5 and set(out["metric"]) == {"ans-acc"}


# --- Tables 5 and 26 assembly (notebook 05) ---------------------------------------------------

def _per_source():
    return pd.DataFrame({"model": ["Expert", "LLaVA"], "n": [2, 2], "abs-acc": [1.0, 0.5], "abs-prec": [1.0, 0.0],
                         "abs-recall": [1.0, 0.0], "abs-f1": [1.0, 0.0], "abs-%": [50.0, 0.0]})


def _run_metrics():
    return pd.DataFrame({"model": "LLaVA", "method": ["instruction", "vanilla"], "abs-acc": [0.9, 0.4],
                         "abs-prec": 0.5, "abs-recall": 0.5, "abs-f1": 0.5, "abs-%": [30.0, 10.0]})


def test_not_run_and_run_rows():
    from vqalib.core.report import not_run_rows

    rows = not_run_rows(abstention_tables._cells(["A", "B"], method="prompt", metrics=("abs-acc", "abs-%")),
                        reason="x")
    assert rows[["model", "metric"]].values.tolist() == [["A", "abs-acc"], ["A", "abs-%"], ["B", "abs-acc"],
                                                          ["B", "abs-%"]]
    assert set(rows["method"]) == {"prompt"} and set(rows["status"]) == {"not run: x"}
    empty = not_run_rows(abstention_tables._cells([], method="m", metrics=["abs-acc"]), reason="not run: s")
    assert list(empty.columns) == ["model", "method", "metric", "status"]
    assert abstention_tables.run_rows(_run_metrics(), "correction", as_method="correction").empty
    filled = abstention_tables.run_rows(_run_metrics(), "instruction", as_method="prompt")
    assert len(filled) == 5 and set(filled["method"]) == {"prompt"} and filled["value"].iloc[0] == 0.9


def test_score_runs_without_records_gives_empty_frames():
    sentences, answers, metrics = abstention_tables.score_runs(None, pd.DataFrame(), labeller=None)
    assert sentences.empty and answers.empty and metrics.empty
    assert abstention_tables.run_rows(metrics, "instruction", as_method="prompt").empty


def test_table5_assembly_on_hand_made_frames():
    gold = np.array([True, False])
    random_rows = abstention.random_baseline(gold, n_draws=10, seed=0)
    vanilla = abstention_tables.vanilla_rows(random_rows, _per_source(), gold)
    assert vanilla["model"].tolist() == ["Random", "Majority", "Expert", "LLaVA"] and "n" not in vanilla
    empty_runs = pd.DataFrame(columns=["model", "method"])
    t = abstention_tables.table5(vanilla, _per_source(), empty_runs, enable="set a judge")
    ans = t[(t["metric"] == "ans-acc") & (t["method"] == "vanilla")]
    assert ans["model"].tolist() == ["Expert", "LLaVA"] and ans["status"].str.endswith("set a judge").all()
    prompt = t[t["method"] == "prompt"]
    assert len(prompt) == 6 and set(prompt["model"]) == {"LLaVA"} and prompt["value"].isna().all()
    # runs of the abstention instruction fill the prompt cells; judge scores fill ans-acc
    lave = pd.DataFrame({"source": ["Expert", "InstructBLIP", "InstructBLIP"], "score": [1.0, 0.0, 1.0]})
    run_lave = pd.DataFrame({"model": "InstructBLIP", "strategy": "abstention", "method": "instruction", "score": [0.25]})
    t = abstention_tables.table5(vanilla, _per_source().replace({"LLaVA": "InstructBLIP"}),
                                 _run_metrics().replace({"LLaVA": "InstructBLIP"}), lave=lave,
                                 run_lave=run_lave)
    cell = t.set_index(["model", "method", "metric"])["value"]
    assert cell[("InstBLIP", "prompt", "abs-acc")] == 0.9 and cell[("InstBLIP", "prompt", "ans-acc")] == 0.25
    assert cell[("Expert", "vanilla", "ans-acc")] == 1.0 and cell[("InstBLIP", "vanilla", "ans-acc")] == 0.5
    assert "InstructBLIP" not in set(t["model"])
    assert t["status"].isna().all()


def test_table26_assembly_on_hand_made_frames():
    gold = np.array([True, False])
    vanilla = abstention_tables.vanilla_rows(abstention.random_baseline(gold, n_draws=10, seed=0), _per_source(),
                                             gold)
    t = abstention_tables.table26(vanilla, _per_source(), _run_metrics())
    baselines = t[t["model"] == "Baseline"]
    assert baselines["method"].drop_duplicates().tolist() == ["Random", "Majority", "Expert"]
    assert "Expert" not in set(t["model"])
    cell = t.set_index(["model", "method", "metric"])
    assert cell.loc[("LLaVA", "instruction", "abs-acc"), "value"] == 0.9
    assert cell.loc[("LLaVA", "vanilla (run)", "abs-%"), "value"] == 10.0
    assert cell.loc[("LLaVA", "vanilla", "abs-%"), "value"] == 0.0  # the release's row stays
    assert cell.loc[("LLaVA", "correction", "abs-acc"), "status"].startswith("not run: no 'correction'")
    assert len(t) == 15 + 5 + 4 * 5 + 5


def test_tables_5_and_26_on_the_release_match_the_committed_figures(vizwiz, tmp_path):
    answers = vizwiz.answers.assign(abstains=abstention.abstains(vizwiz.answers["roles"]))
    unanswerable = answers.loc[answers["source"] == "Expert", "answerability"].eq("unanswerable").to_numpy()
    per_source = abstention.abstention_metrics(answers).rename(columns={"source": "model"})
    vanilla = abstention_tables.vanilla_rows(abstention.random_baseline(unanswerable, n_draws=10), per_source,
                                             unanswerable)
    _, _, run_metrics = abstention_tables.score_runs(None, answers, labeller=None)
    figures = report.figures_dir(None)
    for stem, table in (("vizwiz-lf_table05_abstention", abstention_tables.table5(vanilla, per_source, run_metrics,
                                                                                  enable=settings.ENABLE_HINT)),
                        ("vizwiz-lf_table26_abstention_strategies", abstention_tables.table26(vanilla, per_source,
                                                                                              run_metrics))):
        written = report.save(report.compare(table, stem), stem, directory=tmp_path)
        assert written.path.read_bytes() == (figures / f"{stem}.csv").read_bytes()


def test_role_mix_alt_text_names_each_bars_failure_share():
    mix = pd.DataFrame({"source": ["LLaVA · vanilla", "LLaVA · vanilla", "LLaVA · instruction"],
                        "label": ["Answer", "Answer Failure", "Answer Failure"], "percent": [80.0, 20.0, 44.6]})
    text = abstention_tables.role_mix_alt_text(mix)
    assert text.startswith("Stacked horizontal bars") and text.endswith(
        "Answer Failure share: LLaVA · vanilla 20%; LLaVA · instruction 45%.")
    assert abstention_tables.FIG3_ENABLE.startswith("vqalib run --dataset vizwiz-lf --strategy abstention")
