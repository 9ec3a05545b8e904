"""The SIMULATED human evaluation (VizWiz-LF §6 design) and the labelling of everything made from it."""

import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from vqalib.compendium import reproduce
from vqalib.papers.vizwiz_lf import human_eval, ratings, simulation

FIXTURES = Path(__file__).parent / "fixtures"
NOTEBOOK = Path(__file__).parents[1] / "notebooks" / "04_human_eval_stats.ipynb"


def csv_bytes(frame: pd.DataFrame) -> bytes:
    buffer = io.StringIO()
    frame.to_csv(buffer, index=False, lineterminator="\n")
    return buffer.getvalue().encode()


def test_the_design_of_section_6():
    frame = simulation.simulate_ratings(seed=0)
    assert frame.groupby("group")["participant_id"].nunique().to_dict() == {"B": 10, "B+I": 10, "S": 10, "S+I": 10}
    assert frame["question_id"].nunique() == 12
    assert frame.drop_duplicates("question_id")["question_category"].value_counts().to_dict() == {
        c: 3 for c in ratings.CATEGORIES}
    assert frame.groupby("participant_id").size().eq(36).all() and len(frame) == 40 * 36
    ranks = frame.groupby(["participant_id", "question_id"])["rank"].apply(sorted)
    assert ranks.map(lambda r: r == [1, 2, 3]).all()
    for column in ratings.RATING_COLUMNS:
        assert set(frame[column]) <= {1, 2, 3}
    assert frame["study"].eq("SIMULATED").all()


def test_simulated_ratings_pass_the_loader(tmp_path, data_dir):
    path = tmp_path / "simulated.csv"
    path.write_bytes(csv_bytes(simulation.simulate_ratings(seed=3)))
    loaded = ratings.load_ratings(path, data_dir=data_dir)  # its question ids are the release's
    assert len(loaded) == 1440 and ratings.is_simulated(loaded)
    assert ratings.Study.from_file(path, data_dir=data_dir).simulated


def test_same_seed_gives_identical_csv_bytes_and_another_seed_does_not():
    first = csv_bytes(simulation.simulate_ratings(seed=7))
    assert csv_bytes(simulation.simulate_ratings(seed=7)) == first
    assert csv_bytes(simulation.simulate_ratings(seed=8)) != first
    analysis = [human_eval.figure2_analysis(simulation.simulate_ratings(seed=7)) for _ in range(2)]
    assert csv_bytes(analysis[0].pairwise) == csv_bytes(analysis[1].pairwise)


def test_real_question_ids_are_drawn_with_the_seed(vizwiz):
    questions = simulation.design_questions(vizwiz.answers, per_category=3, seed=0)
    assert len(questions) == 12 and questions["question_category"].value_counts().eq(3).all()
    assert questions.equals(simulation.design_questions(vizwiz.answers, per_category=3, seed=0))
    known = vizwiz.answers.drop_duplicates("question_id").set_index("question_id")["question_type"]
    assert (known.loc[questions["question_id"]].to_numpy() == questions["question_category"].to_numpy()).all()
    frame = simulation.simulate_ratings(seed=0, questions=questions)
    assert set(frame["question_id"]) == set(questions["question_id"])


def test_zero_effects_give_mostly_non_significant_friedman_tests():
    rates = simulation.rejection_rates(seeds=range(20), effect_scale=0.0, alpha=0.05)
    assert rates["replicates"].eq(20).all() and len(rates) == 20     # 4 groups x 5 criteria
    assert rates["rejection_rate"].mean() <= 0.10                     # nominal 0.05
    assert rates["rejection_rate"].max() <= 0.30


def test_default_effects_are_detected_where_they_are_large():
    rates = simulation.rejection_rates(seeds=range(10), effect_scale=1.0).set_index(["group", "criterion"])
    assert rates.loc[("S+I", "plausibility"), "rejection_rate"] >= 0.8   # Gemini's correctness, §6
    assert rates.xs("ranking", level="criterion")["rejection_rate"].min() >= 0.8


def test_effects_are_parameters():
    effects = simulation.default_effects()
    assert set(effects["source"]) == set(ratings.SOURCES) and len(effects) == 4 * 5 * 3
    strong = effects.assign(effect=np.where(effects["source"] == "Gemini", -3.0, 0.0))
    frame = simulation.simulate_ratings(seed=1, effects=strong)
    means = frame.groupby("source")["helpfulness"].mean()
    assert means["Gemini"] < means["GPT-4V"] - 0.5
    gemini_rank = frame.loc[frame["source"] == "Gemini", "rank"].mean()
    assert gemini_rank > 2.5


