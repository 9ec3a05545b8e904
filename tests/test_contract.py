"""The reproduction contract's tiered check: exact for counts and closed-form values, the declared
tolerance for model-derived columns, and a failure message that names every cell that moved."""

import json
import shutil

import pytest

from vqalib.core import contract, registry
from vqalib.core.io import project_root

FIGURES = project_root() / "figures"


def _copy(tmp_path, name):
    out = tmp_path / name
    shutil.copytree(FIGURES, out)
    return out


def _edit(path, row, column, change):
    """Change one cell of a saved CSV in place, keeping its text layout."""
    text = path.read_text(encoding="utf-8").split("\n")
    table = contract.read_text_table("\n".join(text))
    table.loc[row, column] = change(table.loc[row, column])
    path.write_text(table.to_csv(index=False, lineterminator="\n"), encoding="utf-8")


def test_identical_folders_reproduce(tmp_path):
    fresh = _copy(tmp_path, "fresh")
    assert contract.check_dirs(FIGURES, fresh) == []


def test_a_model_value_beyond_tolerance_and_a_count_off_by_one_are_both_named(tmp_path):
    """Must show: one model-derived value moved beyond its tolerance and one count changed by 1 fail the
    check, and the message names both cells, how far each moved and the rule."""
    fresh = _copy(tmp_path, "fresh")
    similarity = "commvqa_fig04_description_similarity"
    tol = registry.table(similarity).model_derived.tolerance("mean")
    _edit(fresh / f"{similarity}.csv", 0, "mean", lambda v: f"{float(v) + 3 * tol:.4f}")
    _edit(fresh / "commvqa_context_counts.csv", 0, "questions", lambda v: str(int(v) + 1))
    with pytest.raises(contract.ReproductionMismatch) as failure:
        contract.check_dirs(FIGURES, fresh)
    message = str(failure.value)
    assert "2 cell(s) or file(s) differ beyond the declared tolerance" in message
    assert f"{similarity}.csv [row 1" in message and "mean: committed" in message
    assert f"tolerance {tol:g}" in message and "moved 0.0003" in message
    assert "commvqa_context_counts.csv [row 1" in message and "questions: committed" in message
    assert "moved 1; exact (count or closed-form value)" in message


def test_model_noise_within_tolerance_passes_and_is_reported(tmp_path):
    fresh = _copy(tmp_path, "fresh")
    similarity = "commvqa_fig04_description_similarity"
    tol = registry.table(similarity).model_derived.tolerance("mean")
    _edit(fresh / f"{similarity}.csv", 0, "mean", lambda v: f"{float(v) + tol:.4f}")
    moves = contract.check_dirs(FIGURES, fresh)
    assert len(moves) == 1 and moves[0].within and moves[0].column == "mean"


def test_a_derived_flag_may_follow_only_a_moved_model_value(tmp_path):
    """``paper_in_ci`` of a BERTScore cell may flip only where its BERTScore value moved."""
    fresh = _copy(tmp_path, "fresh")
    name = "vizwiz-lf_table04_automatic_eval"
    table = contract.read_text_table((FIGURES / f"{name}.csv").read_text())
    bert = table.index[(table["metric"] == "BERTScore") & (table["paper_in_ci"] != "")][0]
    rouge = table.index[(table["metric"] == "ROUGE") & (table["paper_in_ci"] != "")][0]
    flip = {"True": "False", "False": "True"}
    _edit(fresh / f"{name}.csv", bert, "paper_in_ci", flip.get)  # no value moved: not allowed
    _edit(fresh / f"{name}.csv", rouge, "paper_in_ci", flip.get)  # ROUGE is not model-derived
    moves = contract.compare_dirs(FIGURES, fresh)
    assert sorted((m.column, m.tolerance, m.within) for m in moves) == [("paper_in_ci", "exact", False),
                                                                       ("paper_in_ci", "follows", False)]
    _edit(fresh / f"{name}.csv", bert, "reproduced", lambda v: f"{float(v) + 1e-4:.4f}")
    moves = contract.compare_dirs(FIGURES, fresh)
    assert [(m.column, m.within) for m in moves if m.row.startswith(f"row {bert + 1}")] == [
        ("reproduced", True), ("paper_in_ci", True)]


def test_missing_extra_and_changed_figure_files_are_named(tmp_path):
    fresh = _copy(tmp_path, "fresh")
    (fresh / "commvqa_hedges.csv").unlink()
    png = fresh / "afgv_fk_by_tier.png"
    png.write_bytes(png.read_bytes() + b"\0")
    (fresh / "surprise.csv").write_text("a\n1\n")
    message = contract.report_moves(contract.compare_dirs(FIGURES, fresh))
    assert "commvqa_hedges.csv [file] presence: committed 'present', now 'absent'" in message
    assert "afgv_fk_by_tier.png [file] bytes" in message
    assert "surprise.csv [file] presence" in message


def test_provenance_records_machine_libraries_data_and_rules(tmp_path):
    record = contract.provenance(figures=FIGURES)
    assert record["platform"]["torch_cpu_capability"] and record["python"].startswith("3.11")
    assert record["packages"]["torch"] and record["data"]["vizwiz-lf/expert.json"]
    assert any(r["stem"] == "vizwiz-lf_table01_word_counts" for r in record["tolerance_rules"])
    assert "vizwiz-lf_table01_word_counts.csv" in record["figures"]
    path = contract.write_provenance(tmp_path / "p.json", record)
    assert json.loads(path.read_text())["embedding_rounding_decimals"] == record["embedding_rounding_decimals"]


def test_rows_of_one_table_follow_their_own_model_derived_rule():
    """The leaderboard: BERTScore rows move by at most 0.0001, the classifier-labelled rows by at most 0.005, and
    a row of neither (released labels, ROUGE) must not move at all."""
    spec = registry.table("leaderboard_vizwiz-lf")
    header = "metric,reference,model,kind,n,value,ci_low,ci_high,tier,origin,note"
    rows = {"bertscore": "BERTScore,s_r,A,released,600,{v},0.1,0.2,1,x,",
            "classifier": "abstention accuracy,classifier labels,A,released,600,{v},0.1,0.2,1,x,",
            "released": "abstention accuracy,released labels,A,released,600,{v},0.1,0.2,1,x,"}
    for name, row in rows.items():
        moves = contract.table_moves(spec, f"{header}\n{row.format(v='0.5000')}\n",
                                     f"{header}\n{row.format(v='0.5030')}\n", file="leaderboard_vizwiz-lf.csv")
        assert len(moves) == 1 and moves[0].within == (name == "classifier"), name
    md = spec.model_derived
    assert md.for_row({"metric": "BERTScore", "reference": "s_r"}) is md
    assert md.for_row({"metric": "ROUGE", "reference": "released labels"}) is None
