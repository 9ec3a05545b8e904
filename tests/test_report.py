import base64
import re

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from vqalib.core import figure_files, registry, report


@pytest.fixture
def paper_dir(tmp_path):
    (tmp_path / "t.csv").write_text("source,role,answerability,percent,note\nA,x,all,50,\nA,y,all,6,typo?\n"
                                    "B,x,all,12.5,\nB,y,all,,no cell\n")
    (tmp_path / "w.csv").write_text("category,dataset,column,mean_words,sd_words\nTotal,VizWiz-LF,Human,41.2,34.0\n"
                                    "Total,VizWiz-LF,QWEN,22.0,\n")
    (tmp_path / "known_differences.csv").write_text("table,cell,explanation\ntable02,A | y | all,printed 6 is probably 16\n")
    return tmp_path


def test_load_paper_table_keeps_printed_precision(paper_dir):
    t = report.load_paper_table("t", value="percent", directory=paper_dir)
    assert t["paper"].tolist()[:3] == [50.0, 6.0, 12.5]
    assert pd.isna(t["paper"].iloc[3])
    assert t["paper_decimals"].tolist() == [0, 0, 1, 0]
    assert "percent" not in t.columns and "note" in t.columns


def test_load_paper_table_long_drops_empty_cells(paper_dir):
    t = report.load_paper_table("w", value=["mean_words", "sd_words"], directory=paper_dir)
    assert t[["column", "statistic", "paper"]].values.tolist() == [
        ["Human", "mean_words", 41.2], ["Human", "sd_words", 34.0], ["QWEN", "mean_words", 22.0]]


def test_load_paper_table_names_a_missing_column(paper_dir):
    with pytest.raises(KeyError, match="no column"):
        report.load_paper_table("t", value="share", directory=paper_dir)


TABLE2 = "vizwiz-lf_table02_roles_by_answerability"  # a registry entry: 1 unit of the last printed digit


def test_compare_as_the_registry_declares(paper_dir):
    paper = report.load_paper_table("t", value="percent", directory=paper_dir)
    ours = pd.DataFrame({"source": ["A", "A", "B", "C"], "role": ["x", "y", "x", "x"], "answerability": "all",
                         "percent": [50.4, 15.9, 12.64, 3.0], "n": [10, 10, 8, 1]})
    c = report.compare(ours, TABLE2, value="percent", paper=paper)
    assert list(c.columns) == ["source", "role", "answerability", "note", "n", "relation", "reproduced", "paper",
                               "diff", "tolerance", "within_tolerance"]
    rows = c.set_index(["source", "role"])
    # column x prints 12.5, so its "50" is judged at one decimal (a dropped ".0"): 50.4 is 0.4 away, not 0
    assert rows.loc[("A", "x"), "diff"] == pytest.approx(0.4)
    assert not rows.loc[("A", "x"), "within_tolerance"] and rows.loc[("A", "x"), "tolerance"] == pytest.approx(0.1)
    assert rows.loc[("A", "y"), "diff"] == pytest.approx(10.0)
    assert not rows.loc[("A", "y"), "within_tolerance"]
    assert rows.loc[("B", "x"), "diff"] == pytest.approx(0.1)  # 12.64 -> 12.6 at one decimal
    assert rows.loc[("B", "x"), "tolerance"] == pytest.approx(0.1)  # one unit of the printed 12.5
    assert pd.isna(rows.loc[("C", "x"), "paper"]) and pd.isna(rows.loc[("C", "x"), "within_tolerance"])
    assert pd.isna(rows.loc[("B", "y"), "reproduced"])  # a paper row we do not reproduce is kept
    s = report.agreement_summary(c)
    assert s == {"compared": 3, "within": 1, "outside": 2, "only_reproduced": 1, "only_paper": 0,
                 "analogous": 0, "fitted": 0, "self-input": 0, "fitted_within": 0}
    assert report.agreement_text(c, TABLE2).startswith("VizWiz-LF Table 2: 1 of 3 cells within tolerance")


