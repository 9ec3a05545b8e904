"""Fig. 2 statistics (Friedman, Bonferroni-corrected Wilcoxon, CIs) and Table 19's binomial test."""

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scistats

from vqalib.core import report
from vqalib.papers.vizwiz_lf import human_eval, survey as vizwiz_lf_survey
from vqalib.papers.vizwiz_lf.ratings import SOURCES

# A hand-made study: group B, 2 participants x 4 questions = 8 blocks; per block (GPT-4V, Gemini, Expert)
RANKS = [(1, 3, 2), (2, 3, 1), (1, 2, 3), (1, 3, 2), (2, 3, 1), (1, 3, 2), (2, 1, 3), (1, 3, 2)]
HELPFUL = [(3, 1, 3), (3, 2, 2), (2, 1, 3), (3, 2, 3), (3, 1, 2), (2, 2, 2), (3, 1, 3), (3, 2, 2)]


def hand_made(group: str = "B") -> pd.DataFrame:
    rows = []
    for b, (ranks, helpful) in enumerate(zip(RANKS, HELPFUL)):
        for s, source in enumerate(SOURCES):
            rows.append({"participant_id": f"P{b // 4}", "group": group, "question_id": b % 4 + 1,
                         "question_category": "Reading", "source": source, "rank": ranks[s], "relevance": 2 + (s == 1),
                         "helpfulness": helpful[s], "plausibility": 3, "fluency": 3 - (b + s) % 2})
    return pd.DataFrame(rows)


def column(values, s):
    return np.array([v[s] for v in values], dtype=float)


def test_normalisation_best_rank_is_one_and_ratings_span_zero_to_one():
    scores = human_eval.normalised_scores(hand_made())
    first = scores[(scores["participant_id"] == "P0") & (scores["question_id"] == 1)].set_index(["criterion", "source"])
    assert first.loc[("ranking", "GPT-4V"), "score"] == 1.0       # rank 1
    assert first.loc[("ranking", "Expert"), "score"] == 0.5       # rank 2
    assert first.loc[("ranking", "Gemini"), "score"] == 0.0       # rank 3
    assert first.loc[("helpfulness", "Gemini"), "score"] == 0.0   # rating 1
    assert first.loc[("helpfulness", "GPT-4V"), "score"] == 1.0   # rating 3
    assert set(scores["criterion"]) == set(human_eval.CRITERIA) and len(scores) == 24 * 5


def test_s_i_plausibility_is_labelled_correctness():
    scores = human_eval.normalised_scores(pd.concat([hand_made("B"), hand_made("S+I")]))
    labels = scores.groupby(["group", "criterion"])["criterion_label"].unique()
    assert list(labels[("S+I", "plausibility")]) == ["Correctness"]
    assert list(labels[("B", "plausibility")]) == ["Plausibility"]


def test_friedman_equals_scipy_on_the_raw_table():
    table = human_eval.friedman_tests(human_eval.normalised_scores(hand_made())).set_index("criterion")
    for criterion, raw in (("ranking", RANKS), ("helpfulness", HELPFUL)):
        reference = scistats.friedmanchisquare(*(column(raw, s) for s in range(3)))
        assert table.loc[criterion, "statistic"] == pytest.approx(reference.statistic)
        assert table.loc[criterion, "p"] == pytest.approx(reference.pvalue)
        assert table.loc[criterion, "n_blocks"] == 8 and table.loc[criterion, "df"] == 2
    assert np.isnan(table.loc["plausibility", "p"]) and table.loc["plausibility", "stars"] == ""  # no variation


@pytest.mark.parametrize("correction", [True, False])
def test_wilcoxon_equals_scipy_and_bonferroni_factor_is_the_number_of_pairs(correction):
    table = human_eval.pairwise_wilcoxon(human_eval.normalised_scores(hand_made()), correction=correction)
    assert table["correction_factor"].eq(3).all()
    assert table["correction"].eq("continuity" if correction else "none").all()
    assert len(list(itertools.combinations(SOURCES, 2))) == 3
    for criterion, raw in (("ranking", RANKS), ("helpfulness", HELPFUL)):
        part = table[table["criterion"] == criterion]
        assert list(zip(part["source_a"], part["source_b"])) == list(itertools.combinations(SOURCES, 2))
        for row in part.itertuples():
            a, b = SOURCES.index(row.source_a), SOURCES.index(row.source_b)
            reference = scistats.wilcoxon(column(raw, a), column(raw, b), zero_method="wilcox", correction=correction)
            assert row.statistic == pytest.approx(reference.statistic)
            assert row.p == pytest.approx(reference.pvalue)
            assert row.p_bonferroni == pytest.approx(min(1.0, 3 * reference.pvalue))
            assert row.stars == human_eval.stars(row.p_bonferroni)
    all_zero = table[table["criterion"] == "plausibility"]
    assert all_zero["n_nonzero"].eq(0).all() and all_zero["p"].isna().all() and all_zero["stars"].eq("").all()


