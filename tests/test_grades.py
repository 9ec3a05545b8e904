"""The index's grades and totals (vqalib.compendium.grades) and the reasons it shows (vqalib.compendium.status)."""

from collections import Counter

import pandas as pd
import pytest
from bs4 import BeautifulSoup

from vqalib.compendium import grades, paper_view, site_printable, status
from vqalib.core import registry
from vqalib.core.io import project_root

FIGURES = project_root() / "figures"
JUDGED = ("within", "explained", "unexplained")


def counts(*, within=0, compared=0, not_counted=0, not_run=0, **extra) -> dict:
    return {"within": within, "compared": compared, "not_counted": not_counted, "not_run": not_run, **extra}


@pytest.mark.parametrize("given, name, text", [
    (counts(within=95, compared=100, not_run=10), "full", "full: 95 of 100 judged within; 10 of 110 cells not run"),
    (counts(within=95, compared=100, not_run=12), "partial", "partial: 95 of 100 judged within; 12 of 112 cells not run"),
    (counts(within=94, compared=100), "partial", "partial: 94 of 100 judged within"),
    (counts(within=49, compared=100), "poor", "poor: 49 of 100 judged within"),
    (counts(within=36, compared=40, not_counted=5, not_run=120), "partial",
     "mostly not run (120 of 165 cells); partial: 36 of 40 judged within"),
    (counts(not_run=20), "not-run", "not run: all 20 cells"),
    (counts(not_counted=45, consistent=35, **{"self-input": 45}), "none",
     "no cell judged; 35 of 45 self-input cells consistent"),
])
def test_one_grading_rule_judges_agreement_and_how_much_ran(given, name, text):
    assert grades.grade(given)[0::2] == (name, text)


def test_tables_mostly_not_run_are_not_graded_full_and_self_input_shows_its_consistent_cells():
    table = grades.summary(FIGURES).set_index("stem")
    for stem in ("vizwiz-lf_table05_abstention", "vizwiz-lf_table26_abstention_strategies"):
        assert table.loc[stem, "grade"][0] != "full", stem
    assert table.loc["vizwiz-lf_table26_abstention_strategies", "grade"][2].startswith("mostly not run")
    assert "self-input cells consistent" in table.loc["afgv_table01_tier_accuracy", "grade"][2]
    legend = site_printable.grade_legend()
    assert "under 50% of the judged cells within" in legend and "at least 0%" not in legend


def _oracle_cells() -> pd.DataFrame:
    """Every judged or counted printed cell, keyed as the paper prints it, written here without the registry's
    ``repeats`` declarations: Table 26's baseline rows and InstructBLIP are Table 5's vanilla column."""
    alias = {("Baseline", "Expert"): ("Expert", "vanilla"), ("Baseline", "Majority"): ("Majority", "vanilla"),
             ("Baseline", "Random"): ("Random", "vanilla"), ("InstructBLIP", "vanilla"): ("InstBLIP", "vanilla")}
    rows = []
    for stem in paper_view.compared_stems(FIGURES):
        spec = registry.table(stem)
        cells = paper_view.cell_states(pd.read_csv(FIGURES / f"{stem}.csv"), spec)
        cells = cells[cells["state"].ne("missing")]
        for cell in cells.to_dict("records"):
            keys = tuple("" if pd.isna(cell[k]) else str(cell[k]) for k in spec.cell_keys)
            if stem.startswith("vizwiz-lf_table26"):
                keys = alias.get(keys[:2], keys[:2]) + keys[2:]
            family = "table05" if "table05" in stem or "table26" in stem else \
                "table04_all" if stem.endswith(("full_set_bootstrap", "declared_protocol")) else stem
            rows.append({"cell": (family, keys, round(cell["paper"], 6), round(cell["reproduced"], 6)
                                  if pd.notna(cell["reproduced"]) else None), "state": cell["state"]})
    return pd.DataFrame(rows)


def test_the_index_totals_count_each_distinct_cell_of_figures_once(soups_index):
    cells = _oracle_cells()
    rank = {s: k for k, s in enumerate(("within", "explained", "unexplained", "not-counted", "not-run"))}
    best = cells.assign(rank=cells["state"].map(rank)).sort_values("rank").drop_duplicates("cell")
    expected = Counter(best["state"].str.replace("-", "_"))
    foot = soups_index.select_one("#summary tfoot tr")
    shown = [int(td.get_text()) for td in foot.select("td.num")]
    assert shown == [expected[c] for c in grades.SUMMARY_COLUMNS]
    assert f"({len(cells) - len(best)} repeated cells left out)" in foot.th.get_text()
    # the per-table rows still show each table whole: their sum exceeds the totals by the repeats
    table = grades.summary(FIGURES)
    assert sum(table[c].sum() for c in grades.SUMMARY_COLUMNS) - sum(shown) == len(cells) - len(best) > 40


def test_no_two_tables_share_most_of_their_cells_unless_one_declares_it():
    values = {}
    for stem in paper_view.compared_stems(FIGURES):
        frame = pd.read_csv(FIGURES / f"{stem}.csv").dropna(subset=["paper", "reproduced"])
        values[stem] = Counter(zip(frame["paper"].round(4), frame["reproduced"].round(4)))
    stems = list(values)
    for k, first in enumerate(stems):
        for later in stems[k + 1:]:
            shared = sum((values[first] & values[later]).values())
            declared = registry.table(later).repeats
            if shared > 0.5 * sum(values[later].values()):
                assert declared and declared.table == first, (first, later, shared)


def test_repeated_cells_have_the_values_of_the_cells_they_repeat():
    cells = grades.distinct_cells(FIGURES)
    repeated = cells[cells["repeats"].ne("")]
    assert set(repeated["stem"]) == {"vizwiz-lf_table26_abstention_strategies", "vizwiz-lf_table04_declared_protocol"}
    assert (repeated["stem"] == "vizwiz-lf_table26_abstention_strategies").sum() == 45  # 8 sources and Random x 5


def test_every_compared_table_has_one_reason_shown_in_the_readme_and_on_the_index(soups_index):
    readme = (project_root() / "README.md").read_text(encoding="utf-8")
    rows = {tr.th.get_text(" ", strip=True): tr for tr in soups_index.select("#summary tbody tr")}
    for stem in paper_view.compared_stems(FIGURES):
        reason = status.table_reason(stem)
        spec = registry.table(stem)
        row = rows[f"{spec.paper} {spec.reproduces}"]
        if reason:
            said = reason[:1].upper() + reason[1:]
            assert said in readme, stem
            assert said.replace("`", "") in row.find_all("td")[-1].get_text(), stem
    with pytest.raises(KeyError, match="REASONS"):
        status.table_reason("vizwiz-lf_no_such_table")


@pytest.fixture(scope="module")
def soups_index() -> BeautifulSoup:
    """The index's summary table as the site shows it (:func:`vqalib.compendium.site_printable.opening`)."""
    return BeautifulSoup(site_printable.opening(grades.summary(FIGURES)), "html.parser")