def test_compare_keeps_conflicting_paper_columns(paper_dir):
    paper = report.load_paper_table("t", value="percent", directory=paper_dir)
    ours = pd.DataFrame({"source": ["A"], "role": ["x"], "answerability": ["all"], "percent": [50.0], "note": ["ours"]})
    c = report.compare(ours, TABLE2, value="percent", paper=paper)
    assert {"paper_note", "note"} <= set(c.columns)


def test_tolerance_boundary_counts_as_within(paper_dir):
    paper = report.load_paper_table("w", value=["mean_words", "sd_words"], directory=paper_dir)
    ours = pd.DataFrame({"category": ["Total"], "dataset": ["VizWiz-LF"], "column": ["Human"],
                         "statistic": ["sd_words"], "v": [34.13]})
    c = report.compare(ours, "vizwiz-lf_table01_word_counts", value="v", paper=paper)
    assert c.dropna(subset=["within_tolerance"])["within_tolerance"].tolist() == [True]
    ours["v"] = 34.16
    c = report.compare(ours, "vizwiz-lf_table01_word_counts", value="v", paper=paper)
    assert c.dropna(subset=["within_tolerance"])["within_tolerance"].tolist() == [False]


def test_outside_tolerance_with_known_reasons(paper_dir):
    paper = report.load_paper_table("t", value="percent", directory=paper_dir)
    ours = pd.DataFrame({"source": ["A", "B"], "role": ["y", "x"], "answerability": "all", "percent": [16.0, 20.0]})
    c = report.compare(ours, TABLE2, value="percent", paper=paper)
    off = report.outside(c, TABLE2, known=report.load_known_differences(paper_dir))
    assert off.set_index("cell")["explanation"].to_dict() == {"A | y | all": "printed 6 is probably 16",
                                                             "B | x | all": report.NOT_EXPLAINED}
    none = report.outside(c[c["source"] == "C"], TABLE2, known=report.load_known_differences(paper_dir))
    assert none.empty


def test_every_known_difference_names_a_registered_table():
    """Each explanation is keyed by the ``known`` id of a registry entry, which notebooks list through report.outside."""

    known = report.load_known_differences()
    ids = {spec.known for spec in registry.TABLES.values() if spec.known}
    assert set(known["table"]) <= ids, set(known["table"]) - ids
    assert known["explanation"].str.len().gt(20).all()


def test_wide_keeps_order():
    c = pd.DataFrame({"source": ["Z", "Z", "A", "A"], "label": ["b", "a", "b", "a"], "reproduced": [1.0, 2.0, 3.0, 4.0]})
    w = report.wide(c, index="source", columns="label")
    assert list(w.index) == ["Z", "A"] and list(w.columns) == ["b", "a"]
    assert w.loc["A", "a"] == 4.0


def test_save_is_byte_identical_across_runs(tmp_path):
    frame = pd.DataFrame({"k": ["a", "b"], "v": [1 / 3, 2.0], "ok": pd.array([True, pd.NA], dtype="boolean")})
    name = "vizwiz-lf_answerability_agreement"
    report.save(frame, name, title="X", directory=tmp_path / "1")
    report.save(frame.copy(), name, title="X", directory=tmp_path / "2")
    for ext in ("csv", "md"):
        assert (tmp_path / "1" / f"{name}.{ext}").read_bytes() == (tmp_path / "2" / f"{name}.{ext}").read_bytes()
    assert (tmp_path / "1" / f"{name}.csv").read_text() == "k,v,ok\na,0.3333,True\nb,2.0000,\n"
    assert (tmp_path / "1" / f"{name}.md").read_text().startswith("# X\n")
    with pytest.raises(KeyError, match="not in vqalib.core.registry"):
        report.save(frame, "an_unregistered_table", directory=tmp_path)