def test_the_continuity_correction_is_the_default_and_never_lowers_p():
    """R's wilcox.test and pingouin correct; scipy does not by default: the choice is stated and selectable."""
    scores = human_eval.normalised_scores(hand_made())
    assert human_eval.WILCOXON_CORRECTION is True
    default = human_eval.pairwise_wilcoxon(scores)
    assert default["correction"].eq("continuity").all()
    both = human_eval.correction_sensitivity(scores)
    assert (both["p_bonferroni_continuity"].fillna(1) >= both["p_bonferroni_none"].fillna(1)).all()
    assert both["stars_differ"].eq(both["stars_continuity"] != both["stars_none"]).all()


def test_bonferroni_factor_follows_the_number_of_compared_sources():
    two = hand_made()
    two = two[two["source"] != "Expert"]
    table = human_eval.pairwise_wilcoxon(human_eval.normalised_scores(two), sources=("GPT-4V", "Gemini"))
    assert table["correction_factor"].eq(1).all()
    np.testing.assert_array_equal(table["p_bonferroni"], table["p"])
    assert human_eval.bonferroni([0.01, 0.2, 0.5], factor=3).tolist() == pytest.approx([0.03, 0.6, 1.0])
    with pytest.raises(ValueError):
        human_eval.bonferroni([0.1], factor=0)


@pytest.mark.parametrize("p, mark", [(0.0009, "***"), (0.001, "**"), (0.0099, "**"), (0.01, "*"), (0.049, "*"),
                                     (0.05, ""), (0.5, ""), (float("nan"), "")])
def test_stars_follow_the_papers_thresholds(p, mark):
    assert human_eval.stars(p) == mark


def test_incomplete_blocks_are_refused():
    scores = human_eval.normalised_scores(hand_made())
    with pytest.raises(ValueError, match="block"):
        human_eval.friedman_tests(scores.iloc[1:])


def test_stars_are_shown_only_after_a_significant_friedman_test():
    scores = human_eval.normalised_scores(hand_made())
    friedman, pairwise = human_eval.friedman_tests(scores), human_eval.pairwise_wilcoxon(scores)
    marks = human_eval.significance_marks(friedman, pairwise.assign(stars="*"), alpha=0.05)
    significant = set(friedman.loc[friedman["p"] < 0.05, "criterion"])
    assert set(marks.loc[marks["shown"], "criterion"]) == significant


def test_source_means_ci_is_the_t_interval_over_participant_means():
    means = human_eval.source_means(human_eval.normalised_scores(hand_made()), confidence=0.95)
    row = means[(means["criterion"] == "helpfulness") & (means["source"] == "Expert")].iloc[0]
    per_participant = np.array([np.mean([(h[2] - 1) / 2 for h in HELPFUL[:4]]),
                                np.mean([(h[2] - 1) / 2 for h in HELPFUL[4:]])])  # 0.875, 0.625
    ci = scistats.ttest_1samp(per_participant, 0.0).confidence_interval(0.95)
    assert row["mean"] == pytest.approx(per_participant.mean())
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((ci.low, ci.high))
    assert row["n_participants"] == 2 and row["n_ratings"] == 8
    constant = means[(means["criterion"] == "plausibility")]
    assert (constant["ci_low"] == constant["mean"]).all() and constant["mean"].eq(1.0).all()
    same = means[(means["criterion"] == "helpfulness") & (means["source"] == "Gemini")].iloc[0]
    assert same["ci_low"] == same["ci_high"] == same["mean"] == 0.25  # both participants average 0.25


def test_figure2_summary_text_is_computed_from_the_data():
    analysis = human_eval.figure2_analysis(hand_made())
    text = human_eval.figure2_summary_text(analysis, study="SIMULATED test")
    assert text.startswith("SIMULATED test.") and "B: GPT-4V" in text and "of 15 pairwise comparisons" in text


def test_preference_binomial_matches_scipy_and_needs_eight_questions():
    table = vizwiz_lf_survey.preference_binomial(participants=8, questions=range(1, 13), share=0.75, threshold=1e-4)
    row = table.set_index("questions").loc[8]
    assert (row["comparisons"], row["long_preferred"]) == (64, 48)
    assert row["p_two_sided"] == pytest.approx(scistats.binomtest(48, 64, 0.5).pvalue)
    assert row["p_one_sided"] == pytest.approx(scistats.binomtest(48, 64, 0.5, alternative="greater").pvalue)
    assert vizwiz_lf_survey.smallest_significant_survey(table, column="p_two_sided", threshold=1e-4) == 8
    assert vizwiz_lf_survey.smallest_significant_survey(table, column="p_one_sided", threshold=1e-4) == 8
    assert not table.set_index("questions").loc[7, "significant"]