def test_simulated_study_labels_everything():
    study = simulation.simulated_study(seed=0)
    assert study.simulated and study.label.startswith("SIMULATED")
    assert "SIMULATED" in study.name("means") and study.title("Fig. 2").startswith("SIMULATED")
    analysis = human_eval.figure2_analysis(study.ratings)
    for frame in (analysis.means, analysis.friedman, analysis.pairwise):
        assert study.labelled(frame)["study"].str.contains("SIMULATED").all()
    assert "SIMULATED" in human_eval.figure2_summary_text(analysis, study=study.title("x"))


@pytest.mark.full
@pytest.mark.notebook
def test_notebook_marks_every_simulated_output_and_handles_a_real_file(tmp_path, data_dir):
    out = tmp_path / "figures"
    reproduce.run_notebook(NOTEBOOK, output=tmp_path / NOTEBOOK.name,
                           parameters={"smoke": True, "figures_dir": str(out), "data_dir": str(data_dir),
                                       "ratings_path": str(FIXTURES / "ratings_valid.csv")})
    names = {p.name for p in out.iterdir()}
    simulated = sorted(n for n in names if "SIMULATED" in n)
    assert {f"vizwiz-lf_fig02_SIMULATED_{part}.csv" for part in ("ratings", "means", "friedman", "wilcoxon",
                                                                "rejection_rates", "effects")} <= set(simulated)
    assert "vizwiz-lf_fig02_SIMULATED_bars.png" in simulated
    for name in simulated:
        path = out / name
        if name.endswith(".csv"):
            table = pd.read_csv(path)
            assert table.columns[0] == "study" and table["study"].str.startswith("SIMULATED").all(), name
        elif name.endswith(".md"):
            assert path.read_text().startswith("# SIMULATED"), name
        elif name.endswith(".alt.txt"):
            assert path.read_text().startswith("SIMULATED"), name
    # files without SIMULATED in their name come from the real file or the paper, never from the simulation
    others = sorted(n for n in names if "SIMULATED" not in n)
    assert others == sorted([*(f"vizwiz-lf_fig02_human_{p}.{e}" for p in ("means", "friedman", "wilcoxon")
                               for e in ("csv", "md")),
                             *(f"vizwiz-lf_fig02_human_bars.{e}" for e in ("png", "pdf", "alt.txt")),
                             "vizwiz-lf_human_correctness.csv", "vizwiz-lf_human_correctness.md",
                             "vizwiz-lf_table19_short_vs_long_survey.csv", "vizwiz-lf_table19_short_vs_long_survey.md",
                             "vizwiz-lf_table19_preference_binomial.csv", "vizwiz-lf_table19_preference_binomial.md"])
    for name in others:
        assert "SIMULATED" not in (out / name).read_text(errors="ignore"), name
    correctness = pd.read_csv(out / "vizwiz-lf_human_correctness.csv")
    assert {"source", "question_id", "correctness"} <= set(correctness.columns) and len(correctness) == 6


# --- notebook 04 helpers -----------------------------------------------------------------

def test_scaled_effects_and_their_wide_table():
    half = simulation.scaled_effects(0.5)
    assert half["effect"].tolist() == pytest.approx((simulation.default_effects()["effect"] * 0.5).tolist())
    wide = simulation.effects_wide(half)
    assert wide.columns.tolist() == ["criterion", "group", *ratings.SOURCES] and len(wide) == 20


def test_design_rejection_rates_cover_three_conditions():
    rates = simulation.design_rejection_rates(seeds=range(1, 3), effect_scale=1.0)
    conditions = ["no source effects", "no source effects, answer_sd 0.3", "default effects x 1"]
    assert list(dict.fromkeys(rates["condition"])) == conditions
    assert rates["replicates"].eq(2).all() and rates["rejection_rate"].between(0, 1).all()
    summary = simulation.rejection_rate_summary(rates)
    lines = summary.split("\n")
    assert lines[0] == "condition" and [line.startswith(name) for line, name in zip(lines[1:], conditions)] == [True] * 3
    wide = simulation.rejection_rates_wide(rates)
    assert len(wide) == 20 and wide.columns.tolist()[2:] == list(dict.fromkeys(rates["condition"]))
