"""The leaderboard: the released models' rows equal the notebooks' tables, tiers follow the stated rule, and scorecards of
released answers land in their sources' tiers."""

import re

import numpy as np
import pandas as pd
import pytest

from vqalib.compendium import leaderboard
from vqalib.compendium.scorecard_schema import scorecard_folders
from vqalib.core.io import project_root

FIGURES = project_root() / "figures"


def _board(stem: str) -> pd.DataFrame:
    return pd.read_csv(FIGURES / f"{stem}.csv", keep_default_na=False, na_values=[""])


def test_vizwiz_lf_leaderboard_equals_tables_1_and_4():
    board = _board("leaderboard_vizwiz-lf")
    full = _board("vizwiz-lf_table04_full_set_bootstrap")
    full = full[full["candidate"] == "l_c"].rename(columns={"source": "model", "reproduced": "value"})
    scored = board[board["metric"].isin(leaderboard.VIZWIZ_METRICS)]
    both = scored.merge(full, on=["metric", "reference", "model"], suffixes=("", "_t4"))
    assert len(both) == len(scored) == 6 * 6 + 3  # Expert: short references only (no long reference of its own)
    for column in ("value", "ci_low", "ci_high", "n"):
        assert (both[column] == both[f"{column}_t4"]).all(), column
    words = _board("vizwiz-lf_table01_word_counts")
    total = words[(words["category"] == "Total") & (words["dataset"] == "VizWiz-LF")
                  & (words["statistic"] == "mean_words")].set_index("column")["reproduced"].rename({"Human": "Expert"})
    length = board[board["metric"] == leaderboard.WORDS].set_index("model")
    assert len(length) == 7 and (length["value"] == total.reindex(length.index)).all()
    assert length["tier"].isna().all()  # no better length: not ranked


def test_vizwiz_lf_abstention_and_roles_equal_tables_5_and_2():
    from vqalib.papers.vizwiz_lf import leaderboard_measures as measures

    board = _board("leaderboard_vizwiz-lf").set_index(["metric", "reference", "model"])
    table5 = _board("vizwiz-lf_table05_abstention")
    table5 = table5[(table5["method"] == "vanilla") & (table5["metric"] == "abs-acc")].set_index("model")["reproduced"]
    table5 = table5.rename({"InstBLIP": "InstructBLIP"})  # the paper's column name
    released = board.xs((measures.ABSTENTION, measures.RELEASED_LABELS), level=["metric", "reference"])
    assert len(released) == 7 and (released["value"] == table5.reindex(released.index)).all()
    offline = _board("vizwiz-lf_table05_abstention_offline_classifier").set_index("source")["abs-acc"]
    labelled = board.xs((measures.ABSTENTION, measures.CLASSIFIER_LABELS), level=["metric", "reference"])
    assert len(labelled) == 7 and (labelled.loc[offline.index, "value"] == offline).all()  # the 4 it holds
    # LLaVA's roles on the classifier's labels: notebook 09's scorecard of its answers, both answerability groups
    roles = pd.read_csv(project_root() / "scores" / "llava-released" / "vizwiz-lf_table02_roles_by_answerability.csv")
    pooled = roles.groupby("role", sort=False)[["n_with_label", "n_answers"]].sum()
    for role, name in measures.ROLE_SHARE.items():
        share = pooled.loc[role, "n_with_label"] / pooled.loc[role, "n_answers"]
        assert board.loc[(name, measures.CLASSIFIER_LABELS, "LLaVA"), "value"] == round(share, 4), role
    described = board[board.index.get_level_values("metric").isin(leaderboard.REPORTED)]
    assert described["tier"].isna().all() and len(described) == 7 * (1 + 2 + len(measures.ROLE_SHARE))


@pytest.mark.full  # the released answers' leaderboard on 8 questions, about 10 s
def test_a_configured_judge_adds_lave_of_the_released_answers(tmp_path, data_dir):
    from vqalib.compendium.leaderboard_files import page_body
    from vqalib.core.judge.cache import CachedJudge
    from vqalib.papers.vizwiz_lf.loading import load_vizwiz_lf

    class Scripted:  # a judge that rates long answers higher: models with longer answers come first
        name, model = "scripted", "by-length"

        def complete(self, messages, *, temperature=0.0, max_tokens=256):
            words = len(messages[-1]["content"].split("Candidate answer:")[-1].split())
            return f"Rating: {1 + (words > 15) + (words > 40)}"

    data = load_vizwiz_lf(data_dir=data_dir)
    board = leaderboard.leaderboard("vizwiz-lf", data=data, judge=CachedJudge(Scripted(), cache_dir=tmp_path),
                                    question_ids=range(1, 9), n_resamples=50)
    lave = board["table"][board["table"]["metric"] == "GPT-4 (LAVE)"]
    assert set(lave["model"]) == set(data.answers["source"]) and lave["n"].between(5, 8).all()
    assert lave["origin"].str.endswith("judged by scripted:by-length").all() and (lave["tier"] != "").any()
    assert (board["pairs"]["metric"] == "GPT-4 (LAVE)").any()
    assert leaderboard.LAVE_NOTE[:30] not in page_body({"vizwiz-lf": board["table"]})
    assert leaderboard.LAVE_NOTE[:30] in page_body({"vizwiz-lf": board["table"][board["table"]["metric"] != "GPT-4 (LAVE)"]})


