import matplotlib.pyplot as plt
import pandas as pd
import pytest

from vqalib import report


@pytest.fixture
def paper_dir(tmp_path):
    (tmp_path / "t.csv").write_text("source,role,percent,note\nA,x,50,\nA,y,6,typo?\nB,x,12.5,\nB,y,,no cell\n")
    (tmp_path / "w.csv").write_text("category,column,mean_words,sd_words\nTotal,Human,41.2,34.0\nTotal,QWEN,22.0,\n")
    (tmp_path / "known_differences.csv").write_text("table,cell,explanation\nt,A | y,printed 6 is probably 16\n")
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


def test_compare_with_paper(paper_dir):
    paper = report.load_paper_table("t", value="percent", directory=paper_dir)
    ours = pd.DataFrame({"source": ["A", "A", "B", "C"], "role": ["x", "y", "x", "x"],
                         "percent": [50.4, 15.9, 12.64, 3.0], "n": [10, 10, 8, 1]})
    c = report.compare_with_paper(ours, paper, keys=["source", "role"], value="percent", tolerance=1.0)
    assert list(c.columns) == ["source", "role", "note", "n", "reproduced", "paper", "diff", "within_tolerance"]
    rows = c.set_index(["source", "role"])
    assert rows.loc[("A", "x"), "diff"] == 0.0  # 50.4 rounds to the printed 50
    assert rows.loc[("A", "x"), "within_tolerance"]
    assert rows.loc[("A", "y"), "diff"] == pytest.approx(10.0)
    assert not rows.loc[("A", "y"), "within_tolerance"]
    assert rows.loc[("B", "x"), "diff"] == pytest.approx(0.1)  # 12.64 -> 12.6 at one decimal
    assert pd.isna(rows.loc[("C", "x"), "paper"]) and pd.isna(rows.loc[("C", "x"), "within_tolerance"])
    assert pd.isna(rows.loc[("B", "y"), "reproduced"])  # a paper row we do not reproduce is kept
    s = report.agreement_summary(c)
    assert s == {"compared": 3, "within": 2, "outside": 1, "only_reproduced": 1, "only_paper": 0}


def test_compare_keeps_conflicting_paper_columns(paper_dir):
    paper = report.load_paper_table("t", value="percent", directory=paper_dir)
    ours = pd.DataFrame({"source": ["A"], "role": ["x"], "percent": [50.0], "note": ["ours"]})
    c = report.compare_with_paper(ours, paper, keys=["source", "role"], value="percent", tolerance=1.0)
    assert {"paper_note", "note"} <= set(c.columns)


def test_tolerance_boundary_counts_as_within(paper_dir):
    paper = report.load_paper_table("w", value=["mean_words", "sd_words"], directory=paper_dir)
    ours = pd.DataFrame({"category": ["Total"], "column": ["Human"], "statistic": ["sd_words"], "v": [34.13]})
    c = report.compare_with_paper(ours, paper, keys=["category", "column", "statistic"], value="v", tolerance=0.1)
    assert c.dropna(subset=["within_tolerance"])["within_tolerance"].tolist() == [True]
    ours["v"] = 34.16
    c = report.compare_with_paper(ours, paper, keys=["category", "column", "statistic"], value="v", tolerance=0.1)
    assert c.dropna(subset=["within_tolerance"])["within_tolerance"].tolist() == [False]


def test_outside_tolerance_with_known_reasons(paper_dir):
    paper = report.load_paper_table("t", value="percent", directory=paper_dir)
    ours = pd.DataFrame({"source": ["A", "B"], "role": ["y", "x"], "percent": [16.0, 20.0]})
    c = report.compare_with_paper(ours, paper, keys=["source", "role"], value="percent", tolerance=1.0)
    off = report.outside_tolerance(c, keys=["source", "role"], table="t",
                                   known=report.load_known_differences(paper_dir))
    assert off.set_index("cell")["explanation"].to_dict() == {"A | y": "printed 6 is probably 16",
                                                             "B | x": "not explained yet"}
    none = report.outside_tolerance(c[c["source"] == "C"], keys=["source", "role"], table="t",
                                    known=report.load_known_differences(paper_dir))
    assert none.empty


