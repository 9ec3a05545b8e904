"""A scorecard page (vqalib.compendium.scorecard_page) opens with a verdict whose every number is one of the
scorecard's saved values (vqalib.compendium.scorecard_verdict); p-values print as "< 0.0001"; the comparisons of a
model with its own released answers are marked; the tables name the model once and fit beside the released models."""

import re

import numpy as np
import pandas as pd
import pytest
from bs4 import BeautifulSoup

from vqalib.compendium import scorecard_files, scorecard_page, scorecard_verdict, site_html
from vqalib.compendium.score import Scorecard
from vqalib.core.inference import p_value_text
from vqalib.core.io import project_root
from vqalib.papers.vizwiz_lf import scorecard as vizwiz

ROOT = project_root()
FOLDER = ROOT / "scores" / "llava-released"
NUMBER = re.compile(r"[+−-]?\d+\.\d{4}")


@pytest.fixture
def saved():
    card, besides, figure = scorecard_files.read(FOLDER)
    if "round_trip" not in card.tables:  # written before the round trip joined the scorecard: notebook 09's table
        card.tables["round_trip"] = pd.read_csv(ROOT / "figures" / "vizwiz-lf_score_round_trip.csv")
    return card, besides, figure


def _plain(text: str) -> str:
    return text.replace("−", "-").lstrip("+")


def _saved_values(card) -> set[str]:
    values = set()
    for frame in card.tables.values():
        for column in frame.columns:
            values |= {f"{v:.4f}" for v in pd.to_numeric(frame[column], errors="coerce").dropna()}
    return values | {"0.0000"}


def _signed(value: float) -> str:
    text = f"{value:.4f}".replace("-", "−")
    return text if text.startswith("−") or text == "0.0000" else "+" + text


def _setting(row) -> str:
    if pd.isna(row.reference):
        return row.metric
    return f"{row.metric} ({row.reference}, {'l_c′' if row.candidate == 'l_c_prime' else row.candidate})"


def test_every_number_of_the_verdict_is_a_saved_value(saved):
    card, _, _ = saved
    text = scorecard_verdict.verdict_text(card)
    found = {_plain(n) for n in NUMBER.findall(text)}
    assert found and found <= _saved_values(card), sorted(found - _saved_values(card))
    coverage = card.coverage
    assert f"scored on {coverage['matched']} of {coverage['questions']} vizwiz-lf questions" in text
    full = card.tables["vizwiz-lf_table04_full_set_bootstrap"]
    for r in full[(full["candidate"] != "l_c_prime") & full["value"].notna()].itertuples():  # the headline
        assert f"{r.value:.4f} (95% CI {r.ci_low:.4f} to {r.ci_high:.4f})" in text, (r.metric, r.reference)
    assert "GPT-4 (LAVE): not run: no LLM judge configured" in text
    counts = vizwiz.round_trip_summary(card.tables["round_trip"])
    assert counts == {"equal": 14, "n": 14}
    assert (f"Round trip: these are LLaVA's released answers given back, and {counts['equal']} of {counts['n']} cells "
            "equal LLaVA's numbers in figures/") in text


def test_each_comparison_says_higher_lower_or_not_distinguishable_from_its_interval(saved):
    card, _, _ = saved
    lines = scorecard_verdict.verdict_text(card).splitlines()
    diffs = card.tables["paired_differences"]
    for versus, rows in diffs.groupby("versus", sort=False):
        item = next(line for line in lines if line.startswith(f"- {versus} ("))
        if versus == "LLaVA":  # its own released answers
            primed = rows[rows["candidate"] == "l_c_prime"]["difference"]
            assert "self-comparison" in item and "nothing to test" in item and "classifier's sentence labels" in item
            assert f"{_signed(primed.min())} to {_signed(primed.max())}" in item
            continue
        for r in rows.itertuples():
            head = ("higher than" if r.ci_low > 0 else "lower than" if r.ci_high < 0 else "not distinguishable from")
            pattern = rf"{head} {re.escape(versus)} on (?:(?!than |from )[^;])*?{re.escape(_setting(r))} "
            assert re.search(pattern + re.escape(_signed(r.difference)), item), (versus, _setting(r), head)