def test_save_keeps_a_file_whose_model_derived_values_moved_within_tolerance(tmp_path, monkeypatch):
    """Another CPU's last-digit noise leaves the committed file as it is; anything else rewrites it, and so
    does any change on the machine that made the committed figures (there it can only be the code's)."""
    from vqalib.core import contract, saved_by

    name = "commvqa_fig04_description_similarity"
    tol = registry.table(name).model_derived.tolerance("mean")
    frame = pd.DataFrame({"source": ["Human"], "condition": ["human"], "n_answers": [10], "missing_answers": [0],
                          "mean": [0.5], "sd": [0.1], "ci_low": [0.4], "ci_high": [0.6]})
    saved = report.save(frame, name, directory=tmp_path)
    assert saved.outcome == "written" and repr(saved) == f"Saved('{name}.csv', 'written')"
    path, committed = saved.path, saved.path.read_bytes()
    assert report.save(frame, name, directory=tmp_path).outcome == "unchanged"
    log = tmp_path / "saves.jsonl"
    monkeypatch.setenv(saved_by.LOG_ENV, str(log))  # as `vqalib reproduce` sets it for a kernel
    assert report.save(frame.assign(mean=0.5 + 0.9 * tol), name, directory=tmp_path).outcome == "kept"
    assert path.read_bytes() == committed
    assert saved_by.logged() == [{"file": f"{name}.csv", "cell": None, "outcome": "kept", "cells": 1,
                                  "largest": pytest.approx(tol)}]
    monkeypatch.delenv(saved_by.LOG_ENV)
    monkeypatch.setenv(report.REWRITE_ENV, "1")
    assert report.save(frame.assign(mean=0.5 + 0.9 * tol), name, directory=tmp_path).outcome == "written"
    assert path.read_bytes() != committed
    monkeypatch.delenv(report.REWRITE_ENV)
    path.write_bytes(committed)
    report.save(frame.assign(mean=0.5 + 2 * tol), name, directory=tmp_path)  # beyond tolerance: rewritten
    assert path.read_bytes() != committed
    path.write_bytes(committed)
    report.save(frame.assign(n_answers=11), name, directory=tmp_path)  # a count: exact
    assert path.read_bytes() != committed
    path.write_bytes(committed)
    contract.write_provenance(tmp_path / contract.PROVENANCE_FILE, {"machine_signature": contract.machine_signature()})
    report.save(frame.assign(mean=0.5 + 0.9 * tol), name, directory=tmp_path)  # made here: the code changed
    assert path.read_bytes() != committed


def test_a_figure_drawn_from_a_kept_table_is_kept_too(tmp_path, monkeypatch):
    """The figure must match the committed numbers: kept when this run's log says a table it is drawn from was kept."""
    from vqalib.core import saved_by

    figure_files.use_style()
    alt = "A straight line rising from the lower left to the upper right corner of the plot."
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    first = figure_files.save_figure(fig, "commvqa_fig02_pairwise_accuracy", directory=tmp_path, alt_text=alt)
    before = first.png.read_bytes()
    log = tmp_path / "saves.jsonl"
    monkeypatch.setenv(saved_by.LOG_ENV, str(log))
    for outcome, same in (("written", False), ("kept", True)):
        log.write_text(f'{{"file": "commvqa_fig02_pairwise_accuracy.csv", "cell": 3, "outcome": "{outcome}"}}\n')
        fig, ax = plt.subplots()
        ax.plot([0, 1], [1, 0])
        figure_files.save_figure(fig, "commvqa_fig02_pairwise_accuracy", directory=tmp_path, alt_text=alt)
        assert (first.png.read_bytes() == before) is same, outcome
        assert saved_by.logged()[-1] == {"file": "commvqa_fig02_pairwise_accuracy.png", "cell": None,
                                         "outcome": "kept" if same else "written"}
        before = first.png.read_bytes()


