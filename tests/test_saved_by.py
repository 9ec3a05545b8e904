"""The record of which notebook cell saved each table and figure (vqalib.core.saved_by, figures/SAVED_BY.json)."""

import json

import nbformat
import pytest

from vqalib.compendium import reproduce
from vqalib.core import io, registry, saved_by

FIGURES = io.project_root() / "figures"


def test_the_committed_record_names_a_cell_of_its_notebook_for_every_file():
    record = saved_by.read(FIGURES)
    files = sorted(p.name for p in [*FIGURES.glob("*.csv"), *FIGURES.glob("*.png")])
    assert sorted(record) == files
    notebooks = {}
    for name, entry in record.items():
        spec = registry.figure(name[:-4]) if name.endswith(".png") else registry.table(name[:-4])
        assert entry["notebook"] == spec.notebook, name
        nb = notebooks.setdefault(spec.notebook, nbformat.read(FIGURES.parent / "notebooks" / f"{spec.notebook}.ipynb",
                                                               as_version=4))
        assert any(c.get("id") == entry["cell"] and c.cell_type == "code" for c in nb.cells), name
    text = (FIGURES / saved_by.FILE).read_text(encoding="utf-8")
    assert json.loads(text) == record and text.count("\n") == len(record) + 2  # one line per file


def test_cells_are_found_by_execution_count_and_the_record_is_merged_per_notebook(tmp_path):
    cells = [nbformat.v4.new_code_cell("a"), nbformat.v4.new_markdown_cell("m"), nbformat.v4.new_code_cell("b")]
    for k, cell in enumerate(cells):
        cell.id = f"c{k}"
    cells[0].execution_count, cells[2].execution_count = 1, 2
    nb = nbformat.v4.new_notebook(cells=cells)
    lines = [{"file": "x.csv", "cell": 1, "outcome": "written"}, {"file": "y.png", "cell": 2, "outcome": "kept"},
             {"file": "x.csv", "cell": 2, "outcome": "unchanged"}, {"file": "z.csv", "cell": None, "outcome": "written"}]
    assert saved_by.cells(lines, nb) == {"x.csv": "c2", "y.png": "c2"}  # the last save wins; no cell, no entry
    saved_by.write(tmp_path, {"01_a": {"x.csv": "c2"}, "02_b": {"old.csv": "c9"}})
    saved_by.write(tmp_path, {"02_b": {"y.png": "c1"}})  # 02_b ran again: its entries are replaced, 01_a's kept
    assert saved_by.read(tmp_path) == {"x.csv": {"notebook": "01_a", "cell": "c2"},
                                       "y.png": {"notebook": "02_b", "cell": "c1"}}
    assert not [p for p in tmp_path.iterdir() if p.name != saved_by.FILE]  # written whole: no temporary file left


def test_nothing_is_logged_outside_vqalib_reproduce(tmp_path, monkeypatch):
    monkeypatch.delenv(saved_by.LOG_ENV, raising=False)
    saved_by.log(tmp_path / "x.csv", "written")  # a notebook run by hand
    assert saved_by.logged() == [] and not list(tmp_path.iterdir())


@pytest.mark.full  # a kernel starts (a few seconds): make test-full
def test_a_run_records_the_cell_that_saved_each_file(tmp_path):
    """The kernel logs each save with the running cell's number; the run resolves it to the cell id."""
    source = ['figures_dir = None', 'import pandas as pd\nfrom vqalib.core import report\nframe = pd.DataFrame({"a": [1]})',
              'report.save(frame, "vizwiz-lf_answerability_agreement", directory=figures_dir)',
              'x = 1', 'for stem in ["vizwiz-lf_human_correctness"]:\n    report.save(frame, stem, directory=figures_dir)']
    cells = [nbformat.v4.new_code_cell(s) for s in source]
    cells[0].metadata["tags"] = ["parameters"]
    for k, cell in enumerate(cells):
        cell.id = f"cell{k}"
    nb = nbformat.v4.new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                                         "language": "python"}})
    path = tmp_path / "in" / "01_saves.ipynb"
    path.parent.mkdir()
    nbformat.write(nb, path)
    out = tmp_path / "figures"
    reproduce.run_all([path], parameters={"figures_dir": str(out)}, output_dir=tmp_path, record_times=False)
    assert saved_by.read(out) == {"vizwiz-lf_answerability_agreement.csv": {"notebook": "01_saves", "cell": "cell2"},
                                  "vizwiz-lf_human_correctness.csv": {"notebook": "01_saves", "cell": "cell4"}}