def test_the_classifier_paragraph_reads_classifier_error_and_labelled_by(saved):
    card, _, _ = saved
    text = scorecard_verdict.verdict_text(card)
    error = card.tables["classifier_error"]
    for r in error[error["label"] == "Average"].itertuples():
        assert f"{r.table} average F1 {r.value:.4f} (95% CI {r.ci_low:.4f} to {r.ci_high:.4f})" in text
    agreement = error[error["measure"].str.startswith("agreement")].set_index("source")["value"]
    assert (f"from {agreement.min():.4f} ({agreement.idxmin()}) to {agreement.max():.4f} ({agreement.idxmax()})"
            in text)
    by = card.tables["labelled_by"].set_index("labelled_by")["answers"]
    assert f"{by.sum()} of {by.sum()} answers equal a released answer" in text  # every answer is LLaVA's
    assert f"Numbers that rest on the offline classifier's labels ({error['classifier'].iloc[0]})" in text


def test_a_new_model_has_no_round_trip_and_no_self_comparison(saved):
    card, _, _ = saved
    diffs = card.tables["paired_differences"]
    tables = {k: v for k, v in card.tables.items() if k != "round_trip"}
    tables["paired_differences"] = diffs[diffs["versus"] != "LLaVA"]
    new = Scorecard(model="New model", dataset="vizwiz-lf", sources=card.sources, coverage=card.coverage,
                    tables=tables)
    text = scorecard_verdict.verdict_text(new)
    assert "Round trip" not in text and "self-comparison" not in text
    assert "higher than GPT-4V on" in text and "- LLaVA (" not in text
    assert vizwiz.same_answer_sources(tables["paired_differences"]) == []
    assert (vizwiz.with_notes(tables["paired_differences"])["note"] == "").all()
    no_compare = Scorecard(model="M", dataset="vizwiz-lf", sources=card.sources, coverage=card.coverage,
                           tables={k: v for k, v in tables.items() if k != "paired_differences"})
    assert "No paired comparison with the released models" in scorecard_verdict.verdict_text(no_compare)


def test_p_values_print_four_decimals_or_below_the_floor():
    assert [p_value_text(p) for p in (2.2e-13, 9.99e-5, 1e-4, 0.59006, 1.0, np.nan, None)] == [
        "< 0.0001", "< 0.0001", "0.0001", "0.5901", "1.0000", "", ""]
    frame = pd.DataFrame({"versus": ["a", "b", "c"], "wilcoxon_p": [4.3e-39, 0.00013148, np.nan],
                          "p": [0.0, 1.0, 0.5], "difference": [0.1, 0.2, 0.0]})
    soup = BeautifulSoup(site_html.html_table(frame, caption="T", row_headers=["versus"], decimals=4, table_id="t"),
                         "html.parser")
    cells = [[td.get_text() for td in tr.find_all("td")] for tr in soup.tbody.find_all("tr")]
    assert [c[0] for c in cells] == ["< 0.0001", "0.0001", ""] and [c[1] for c in cells] == [
        "< 0.0001", "1.0000", "0.5000"]  # a p of 0 or 1 is no whole number
    markdown = scorecard_files._markdown(frame)
    assert "| < 0.0001 " in markdown and "0.0000" not in markdown.split("\n")[2].split("|")[2]