def test_check_compares_saves_and_shows_the_agreement_then_the_cells_outside(paper_dir, tmp_path):
    stem = "vizwiz-lf_table02_roles_by_answerability"
    paper = report.load_paper_table("t", value="percent", directory=paper_dir)
    ours = pd.DataFrame({"source": ["A", "A", "B"], "role": ["x", "y", "x"], "answerability": "all",
                         "percent": [50.0, 16.0, 12.5]})
    checked = report.check(ours, stem, value="percent", paper=paper, directory=tmp_path,
                           then=lambda c: c.assign(extra=1))
    assert checked.saved.outcome == "written" and "extra" in pd.read_csv(tmp_path / f"{stem}.csv")
    assert checked.agreement == report.agreement_text(checked.compared, stem)
    assert checked.outside["cell"].tolist() == ["A | y | all"]
    assert repr(checked).startswith(checked.agreement + "\n") and "A | y | all" in repr(checked)
    html = checked._repr_html_()
    assert html.startswith("<p>") and html.index("</p>") < html.index("A | y | all")
    assert html == checked._repr_html_()  # the same bytes every run: no random table id
    columns = list(checked.outside.columns)  # the text cells (cell, relation, explanation) left-aligned, not numbers
    left = {columns[int(k)] for k in re.findall(r"td\.col(\d+) \{\s*text-align: left", html)}
    assert {"cell", "relation", "explanation", "evidence"} <= left and not left & {"reproduced", "paper", "diff"}
    again = report.check(checked.compared, stem, directory=tmp_path)  # a comparison made elsewhere: saved as it is
    assert again.saved.outcome == "unchanged" and again.agreement == checked.agreement