def test_commvqa_leaderboard_equals_table_1_corrected_protocol():
    board = _board("leaderboard_commvqa")
    steps = _board("commvqa_table01_protocols")
    steps = steps.assign(model=[leaderboard.commvqa_label(m, c) for m, c in zip(steps["model"], steps["condition"])])
    both = board.merge(steps, on=["model", "metric"])
    assert len(both) == len(board) == 8 * 5
    assert (both["value"] == both["corrected_all_rows"]).all()
    assert (both[["ci_low_x", "ci_high_x"]].to_numpy() == both[["ci_low_y", "ci_high_y"]].to_numpy()).all()
    assert board.loc[board["metric"].str.startswith("BLEU"), "tier"].isna().all()  # corpus-level: not ranked
    assert board.loc[~board["metric"].str.startswith("BLEU"), "tier"].notna().all()


def _per_question(shifts: dict[str, float], *, n: int = 200, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    base = rng.normal(0.5, 0.1, n)
    return pd.concat([pd.DataFrame({"metric": "M", "reference": "", "model": model, "question_id": range(n),
                                    "score": base + shift + rng.normal(0, 0.02, n)})
                      for model, shift in shifts.items()], ignore_index=True)


def test_tiers_split_only_where_the_holm_corrected_test_and_the_interval_agree():
    per_question = _per_question({"A": 0.1, "B": 0.099, "C": 0.0, "D": -0.0005})
    rows = per_question.groupby("model", as_index=False)["score"].mean().rename(columns={"score": "value"})
    rows = rows.assign(metric="M", reference="", kind="released")
    pairs = leaderboard.with_holm(leaderboard.paired_tests(per_question, n_resamples=200))
    tiers = leaderboard.assign_tiers(rows, pairs).set_index("model")["tier"]
    assert list(tiers[["A", "B", "C", "D"]]) == [1, 1, 2, 2]
    ab = pairs[(pairs["model"] == "A") & (pairs["versus"] == "B")].iloc[0]
    assert ab["ci_low"] <= 0 <= ab["ci_high"] or ab["p_holm"] >= leaderboard.ALPHA
    assert (pairs["p_holm"] >= pairs["p"]).all()


def test_equal_answers_are_never_separated():
    per_question = _per_question({"A": 0.1, "B": 0.0})
    twin = per_question[per_question["model"] == "B"].assign(model="B again")
    per_question = pd.concat([per_question, twin], ignore_index=True)
    pairs = leaderboard.with_holm(leaderboard.paired_tests(per_question, n_resamples=200))
    same = pairs[(pairs["model"] == "B") & (pairs["versus"] == "B again")].iloc[0]
    assert np.isnan(same["p"]) and not same["distinguishable"] and same["note"]


@pytest.mark.full
def test_scorecards_of_released_answers_land_in_their_sources_tiers(tmp_path, data_dir):
    from vqalib.compendium import score, scorecard_files
    from vqalib.papers.vizwiz_lf.loading import load_vizwiz_lf

    data = load_vizwiz_lf(data_dir=data_dir)
    for source in ("LLaVA", "GPT-4V"):
        answers = tmp_path / f"{source}.csv"
        data.answers.loc[data.answers["source"] == source, ["question_id", "answer"]].to_csv(answers, index=False)
        card = score.score([answers], dataset="vizwiz-lf", model=f"{source} (given back)", data_dir=data_dir)
        scorecard_files.write(card, tmp_path / "scores" / source.lower())
    board = leaderboard.leaderboard("vizwiz-lf", scores_dir=tmp_path / "scores", data=data)
    table, pairs = board["table"], board["pairs"]
    ranked = table[table["tier"] != ""].set_index(["metric", "reference", "model"])["tier"]
    given_back = 0
    for (metric, reference, model), tier in ranked.items():
        if model.endswith(" (given back)"):
            assert tier == ranked[(metric, reference, model.removesuffix(" (given back)"))], (metric, reference, model)
            given_back += 1
    assert given_back == 2 * (6 + 1)  # Table 4's six settings and abstention on the classifier's labels, each card
    rows = table.set_index(["metric", "reference", "model"])
    for model in ("LLaVA", "GPT-4V"):  # every measure, the described ones too, equals its source's
        mine = rows.xs(f"{model} (given back)", level="model")[["n", "value", "ci_low", "ci_high"]]
        assert len(mine) == 6 + 1 + 1 + 2 + 8
        theirs = rows.xs(model, level="model").loc[mine.index, mine.columns]
        assert mine.to_numpy(float).ravel().tolist() == pytest.approx(theirs.to_numpy(float).ravel().tolist())
    # the two scorecards are compared with each other, question by question, like any two models
    both = pairs[pairs["model"].str.endswith("(given back)") & pairs["versus"].str.endswith("(given back)")]
    assert len(both) == 6 + 1 and both["p"].notna().all()
    origin = table.loc[table["model"] == "LLaVA (given back)", "origin"].iloc[0]
    assert "SHA-256" in origin and "LLaVA.csv (plain" in origin and "role labels by the offline classifier" in origin


@pytest.mark.full  # one released file under both protocols (tokenizer and METEOR JVMs), about 20 s
def test_a_commvqa_scorecard_of_released_results_lands_in_its_sources_tiers(tmp_path):
    import dataclasses

    from vqalib.compendium import score, scorecard_files
    from vqalib.core import upstream

    path = upstream.verified_path("commvqa/results/idefics_baseline_results.csv")
    card = score.score([path], dataset="commvqa", model="IDEFICS (given back)", conditions=["baseline"])
    scorecard_files.write(card, tmp_path / "scores" / "idefics")
    scorecard_files.write(dataclasses.replace(card, model="IDEFICS (again)"), tmp_path / "scores" / "again")
    board = leaderboard.leaderboard("commvqa", scores_dir=tmp_path / "scores")
    rows = board["table"].set_index(["metric", "model"])
    for metric in ("BLEU-1", "BLEU-4", "METEOR", "ROUGE", "CIDEr"):
        mine, source = rows.loc[(metric, "IDEFICS (given back) (baseline)")], rows.loc[(metric, "IDEFICS (baseline)")]
        numbers = ["n", "value", "ci_low", "ci_high"]  # scorecard.json keeps 10 significant digits
        assert mine[numbers].astype(float).tolist() == pytest.approx(source[numbers].astype(float).tolist()), metric
        assert mine["tier"] == source["tier"], metric
        assert (mine["tier"] == "") == metric.startswith("BLEU")  # corpus-level: in the table, never ranked
    pairs = board["pairs"]
    names = {"IDEFICS (given back) (baseline)", "IDEFICS (again) (baseline)"}
    twins = pairs[[{m, v} == names for m, v in zip(pairs["model"], pairs["versus"])]]
    assert len(twins) == 3 and twins["p"].isna().all() and not twins["distinguishable"].any()  # equal: no test
    assert "idefics_baseline_results.csv (commvqa-results" in rows.loc[("ROUGE", "IDEFICS (given back) (baseline)"),
                                                                       "origin"]


@pytest.mark.full  # two AFGV scorecards (the tiers' rewrites and intent similarity), about 10 s
def test_afgv_scorecards_are_ranked_per_tier_on_their_per_item_correctness(tmp_path):
    import html

    from vqalib.compendium import score, scorecard_files
    from vqalib.compendium.leaderboard_files import page_body
    from vqalib.papers.afgv.question_sets import tier_items

    items = tier_items(question_set="VizWiz-LF")
    for name, every in (("Often right", 2), ("Seldom right", 5)):  # the reference on every 2nd or 5th item
        answers = [r if k % every == 0 else "something else" for k, r in enumerate(items["reference"])]
        path = tmp_path / f"{name}.csv"
        pd.DataFrame({"question_id": items["question_id"], "tier": items["tier"], "answer": answers}).to_csv(path,
                                                                                                             index=False)
        scorecard_files.write(score.score([path], dataset="afgv", model=name), tmp_path / "scores" / name)
    board = leaderboard.leaderboard("afgv", scores_dir=tmp_path / "scores")
    table = board["table"]
    assert set(table["reference"]) == {f"{t}, VizWiz-LF" for t in ("baseline", "simplified", "complex")}
    for _, part in table.groupby("reference"):
        assert list(part["model"]) == ["Often right", "Seldom right"] and list(part["tier"]) == ["1", "2"]
    assert len(board["pairs"]) == 3 and board["pairs"]["distinguishable"].all()
    assert leaderboard.AFGV_NOT_RUN[:20] not in page_body({"afgv": table})
    assert leaderboard.leaderboard("afgv")["table"].empty
    assert html.escape(leaderboard.AFGV_NOT_RUN) in page_body({})  # no scorecard: the page says why and how to add one


def test_a_scorecard_without_per_question_scores_is_listed_not_tested(tmp_path):
    import json
    import shutil

    folder = tmp_path / "scores" / "old"
    shutil.copytree(project_root() / "scores" / "llava-released", folder)
    card = json.loads((folder / "scorecard.json").read_text())
    card.pop("per_question", None)
    card["model"] = "LLaVA (old card)"
    (folder / "scorecard.json").write_text(json.dumps(card))
    rows, per_question = leaderboard.scorecard_rows(folder, dataset="vizwiz-lf")
    assert per_question.empty and (rows["note"] == leaderboard.OLD_CARD).all()
    assert set(rows["metric"]) == {"ROUGE", "METEOR", "BERTScore"}  # Table 4 from its tables; nothing made up
    assert leaderboard.scorecard_rows(folder, dataset="commvqa")[0].empty


def test_a_broken_per_question_file_is_named_with_its_row_and_field(tmp_path):
    from vqalib.compendium.scorecard_files import read_per_question

    (tmp_path / "per_question.csv").write_text("metric,reference,question_id,score\nROUGE,s_r,1,0.5\nROUGE,s_r,2,\n")
    with pytest.raises(ValueError, match=r"per_question.csv: row 3: field score is not a number"):
        read_per_question(tmp_path)


def test_proportions_get_wilson_intervals_inside_0_and_1():
    from statsmodels.stats.proportion import proportion_confint

    from vqalib.papers.vizwiz_lf import leaderboard_measures as measures

    scores = [1.0] * 7 + [0.0] * 13
    frame = pd.DataFrame({"metric": [measures.ABSTENTION] * 20 + [measures.ROLE_SHARE["Misc"]] * 20,
                          "reference": "classifier labels", "model": "A", "question_id": list(range(20)) * 2,
                          "score": scores + [0.0] * 20})
    rows = leaderboard.measure_rows(frame).set_index("metric")
    low, high = proportion_confint(7, 20, alpha=1 - 0.95, method="wilson")
    assert rows.loc[measures.ABSTENTION, ["value", "ci_low", "ci_high"]].tolist() == [0.35, low, high]
    assert rows.loc[measures.ROLE_SHARE["Misc"], "ci_low"] == 0.0 and rows.loc[measures.ROLE_SHARE["Misc"],
                                                                                 "value"] == 0.0


def test_the_page_reads_without_script_and_names_every_row():
    table = pd.DataFrame({"metric": ["ROUGE"] * 3, "reference": ["s_r"] * 3, "model": ["A <b>", "B", "C"],
                          "kind": "released", "n": [10, 10, 10], "value": [0.5, 0.4, 0.1], "ci_low": [0.4, 0.3, 0.0],
                          "ci_high": [0.6, 0.5, 0.2], "tier": ["1", "1", "2"], "origin": "released", "note": ""})
    from bs4 import BeautifulSoup

    from vqalib.compendium.leaderboard_files import SCRIPT, page_html

    page = page_html({"vizwiz-lf": table})
    assert page.count('<th scope="row">') == 3 and "A &lt;b&gt;" in page
    assert "<caption>VizWiz-LF: ROUGE (s_r), best first</caption>" in page and leaderboard.RULE[:40] in page
    soup = BeautifulSoup(page, "html.parser")  # the served order is the rank order, each row with its tier
    rows = [[c.get_text() for c in tr.find_all(["td", "th"])][:3] for tr in soup.select("table.sortable tbody tr")]
    assert rows == [["1", "A <b>", "0.5000"], ["1", "B", "0.4000"], ["2", "C", "0.1000"]]
    assert [h.get_text() for h in soup.select("thead th")][:3] == ["Tier", "Model", "Estimate"]
    scripts = soup.find_all("script")  # sorting is an enhancement: one deferred local file, no inline code
    assert [(s["src"], s.has_attr("defer"), s.string) for s in scripts] == [(SCRIPT, True, None)]


def test_the_sort_script_is_package_data_and_loads_nothing_from_another_host():
    import tomllib
    from fnmatch import fnmatch

    from vqalib.compendium import leaderboard_files

    data = tomllib.loads((project_root() / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert any(fnmatch(leaderboard_files.SCRIPT, pattern) for pattern in data["vqalib.compendium"])
    text = leaderboard_files.script_text()
    assert "table.sortable" in text and "aria-sort" in text and "aria-live" in text
    assert not re.search(r"https?:|//[a-z]|import\(|fetch\(", text)  # nothing from another host


@pytest.mark.full  # every dataset's leaderboard with the committed scorecard, about 20 s
def test_the_command_writes_every_dataset_with_the_scorecards(tmp_path, capsys):
    from vqalib.compendium.cli import main

    assert main(["leaderboard", "--scores", str(project_root() / "scores"), "--out", str(tmp_path / "lb")]) == 0
    written = {p.name for p in (tmp_path / "lb").iterdir()}
    assert {"leaderboard_vizwiz-lf.csv", "leaderboard_commvqa.csv", "pairs_vizwiz-lf.csv", "index.html",
            "leaderboard.json"} <= written and "leaderboard_afgv.csv" not in written  # no AFGV scorecard
    board = pd.read_csv(tmp_path / "lb" / "leaderboard_vizwiz-lf.csv", keep_default_na=False)
    assert "LLaVA (scored again)" in set(board["model"])  # notebook 09's scorecard, paired with the released models
    pairs = pd.read_csv(tmp_path / "lb" / "pairs_vizwiz-lf.csv", keep_default_na=False)
    assert (pairs["model"] == "LLaVA (scored again)").any() or (pairs["versus"] == "LLaVA (scored again)").any()
    assert "AFGV" in (tmp_path / "lb" / "index.html").read_text()


def test_the_command_refuses_a_folder_it_did_not_write(tmp_path, capsys):
    from vqalib.compendium.cli import main

    (tmp_path / "notes.txt").write_text("mine")
    assert main(["leaderboard", "--out", str(tmp_path)]) == 1
    assert "not a leaderboard" in capsys.readouterr().err and (tmp_path / "notes.txt").exists()


def _printed(value: float) -> set[str]:
    """The 3-decimal prints of a value saved with 4 decimals (either neighbour: the figure rounds the unsaved value)."""
    return {f"{np.floor(value * 1000) / 1000:.3f}", f"{np.ceil(value * 1000) / 1000:.3f}"}


def test_each_headline_measure_has_a_committed_figure_described_from_its_table():
    from vqalib.compendium import leaderboard_figures
    from vqalib.core import registry

    for dataset, measures in leaderboard_figures.HEADLINE.items():
        board = pd.read_csv(FIGURES / f"leaderboard_{dataset}.csv", keep_default_na=False, dtype={"tier": str})
        for metric in measures:
            name = leaderboard_figures.figure_name(dataset, metric)
            assert registry.figure(name).notebook == "10_leaderboard"
            assert (FIGURES / f"{name}.png").exists() and (FIGURES / f"{name}.pdf").exists(), name
            alt = (FIGURES / f"{name}.alt.txt").read_text(encoding="utf-8")
            for r in board[board["metric"] == metric].itertuples(index=False):
                tier = f", tier {r.tier}" if r.tier else ""
                said = re.findall(re.escape(f"{r.model}{tier}: ") + r"([\d.]+) \(interval ([\d.]+) to ([\d.]+)\)", alt)
                assert any(all(x in _printed(v) for x, v in zip(numbers, (r.value, r.ci_low, r.ci_high)))
                           for numbers in said), (name, r.model, r.reference)


def _table(kinds=("released", "released", "scorecard")) -> pd.DataFrame:
    rows = []
    for reference in ("s_r", "l_r"):
        for k, (model, kind) in enumerate(zip(("A", "B", "C"), kinds)):
            rows.append({"metric": "ROUGE", "reference": reference, "model": model, "kind": kind, "n": 10,
                         "value": 0.5 - 0.1 * k, "ci_low": 0.45 - 0.1 * k, "ci_high": 0.55 - 0.1 * k,
                         "tier": str(1 + (k > 0)), "origin": "x", "note": ""})
    return pd.DataFrame(rows)


def test_a_measure_figure_labels_tiers_marks_scorecards_and_fits_the_display_width():
    import matplotlib.pyplot as plt
    from matplotlib.text import Text

    from vqalib.compendium import leaderboard_figures
    from vqalib.core.plots.style import DISPLAY_WIDTH_IN, MIN_FONT_PT

    fig = leaderboard_figures.measure_figure(_table(), dataset="vizwiz-lf", metric="ROUGE")
    try:
        assert len(fig.axes) == 2 and fig.get_size_inches()[0] <= DISPLAY_WIDTH_IN
        ticks = sorted((y, t.get_text()) for y, t in zip(fig.axes[0].get_yticks(), fig.axes[0].get_yticklabels()))
        assert [t for _, t in ticks] == ["C · tier 2", "B · tier 2", "A · tier 1"]  # bottom to top: the best on top
        legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
        assert legend == ["released model", "scorecard (vqalib score)"]
        small = [t.get_text() for t in fig.findobj(Text) if t.get_text().strip() and t.get_fontsize() < MIN_FONT_PT]
        assert small == []
    finally:
        plt.close(fig)
    with pytest.raises(ValueError, match="no rows for the measure 'METEOR'"):
        leaderboard_figures.measure_figure(_table(), dataset="vizwiz-lf", metric="METEOR")


def test_the_site_page_shows_figures_and_tables_and_is_byte_stable(tmp_path):
    import json
    import shutil

    from bs4 import BeautifulSoup

    from vqalib.compendium import leaderboard_files

    root = tmp_path / "root"
    (root / "figures").mkdir(parents=True)
    for path in FIGURES.glob("leaderboard_*"):
        shutil.copyfile(path, root / "figures" / path.name)
    pages = []
    for n in range(2):
        out = tmp_path / f"site{n}"
        out.mkdir()
        assert leaderboard_files.site_page(root, out) == "leaderboard/index.html"
        pages.append({p.name: p.read_bytes() for p in (out / "leaderboard").iterdir()})
    assert pages[0] == pages[1] and "leaderboard_commvqa_cider.png" in pages[0]
    soup = BeautifulSoup(pages[0]["index.html"].decode(), "html.parser")
    assert "notebook 10 saved them" in soup.get_text()
    assert [s["src"] for s in soup.select("script")] == [leaderboard_files.SCRIPT]
    assert pages[0][leaderboard_files.SCRIPT].decode() == leaderboard_files.script_text()
    assert len(soup.select("table.sortable thead th")) == 8 * len(soup.select("table.sortable"))
    images = soup.select("img")
    assert len(images) == 8 and all(i["alt"] and soup.find(id=i["aria-describedby"]) for i in images)
    assert soup.select_one("caption").get_text() == "VizWiz-LF: ROUGE (s_r), best first"
    assert soup.select_one('tbody th[scope="row"]').get_text() == "Gemini"
    built = root / "build" / "leaderboard"  # what `make html` writes first: shown instead, scorecards named
    shutil.copytree(root / "figures", built)
    (built / "leaderboard.json").write_text(json.dumps({"format": leaderboard_files.FORMAT, "scorecards": ["Mine"]}))
    out = tmp_path / "site-built"
    out.mkdir()
    leaderboard_files.site_page(root, out)
    assert "1 scorecard from scores/ (Mine)" in BeautifulSoup((out / "leaderboard" / "index.html").read_text(),
                                                              "html.parser").get_text()


# --- scorecards read as hostile input: each test breaks one thing of a copy of the committed scorecard -------------

CARD = project_root() / "scores" / "llava-released"
VIZWIZ_IDS = frozenset(range(1, 601))


def _copy_card(tmp_path, name: str = "card"):
    """The committed scorecard copied to ``tmp_path/scores/<name>``."""
    import shutil

    folder = tmp_path / "scores" / name
    shutil.copytree(CARD, folder)
    return folder


def _edit(folder, change) -> None:
    import json

    path = folder / "scorecard.json"
    card = json.loads(path.read_text())
    change(card)
    path.write_text(json.dumps(card))


def _refused(folder, match: str, *, dataset: str = "vizwiz-lf") -> str:
    """``scorecard_rows`` stops with one error naming the folder, the file and ``match``, and saying how to fix it."""
    from vqalib.compendium.scorecard_schema import ScorecardError

    with pytest.raises(ScorecardError, match=match) as caught:
        leaderboard.scorecard_rows(folder, dataset=dataset, question_ids=VIZWIZ_IDS)
    message = str(caught.value)
    assert f"scorecard {folder}" in message and "score the answers again" in message and "out of the" in message
    return message


def test_the_committed_scorecard_passes_every_check():
    from vqalib.compendium import scorecard_files

    card = scorecard_files.read_card(CARD)
    scores = scorecard_files.read_per_question(CARD, card=card)  # the dataset's ids, read from the data
    assert len(scores) == card["per_question"]["rows"] and scores["score"].notna().all()
    assert scorecard_folders(CARD.parent) == [CARD] and len(leaderboard.scorecard_rows(CARD, dataset="commvqa")) == 2
    assert scorecard_files.read(CARD)[0].model == "LLaVA (scored again)"


def _set(stem: str, k: int, field: str, value):
    return lambda card: card["tables"][stem][k].__setitem__(field, value)


TABLE4 = "vizwiz-lf_table04_full_set_bootstrap"


@pytest.mark.parametrize("change, match", [
    (lambda c: c.pop("tables"), r"scorecard\.json: field tables: is null, expected an object"),
    (_set(TABLE4, 1, "value", "0.5"), rf"field tables\['{TABLE4}'\]\[1\]\['value'\]: is a string, expected a number"),
    (_set(TABLE4, 1, "n", None), rf"field tables\['{TABLE4}'\]\[1\]\['n'\]: is null"),
    (_set(TABLE4, 1, "n", -3), r"\['n'\]: is -3, expected a whole number"),
    (_set(TABLE4, 1, "value", float("nan")), r"\['value'\]: NaN is not a number a scorecard holds"),
    (lambda c: c.update(dataset="commvqa"),  # a VizWiz-LF card relabelled
     r"field tables\['vizwiz-lf_table01_word_counts'\]: not a table of a commvqa scorecard"),
    (lambda c: c.update(dataset="vqav2"), r"field dataset: 'vqav2' is not a dataset vqalib scores"),
    (lambda c: c["tables"].update({"../../../../etc/secret": []}), r"not a table of a vizwiz-lf scorecard"),
    (lambda c: c.update(model="  "), r"field model: expected the model's name"),
    (lambda c: c.update(format="other/1"), r"field format: 'other/1' is not 'vqalib-scorecard/1'"),
    (lambda c: c["source"].update(format="<b>x</b>"), r"field source\['format'\]: '<b>x</b>' is not an answers format"),
    (lambda c: c.update(coverage="all"), r"field coverage: is a string, expected an object"),
    (lambda c: c["coverage"].update(aliased=[3]), r"field coverage\['aliased'\]: is an array, expected an object"),
    (lambda c: c["tables"].pop(TABLE4), rf"field tables\['{TABLE4}'\]: missing or empty"),
    (lambda c: c.update(per_question={"file": "../x.csv", "rows": 1}), r"field per_question: expected"),
], ids=["no-tables", "string-value", "null-n", "negative-n", "nan", "relabelled", "unknown-dataset", "table-path",
        "blank-model", "format-tag", "source-format", "coverage", "aliased", "no-table4", "per-question-file"])
def test_a_bad_scorecard_json_field_is_named(tmp_path, change, match):
    folder = _copy_card(tmp_path)
    _edit(folder, change)
    _refused(folder, match)
    _refused(folder, match, dataset="commvqa")  # checked whatever the dataset ranked: never silently skipped


@pytest.mark.parametrize("text, match", [
    ('{"model": "x",', r"scorecard\.json: line 1, column 15: malformed JSON"),
    ("[1, 2]", r"scorecard\.json: top level: is an array, expected a JSON object"),
    ('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", r"scorecard\.json: line 1: JSON nested 100,001 levels deep"),
    ('{"model": "\xff"}', r"scorecard\.json: byte 11: not UTF-8 text"),
], ids=["malformed", "array", "deep", "not-utf8"])
def test_a_scorecard_json_that_is_not_one_is_named_without_a_traceback(tmp_path, text, match):
    folder = _copy_card(tmp_path)
    (folder / "scorecard.json").write_bytes(text.encode("latin-1"))
    _refused(folder, match)


def test_numbers_out_of_range_in_a_scorecard_are_named_with_their_field(tmp_path):
    folder = _copy_card(tmp_path)
    text = (folder / "scorecard.json").read_text()
    (folder / "scorecard.json").write_text(text.replace('"n": 600.0', '"n": ' + "9" * 400, 1))
    _refused(folder, rf"field tables\['{TABLE4}'\]\[0\]\['n'\]: a whole number of 400 digits")
    (folder / "scorecard.json").write_text(text.replace('"value": 0.0854558466', '"value": 1e400', 1))
    _refused(folder, rf"\[1\]\['value'\]: 1e400 is out of range")


def test_special_linked_and_oversized_scorecard_files_are_refused_before_reading(tmp_path, monkeypatch):
    import os
    import time

    folder = _copy_card(tmp_path)
    card = folder / "scorecard.json"
    card.unlink()
    os.mkfifo(card)  # a pipe without a writer: refused at once, never waited on
    start = time.monotonic()
    _refused(folder, r"scorecard\.json: the file: is a named pipe \(FIFO\), not a regular file")
    assert time.monotonic() - start < 1
    card.unlink()
    card.symlink_to("/etc/hostname")
    _refused(folder, r"scorecard\.json: the file: is a symbolic link \(to /etc/hostname\)")
    card.unlink()
    with open(card, "wb") as sparse:  # 2 GiB on paper, no disk: refused by its size, not read
        sparse.truncate(2 << 30)
    _refused(folder, r"scorecard\.json: the file: 2,147,483,648 bytes, over the limit of 67,108,864 .*"
                     r"VQALIB_MAX_SCORECARD_BYTES")
    card.unlink()
    (folder / "per_question.csv").unlink()
    with open(folder / "per_question.csv", "wb") as sparse:
        sparse.truncate(2 << 30)
    card.write_bytes((CARD / "scorecard.json").read_bytes())
    _refused(folder, r"per_question\.csv: the file: 2,147,483,648 bytes, over the limit")
    (folder / "per_question.csv").unlink()
    os.mkfifo(folder / "per_question.csv")
    _refused(folder, r"per_question\.csv: the file: is a named pipe")
    monkeypatch.setenv("VQALIB_MAX_SCORECARD_BYTES", "1000")
    _refused(folder, r"scorecard\.json: the file: 58,739 bytes, over the limit of 1,000")


def _lines(folder) -> list[str]:
    return (folder / "per_question.csv").read_text().splitlines()


def _write_lines(folder, lines: list[str]) -> None:
    (folder / "per_question.csv").write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("change, match", [
    (lambda ls: ls.__setitem__(1, "answer words,,1,inf"), r"per_question\.csv: row 2: field score is not a finite "
                                                            r"number \('inf'\)"),
    (lambda ls: ls.__setitem__(2, ls[1]), r"per_question\.csv: rows 2 and 3: question 1 is scored twice on metric "
                                          r"'answer words'"),
    (lambda ls: ls.__setitem__(1, "answer words,,2983,1.0"), r"row 2: field question_id 2983 is not a question of "
                                                             r"vizwiz-lf \(600 questions"),
    (lambda ls: ls.__setitem__(1, "answer words,," + "9" * 400 + ",1.0"), r"row 2: field question_id is not a question "
                                                                         r"id"),
    (lambda ls: ls.__setitem__(1, "<script>alert(1)</script>,,1,1.0"), r"row 2: field metric is not a measure of a "
                                                                       r"vizwiz-lf scorecard"),
    (lambda ls: ls.__setitem__(1, "ROUGE,../x,1,1.0"), r"row 2: field reference is not a measure"),
    (lambda ls: ls.pop(), r"per_question\.csv: top level: 10,199 rows, but scorecard.json's per_question says "
                          r"10,200"),
    (lambda ls: ls.__setitem__(0, "metric,reference,question_id,score,extra"), r"line 1 \(header\): column 'extra'"),
], ids=["inf", "duplicate", "other-dataset-id", "400-digit-id", "markup-metric", "unknown-reference", "cut-short",
        "extra-column"])
def test_a_bad_per_question_row_is_named_with_its_row_and_field(tmp_path, change, match):
    folder = _copy_card(tmp_path)
    lines = _lines(folder)
    change(lines)
    _write_lines(folder, lines)
    _refused(folder, match)


def test_every_row_given_twice_is_refused_not_counted_twice(tmp_path):
    folder = _copy_card(tmp_path)
    lines = _lines(folder)
    _write_lines(folder, lines + lines[1:])  # n = 1200 on a 600-question dataset before
    _edit(folder, lambda c: c["per_question"].update(rows=2 * (len(lines) - 1)))
    _refused(folder, r"rows 2 and 10202: question 1 is scored twice")


def test_a_scorecard_without_per_question_scores_still_passes(tmp_path):
    folder = _copy_card(tmp_path)
    _edit(folder, lambda c: c.pop("per_question"))
    (folder / "per_question.csv").unlink()
    rows, scores = leaderboard.scorecard_rows(folder, dataset="vizwiz-lf", question_ids=VIZWIZ_IDS)
    assert scores.empty and (rows["note"] == leaderboard.OLD_CARD).all()


def test_the_leaderboard_stops_on_any_bad_scorecard_before_the_work(tmp_path, capsys):
    import os
    import time

    from vqalib.compendium.cli import main
    from vqalib.compendium.scorecard_schema import ScorecardError

    good = _copy_card(tmp_path, "good")
    bad = _copy_card(tmp_path, "bad")
    _edit(bad, lambda c: c.update(dataset="commvqa"))
    with pytest.raises(ScorecardError, match=r"bad: scorecard\.json"):
        leaderboard.leaderboard("afgv", scores_dir=tmp_path / "scores")  # AFGV ranks neither: both checked
    (bad / "scorecard.json").unlink()
    os.mkfifo(bad / "scorecard.json")
    start = time.monotonic()  # before any released model is scored: no model work, no wait on the pipe
    assert main(["leaderboard", "--scores", str(tmp_path / "scores"), "--out", str(tmp_path / "lb")]) == 1
    err = capsys.readouterr().err
    assert time.monotonic() - start < 5 and "Traceback" not in err and not (tmp_path / "lb").exists()
    assert err.startswith(f"error: scorecard {bad}: scorecard.json: the file: is a named pipe") and err.count("\n") == 1
    assert scorecard_folders(good.parent / "..") == []  # a folder of folders without scorecards: none
    assert main(["leaderboard", "--scores", str(tmp_path / "missing"), "--out", str(tmp_path / "lb")]) == 1
    assert "missing: no such folder; give the folder that holds the scorecard folders" in capsys.readouterr().err
    (tmp_path / "linked").symlink_to(good)
    with pytest.raises(ScorecardError, match=r"linked: the folder is a symbolic link"):
        scorecard_folders(tmp_path)


def test_text_from_a_scorecard_lands_as_text_in_the_leaderboard_files(tmp_path):
    import csv
    import io

    from vqalib.compendium.leaderboard_files import _table_files, page_html
    from vqalib.core.escaping import csv_formula_unquoted

    hostile = ('=HYPERLINK("http://x")<script>alert(1)</script><img src=x onerror=alert(1)> [c](javascript:alert(1)) '
               "|\nx")
    folder = _copy_card(tmp_path)
    _edit(folder, lambda c: (c.update(model=hostile), c["source"].update(path="@SUM(1)<b>.csv")))
    rows, _ = leaderboard.scorecard_rows(folder, dataset="vizwiz-lf", question_ids=VIZWIZ_IDS)
    table = rows.assign(tier="1")[leaderboard.COLUMNS]
    pairs = pd.DataFrame({"metric": ["ROUGE"], "reference": ["s_r"], "model": [hostile], "versus": ["-1+1"],
                          "n": [600], "difference": [-0.1], "p": [0.01], "note": ["+cmd|x"]})
    for frame in (table, pairs):
        csv_bytes, md_bytes = _table_files(frame, "VizWiz-LF leaderboard")
        md = md_bytes.decode()
        assert not any(raw in md for raw in ("<script", "<img", "<b>", "[c](javascript"))
        body = [line for line in md.splitlines() if line.startswith("|")]
        cells = [len(re.findall(r"(?<!\\)\|", line)) for line in body]  # unescaped bars: no forged cell or line
        assert len(body) == len(frame) + 2 and cells == [len(frame.columns) + 1] * len(body)
        cells = [cell for record in csv.reader(io.StringIO(csv_bytes.decode())) for cell in record]
        text = [cell for cell in cells if not re.fullmatch(r"-?[0-9.]+(e-?[0-9]+)?", cell)]  # a negative stays a number
        assert (frame is table or "-0.1" in cells) and not any(cell.startswith(("=", "+", "-", "@")) for cell in text)
        back = csv_formula_unquoted(pd.read_csv(io.BytesIO(csv_bytes), keep_default_na=False))
        assert (back["model"] == hostile).all()  # read back: the name as given
    assert "@SUM(1)<b>.csv" in table["origin"].iloc[0]
    page = page_html({"vizwiz-lf": table})
    assert "<script>alert" not in page and "<img src=x" not in page and "&lt;script&gt;" in page