def test_the_page_marks_self_comparisons_and_prints_p_and_names_the_model_once(saved):
    card, besides, figure = saved
    soup = BeautifulSoup(scorecard_page.page_html(card, besides, figure=figure), "html.parser")
    assert soup.main.find("section").h2.get_text() == "Verdict"  # the page opens with the verdict
    diffs = vizwiz.with_notes(card.tables["paired_differences"])
    table = next(t for t in soup.find_all("table") if t.caption.get_text().startswith("This model minus"))
    heads = [th.get_text(" ") for th in table.thead.find_all("th")]
    assert heads[0] == "versus" and "model" not in heads and heads[-1] == "note"
    rows = table.tbody.find_all("tr")
    assert len(rows) == len(diffs)
    p_column = next(k for k, h in enumerate(heads) if h.startswith("wilcoxon_p"))
    for tr, r in zip(rows, diffs.itertuples()):
        cells = [c.get_text() for c in tr.find_all(["th", "td"])]
        assert cells[p_column] == p_value_text(r.wilcoxon_p) and cells[p_column] != "0.0000"
        if pd.isna(r.wilcoxon_p):
            assert cells[-1] == vizwiz.SELF_NOTE and r.versus == "LLaVA"
        elif r.versus == "LLaVA":
            assert cells[-1] == vizwiz.SELF_LABELS_NOTE and r.candidate == "l_c_prime"
    assert "the released model whose answers these are" in table.find_previous("p").get_text()
    for t in soup.find_all("table"):  # the model's name: once, in the caption or one column header
        assert not any(td.get_text() == card.model for td in t.tbody.find_all(["td", "th"])), t.caption.get_text()
    released, paper = (soup.find(id="t0b"), soup.find(id="t0bp"))  # beside the released models, then the paper
    assert not any(th.get_text().startswith("paper: ") for th in released.thead.find_all("th"))
    assert [th.get_text() for th in paper.thead.find_all("th")][2] == card.model
    assert "Every row: labels from the selected offline classifier" in soup.get_text()


def test_a_released_models_answers_give_the_round_trip_from_the_saved_tables(saved):
    card, _, _ = saved
    diffs = card.tables["paired_differences"]
    assert vizwiz.same_answer_sources(diffs) == ["LLaVA"]
    mine = vizwiz.round_trip({k: v for k, v in card.tables.items() if k != "round_trip"}, source="LLaVA")
    figures = pd.read_csv(ROOT / "figures" / "vizwiz-lf_score_round_trip.csv")
    assert mine["equal_4dp"].all() and mine[["table", "cell"]].equals(figures[["table", "cell"]])
    assert np.allclose(mine["scored"].round(4), figures["scored"])


def test_commvqa_and_afgv_verdicts_read_their_tables():
    bench = pd.DataFrame({"model": "M", "condition": ["baseline", "contextual"], "metric": "BLEU-1",
                          "protocol": "corrected", "value": [0.4026, 0.4443], "ci_low": [0.39, 0.43],
                          "ci_high": [0.41, 0.46]})
    effect = pd.DataFrame({"model": "M", "metric": ["BLEU-1", "CIDEr"], "difference": [0.0418, -0.01],
                           "ci_low": [0.0205, -0.03], "ci_high": [0.0622, 0.01]})
    card = Scorecard(model="M", dataset="commvqa", sources=[], coverage={"dataset": "commvqa"},
                     tables={"commvqa_table01_benchmark": bench, "commvqa_table01_context_effect": effect})
    text = scorecard_verdict.verdict_text(card)
    assert "baseline: BLEU-1 0.4026 (95% CI 0.3900 to 0.4100)" in text
    assert ("contextual higher than baseline on BLEU-1 +0.0418; not distinguishable from baseline on CIDEr −0.0100"
            in text)
    tiers = pd.DataFrame({"tier": ["baseline", "T1"], "accuracy": [0.5, 0.25], "ci95_low": [0.4, 0.2],
                          "ci95_high": [0.6, 0.3]})
    card = Scorecard(model="M", dataset="afgv", sources=[], coverage={"dataset": "afgv"},
                     tables={"afgv_tier_accuracy_predictions": tiers})
    assert "baseline 0.5000 (95% CI 0.4000 to 0.6000); T1 0.2500" in scorecard_verdict.verdict_text(card)