def test_every_known_difference_names_a_table_a_notebook_checks():
    """Each explanation is keyed by a table id that some notebook passes to outside_tolerance."""
    import json

    from vqalib.datasets import project_root

    sources = "".join("".join(c["source"]) for nb in sorted((project_root() / "notebooks").glob("*.ipynb"))
                      for c in json.loads(nb.read_text())["cells"])
    known = report.load_known_differences()
    for table in known["table"].unique():
        assert f'table="{table}"' in sources, f"no notebook lists the differences of {table!r}"
    assert known["explanation"].str.len().gt(20).all()


def test_wide_keeps_order():
    c = pd.DataFrame({"source": ["Z", "Z", "A", "A"], "label": ["b", "a", "b", "a"], "reproduced": [1.0, 2.0, 3.0, 4.0]})
    w = report.wide(c, index="source", columns="label")
    assert list(w.index) == ["Z", "A"] and list(w.columns) == ["b", "a"]
    assert w.loc["A", "a"] == 4.0


def test_save_table_is_byte_identical_across_runs(tmp_path):
    frame = pd.DataFrame({"k": ["a", "b"], "v": [1 / 3, 2.0], "ok": pd.array([True, pd.NA], dtype="boolean")})
    report.save_table(frame, "x", title="X", directory=tmp_path / "1")
    report.save_table(frame.copy(), "x", title="X", directory=tmp_path / "2")
    for ext in ("csv", "md"):
        assert (tmp_path / "1" / f"x.{ext}").read_bytes() == (tmp_path / "2" / f"x.{ext}").read_bytes()
    assert (tmp_path / "1" / "x.csv").read_text() == "k,v,ok\na,0.3333,True\nb,2.0000,\n"
    assert (tmp_path / "1" / "x.md").read_text().startswith("# X\n")


def test_save_figure_writes_png_pdf_and_alt_text(tmp_path):
    report.use_style()
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    saved = report.save_figure(fig, "line", directory=tmp_path,
                               alt_text="A straight line rising from the lower left to the upper right corner.")
    assert saved.png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert saved.pdf.read_bytes()[:4] == b"%PDF"
    assert saved.alt_path.read_text().startswith("A straight line")
    assert "Alt text" in saved._repr_markdown_()
    with pytest.raises(ValueError, match="alt text"):
        report.save_figure(fig, "line2", directory=tmp_path, alt_text="a line")
    plt.close(fig)
    (tmp_path / "line.csv").write_text("x\n")
    removed = report.remove_figure("line", directory=tmp_path)  # "not run" next time: no stale image
    assert sorted(p.name for p in removed) == ["line.alt.txt", "line.pdf", "line.png"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["line.csv"] and report.remove_figure("line", directory=tmp_path) == []


def test_not_run_says_why_and_how():
    t = report.not_run("no LLM judge configured", enable="set VQALIB_JUDGE_URL")
    assert t.iloc[0]["status"] == "not run: no LLM judge configured"


def test_tolerance_per_metric(tmp_path):
    (tmp_path / "a.csv").write_text("model,metric,value\nX,abs-acc,0.77\nX,abs-%,47\n")
    paper = report.load_paper_table("a", value="value", directory=tmp_path)
    ours = pd.DataFrame({"model": ["X", "X"], "metric": ["abs-acc", "abs-%"], "value": [0.75, 45.6]})
    c = report.compare_with_paper(ours, paper, keys=["model", "metric"], value="value",
                                  tolerance={"abs-acc": 0.02, "abs-%": 2.0}, tolerance_column="metric")
    assert c["within_tolerance"].tolist() == [True, True]
    with pytest.raises(KeyError, match="no tolerance"):
        report.compare_with_paper(ours, paper, keys=["model", "metric"], value="value",
                                  tolerance={"abs-acc": 0.02}, tolerance_column="metric")


def test_fill_not_run_replaces_only_matching_rows():
    table = pd.DataFrame({"model": ["A", "A"], "method": ["vanilla", "prompt"], "value": [0.5, None],
                          "status": [None, "not run: no runs"]})
    computed = pd.DataFrame({"model": ["A"], "method": ["prompt"], "value": [0.7]})
    out = report.fill_not_run(table, computed, keys=["model", "method"])
    assert out.set_index("method").loc["prompt", "value"] == 0.7 and len(out) == 2
    assert report.fill_not_run(table, computed.iloc[0:0], keys=["model", "method"]) is table