def test_survey_consistency_finds_sizes_that_reproduce_printed_means_and_sds():
    # 0/1 ranking with mean 0.75: the sample SD of 8N answers rounds to 0.43 only from 110 answers on
    paper = pd.DataFrame({"criterion": ["Ranking", "Ranking"], "answer_length": ["long", "long"],
                          "statistic": ["AVG", "STDEV"], "paper": [0.75, 0.43], "paper_decimals": [2, 2]})
    table = vizwiz_lf_survey.survey_consistency(paper, participants=8, questions=range(1, 16)).set_index("questions")
    assert table["all_consistent_population_sd"].all()
    assert table.loc[table["all_consistent_sample_sd"]].index.tolist() == [14, 15]
    # a 1-3 rating whose mean 2.0 with SD 0.0 needs every answer to be 2: always attainable
    flat = pd.DataFrame({"criterion": ["Relevance"] * 2, "answer_length": ["short"] * 2, "statistic": ["AVG", "STDEV"],
                         "paper": [2.0, 0.0], "paper_decimals": [1, 1]})
    assert vizwiz_lf_survey.survey_consistency(flat, questions=[1, 2])["all_consistent_sample_sd"].all()


def test_scientific_p_values_stay_text():
    assert vizwiz_lf_survey.scientific(7.733077e-05) == "7.73×10^-5"
    assert vizwiz_lf_survey.scientific(0.289) == "2.89×10^-1"


# --- notebook 04 helpers -----------------------------------------------------------------

def test_figure2_means_wide_formats_each_bar():
    means = pd.DataFrame({"group": ["B", "B"], "source": ["GPT-4V", "Gemini"], "criterion": ["ranking"] * 2,
                          "mean": [0.5, 0.25], "ci_low": [0.4, 0.125], "ci_high": [0.6, 0.375]})
    wide = human_eval.figure2_means_wide(means)
    assert wide.loc[("B", "GPT-4V"), "ranking"] == "0.50 [0.40, 0.60]"
    assert wide.index.tolist() == [("B", "GPT-4V"), ("B", "Gemini")]


def test_blv_plausibility_and_correction_texts():
    scores = pd.DataFrame({"group": ["B", "B+I", "S"], "criterion": "plausibility", "score": [1.0, 0.5, 0.0]})
    assert human_eval.blv_plausibility_text(scores, study="X") == (
        "X: BLV plausibility pooled over sources: mean 0.75, SD 0.35 (n = 2); the paper reports 0.84, SD 0.28 "
        "for its real study (§6)")
    moved = pd.DataFrame({"stars_differ": [True, False, False]})
    assert human_eval.correction_sensitivity_text(moved, study="X") == (
        "X: 1 of 3 pairwise stars differ between the continuity-corrected and uncorrected Wilcoxon tests")


def test_shown_marks_keeps_drawn_pairs():
    pairwise = pd.DataFrame({"group": ["B", "S"], "criterion_label": ["Ranking"] * 2, "source_a": "GPT-4V",
                             "source_b": "Gemini", "mean_difference": [0.2, 0.1], "p": [0.01, 0.5],
                             "p_bonferroni": [0.03, 1.0], "stars": ["*", ""], "shown": [True, False], "extra": 1})
    shown = human_eval.shown_marks(pairwise)
    assert shown["group"].tolist() == ["B"] and "extra" not in shown and "shown" not in shown


def test_table19_and_survey_on_the_paper_table():

    paper19 = report.load_paper_table(vizwiz_lf_survey.TABLE19_STEM, value="value")
    table19 = vizwiz_lf_survey.table19_shown(paper19)
    assert table19["reproduced"].isna().all() and table19["status"].str.startswith("not run").all()
    assert len(table19) == len(paper19)
    survey = vizwiz_lf_survey.survey_table(paper19, questions=range(1, 21))
    assert survey["questions"].tolist() == list(range(1, 21)) and set(vizwiz_lf_survey.SURVEY_COLUMNS) <= set(survey)
    assert survey.columns[5] == "p_two_sided_printed"
    text = vizwiz_lf_survey.survey_summary_text(survey)
    first, second = text.split("\n")
    assert first == "smallest N with p < .0001: 8 questions two-sided, 8 one-sided (64 comparisons, 48 for the long answer)"
    assert second.startswith("N (1-20) for which every printed mean and SD of Table 19 is attainable: sample SD")