def test_save_figure_writes_png_pdf_and_alt_text(tmp_path):
    figure_files.use_style()
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    saved = figure_files.save_figure(fig, "vizwiz-lf_reference_shift", directory=tmp_path,
                                     alt_text="A straight line rising from the lower left to the upper right corner.")
    assert saved.png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert saved.pdf.read_bytes()[:4] == b"%PDF"
    assert saved.alt_path.read_text().startswith("A straight line")
    bundle, metadata = saved._repr_mimebundle_()  # shown inline: the saved bytes, short alt, long description
    assert base64.b64decode(bundle["image/png"]) == saved.png.read_bytes()
    assert metadata["image/png"]["alt"] == figure_files.short_alt("vizwiz-lf_reference_shift") in bundle["text/html"]
    assert 'aria-describedby="vizwiz-lf_reference_shift-description"' in bundle["text/html"]
    assert 'id="vizwiz-lf_reference_shift-description">A straight line' in bundle["text/html"]
    assert str(tmp_path) not in str(bundle)
    fig, ax = plt.subplots()
    with pytest.raises(ValueError, match="alt text"):
        figure_files.save_figure(fig, "vizwiz-lf_role_mix_by_source", directory=tmp_path, alt_text="a line")
    assert repr(saved) == "SavedFigure('vizwiz-lf_reference_shift')"  # no absolute path in a notebook's output
    ax.text(0.5, 0.5, "faint", color="0.8")
    with pytest.raises(ValueError, match="contrast.*faint"):
        figure_files.save_figure(fig, "vizwiz-lf_role_mix_by_source", directory=tmp_path,
                                 alt_text="A light grey word in the middle of an otherwise empty white plot area.")
    assert not (tmp_path / "vizwiz-lf_role_mix_by_source.png").exists()
    plt.close(fig)
    (tmp_path / "line.csv").write_text("x\n")
    removed = figure_files.remove_figure("vizwiz-lf_reference_shift", directory=tmp_path)  # "not run": no stale image
    assert sorted(p.name for p in removed) == ["vizwiz-lf_reference_shift.alt.txt", "vizwiz-lf_reference_shift.pdf",
                                               "vizwiz-lf_reference_shift.png"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["line.csv"]
    assert figure_files.remove_figure("vizwiz-lf_reference_shift", directory=tmp_path) == []


def test_not_run_says_why_and_how():
    t = report.not_run("no LLM judge configured", enable="set VQALIB_JUDGE_URL")
    assert t.iloc[0]["status"] == "not run: no LLM judge configured"


def test_tolerance_per_metric_and_relations(tmp_path):
    """Table 5: rates within 2 units of their second decimal, abs-% of its integer; Random is analogous."""
    (tmp_path / "a.csv").write_text("model,method,metric,value\nX,vanilla,abs-acc,0.77\nX,vanilla,abs-%,47\n"
                                    "Random,vanilla,abs-acc,0.50\n")
    paper = report.load_paper_table("a", value="value", directory=tmp_path)
    ours = pd.DataFrame({"model": ["X", "X", "Random"], "method": "vanilla", "metric": ["abs-acc", "abs-%", "abs-acc"],
                         "value": [0.75, 45.6, 0.53]})
    c = report.compare(ours, "vizwiz-lf_table05_abstention", paper=paper)
    assert c["tolerance"].tolist() == [pytest.approx(0.02), pytest.approx(2.0), pytest.approx(0.02)]
    assert c["within_tolerance"].tolist()[:2] == [True, True] and pd.isna(c["within_tolerance"].iloc[2])
    assert c["relation"].tolist() == ["same", "same", "analogous"]
    assert report.agreement_summary(c)["analogous"] == 1 and report.agreement_summary(c)["compared"] == 2
    off = report.outside(c, "vizwiz-lf_table05_abstention", include_unjudged=True)
    assert off["cell"].tolist() == ["Random | vanilla | abs-acc"]  # shown with its reason, not counted


def test_self_input_cells_are_checked_for_consistency_not_counted(tmp_path):
    (tmp_path / "a.csv").write_text("model,tier,metric,value\nM,Baseline,accuracy,0.533\nM,Baseline,z_score,3.10\n")
    paper = report.load_paper_table("a", value="value", directory=tmp_path)
    ours = pd.DataFrame({"model": "M", "tier": "Baseline", "metric": ["accuracy", "z_score"], "value": [0.533, 3.60]})
    c = report.compare(ours, "afgv_table01_tier_accuracy", paper=paper)
    assert c["within_tolerance"].isna().all() and c["consistent"].tolist() == [True, False]
    assert report.agreement_summary(c)["compared"] == 0 and report.agreement_summary(c)["self-input"] == 2


def test_fill_not_run_replaces_only_matching_rows():
    table = pd.DataFrame({"model": ["A", "A"], "method": ["vanilla", "prompt"], "value": [0.5, None],
                          "status": [None, "not run: no runs"]})
    computed = pd.DataFrame({"model": ["A"], "method": ["prompt"], "value": [0.7]})
    out = report.fill_not_run(table, computed, keys=["model", "method"])
    assert out.set_index("method").loc["prompt", "value"] == 0.7 and len(out) == 2
    assert report.fill_not_run(table, computed.iloc[0:0], keys=["model", "method"]) is table


def test_a_figure_is_replaced_whole_or_not_at_all(tmp_path, monkeypatch):
    """A run killed or failing while drawing never leaves half an image: each file is rendered in memory first."""
    figure_files.use_style()
    alt = "A straight line rising from the lower left to the upper right corner of the plot."
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    saved = figure_files.save_figure(fig, "vizwiz-lf_reference_shift", directory=tmp_path, alt_text=alt)
    before = saved.pdf.read_bytes(), saved.png.read_bytes()
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])

    def fails(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fig, "savefig", fails)
    with pytest.raises(OSError):
        figure_files.save_figure(fig, "vizwiz-lf_reference_shift", directory=tmp_path, alt_text=alt)
    assert (saved.pdf.read_bytes(), saved.png.read_bytes()) == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
