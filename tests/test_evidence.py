"""Every known difference cites committed evidence (or says it is unexplained), and every citation resolves."""

from pathlib import Path

import pandas as pd
import pytest

from vqalib.core import evidence, report
from vqalib.core.io import project_root

ROOT = project_root()


def test_every_known_difference_has_evidence_that_resolves():
    known = pd.read_csv(ROOT / "data" / "paper" / "known_differences.csv", dtype=str, keep_default_na=False)
    assert "evidence" in known.columns
    problems = evidence.check(known, root=ROOT)
    assert problems.empty, "\n".join(f"{r.table} {r.cell}: {r.problem}" for r in problems.itertuples())
    counts = known["evidence"].eq(evidence.UNEXPLAINED).value_counts()
    assert counts.get(False, 0) > 0 and counts.get(True, 0) > 0


@pytest.fixture
def project(tmp_path) -> Path:
    (tmp_path / "figures").mkdir()
    pd.DataFrame({"source": ["A", "B"], "metric": ["ROUGE", "METEOR"], "value": [0.1, ""]}).to_csv(
        tmp_path / "figures" / "t.csv", index=False)
    return tmp_path


def test_parse_and_resolve(project):
    refs = evidence.parse("figures/t.csv | source=A & metric=ROUG* | value ; figures/t.csv | source=B | metric")
    assert [r.column for r in refs] == ["value", "metric"]
    assert evidence.resolve(refs[0], root=project)["value"].tolist() == ["0.1"]
    assert evidence.parse("unexplained") == []


@pytest.mark.parametrize("text, message", [
    ("figures/t.csv | source=A", "expected"),
    ("elsewhere/t.csv | source=A | value", "expected"),
    ("figures/t.csv | source | value", "not column=value"),
])
def test_malformed_references_are_refused(text, message):
    with pytest.raises(ValueError, match=message):
        evidence.parse(text)


@pytest.mark.parametrize("text, message", [
    ("figures/u.csv | source=A | value", "no file"),
    ("figures/t.csv | who=A | value", "no column"),
    ("figures/t.csv | source=C | value", "no row"),
    ("figures/t.csv | source=B | value", "blank"),
])
def test_unresolvable_references_name_the_problem(project, text, message):
    with pytest.raises(ValueError, match=message):
        evidence.resolve(evidence.parse(text)[0], root=project)


def test_check_reports_rows_without_evidence(project):
    known = pd.DataFrame({"table": ["x", "y"], "cell": ["a", "b"], "explanation": ["e", "e"],
                          "evidence": ["", "figures/t.csv | source=A | value"]})
    problems = evidence.check(known, root=project)
    assert problems["cell"].tolist() == ["a"]


def test_unexplained_cells_are_counted_apart():
    off = pd.DataFrame({"explanation": ["why", "why", report.NOT_EXPLAINED],
                        "evidence": ["figures/t.csv | a=b | c", evidence.UNEXPLAINED, ""]})
    assert report.explained_cells(off).tolist() == [True, False, False]
