"""Live progress of `make reproduce` (vqalib.compendium.progress): cell labels, the plain and live displays,
quiet kernels, and a failing cell named with its notebook."""

import io
import json

import nbformat
import pytest

from vqalib.compendium import progress, reproduce


def test_cell_label_names_the_saved_table_or_the_first_code_line():
    assert progress.cell_label('x = 1\nreport.save(t, "vizwiz-lf_table04_seed_sweep", directory=d)') == \
        "saves vizwiz-lf_table04_seed_sweep"
    assert progress.cell_label("# a comment\nscores = table4.score_pairs(pairs)\n") == "scores = table4.score_pairs(pairs)"
    assert progress.cell_label('c = report.check(wordcounts.long_format(t), "vizwiz-lf_table01_word_counts", value="w")') == \
        "saves vizwiz-lf_table01_word_counts"
    assert progress.cell_label("") == "(empty cell)"
    assert len(progress.cell_label("y = " + "a" * 100)) == 48


def test_plain_display_prints_a_line_per_start_and_the_summary():
    out = io.StringIO()
    display = progress.Display(stream=out, live=False, interval=3600,
                               last_cells={"nb": [1.0, 2.0, 3.0]})
    display.start("nb")
    display.event("nb", {"event": "cell", "index": 0, "total": 3, "label": "saves t"})
    display.event("nb", {"event": "cell", "index": 1, "total": 3, "label": "x = 1"})
    cells = display.finish("nb", "[1/1] nb.ipynb done in 1.0 s")
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("  nb: starting") and lines[-1] == "[1/1] nb.ipynb done in 1.0 s"
    assert "\x1b" not in out.getvalue() and len(cells) == 2
    display.running["other"] = {"index": 1, "total": 3, "label": "x = 1", "start": 0.0, "cell_start": 1e12,
                                "printed": 0.0}
    assert "cell 2/3 (x = 1)" in display._line("other", display.running["other"], 1e12)


def test_live_display_redraws_in_place():
    out = io.StringIO()
    display = progress.Display(stream=out, live=True)
    display.start("a")
    display.start("b")
    display.event("a", {"event": "cell", "index": 2, "total": 5, "label": "saves t"})
    display.finish("a", "[1/2] a.ipynb done")
    text = out.getvalue()
    assert "\x1b[2F\x1b[J" in text and "cell 3/5 (saves t)" in text and "[1/2] a.ipynb done\n" in text


def _notebook(path, sources):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# t")] + [nbformat.v4.new_code_cell(s) for s in sources]
    nb.metadata["kernelspec"] = {"name": reproduce.KERNEL, "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


def test_a_failing_cell_is_named_with_its_notebook_and_the_kernel_stays_quiet(tmp_path, capfd):
    path = tmp_path / "99_fails.ipynb"
    _notebook(path, ["x = 1", "raise ValueError('boom')"])
    seen = []
    with pytest.raises(reproduce.NotebookFailed) as failed:
        reproduce.run_notebook(path, output=tmp_path / "out.ipynb", progress=seen.append,
                               kernel_log=tmp_path / "kernel.log")
    message = str(failed.value)
    assert "99_fails.ipynb failed in cell 3" in message and "ValueError: boom" in message
    assert "build/failed/out.ipynb" in message and "kernel.log" in message
    assert not (tmp_path / "out.ipynb").exists()  # a failed run never writes its target
    assert [e["index"] for e in seen] == [0, 1] and seen[0]["total"] == 2
    printed = capfd.readouterr()
    assert "IPKernelApp" not in printed.out + printed.err  # the kernel's own lines go to its log
    failed_copy = reproduce.project_root() / "build" / "failed" / "out.ipynb"
    cells = json.loads(failed_copy.read_text())["cells"]  # the partial output keeps the traceback
    assert any(o.get("ename") == "ValueError" for c in cells for o in c.get("outputs", []))


def test_a_times_file_that_does_not_parse_is_ignored_with_a_warning(tmp_path, capsys):
    bad = tmp_path / "reproduce_times.json"
    bad.write_text('{"01_dataset_stats": {"seconds": 4', encoding="utf-8")
    assert reproduce._read_times(bad) == {}
    assert "does not parse" in capsys.readouterr().out


def test_a_failed_run_leaves_the_committed_notebook_byte_identical(tmp_path):
    path = tmp_path / "98_fails.ipynb"
    _notebook(path, ["raise RuntimeError('disk full')"])
    before = path.read_bytes()
    with pytest.raises(reproduce.NotebookFailed, match="98_fails.ipynb failed in cell 2"):
        reproduce.run_notebook(path, kernel_log=tmp_path / "kernel.log")
    assert path.read_bytes() == before and not list(tmp_path.glob(".*running*"))


def test_a_second_reproduce_is_refused_naming_the_holder():
    with reproduce.exclusive():
        with pytest.raises(SystemExit, match=r"another vqalib reproduce holds .*reproduce.lock \(pid \d+"):
            reproduce.run(only=["01"])


@pytest.mark.full  # a notebook smoke run (about 8 s): make test-full, as ARCHITECTURE.md's test tiers say
def test_a_smoke_run_writes_only_under_build(tmp_path):
    root = reproduce.project_root()
    watched = [root / "README.md", root / "notebooks" / "01_dataset_stats.ipynb",
               *sorted((root / "figures").glob("*"))]
    before = {p: p.read_bytes() for p in watched}
    reproduce.run(only=["01"], parameters={"smoke": True}, jobs=1, wait=True)  # the lock test may hold it now
    assert {p: p.read_bytes() for p in watched} == before
    assert (root / "build" / "smoke" / "notebooks" / "01_dataset_stats.ipynb").exists()
    assert (root / "build" / "smoke" / "figures" / "vizwiz-lf_table01_word_counts.csv").exists()
