"""The table registry: one declarative entry per reproduced table or figure (DESIGN.md, "the spine").

Each :class:`Spec` says what a file in ``figures/`` is and how it is judged:

- ``builder``: the ``vqalib`` function that computes it; ``notebook``: where it is made and narrated;
- ``paper_table``, ``value``, ``keys``: its counterpart in ``data/paper/`` and how cells are matched;
- ``relation`` of each cell to the paper: ``same`` (the same quantity), ``analogous`` (a related
  quantity by another method or on other data), ``fitted`` (a choice was tuned towards the paper,
  e.g. the Lex-Overlap definition), ``self-input`` (recomputed from the paper's own numbers).
  Only ``same`` cells are judged ``within_tolerance``, so only they count as reproduced;
- ``tolerance``: in units of the paper's last printed digit (1 unit of "0.35" is 0.01);
- ``known``: the id of its rows in ``data/paper/known_differences.csv``;
- ``model_derived``: the columns whose values come from a model (embeddings, classifiers, BERTScore,
  NER) and the drift allowed across machines. The package makes these values identical on every
  CPU and thread count it was checked on (float64 and rounding, :mod:`vqalib.encoders`); the
  declared tolerance is the contract for machines it was not, and the tiered check
  (:mod:`vqalib.contract`) compares every other column exactly.

Notebooks compare, save and narrate through :mod:`vqalib.report` with a stem from here; tests iterate
over :data:`TABLES`; the README status table is generated from it (``python -m vqalib.contract readme``).
No tolerance is written anywhere else.
"""

from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass, field

PAPERS = {  # the three papers (../shared/papers), in the order the site and README present them
    "VizWiz-LF": "Long-Form Answers to Visual Questions from Blind and Low Vision People",
    "AFGV": "Accessible VQA Evaluation Using Reading-Level Controlled GQA",
    "CommVQA": "CommVQA: Situating Visual Question Answering in Communicative Contexts",
}
RELATIONS = ("same", "analogous", "fitted", "self-input")
FOLLOWS = "follows"  # a flag or rounded value that may change only where a model-derived value of its row moved


@dataclass(frozen=True)
class Tolerance:
    """How far a reproduced cell may be from the paper's: ``units`` of the paper's last printed digit
    (per value of ``column`` when ``by`` is given). ``decimals`` fixes the printed precision where
    the transcription dropped trailing zeros ("49.8" in a table printed to two decimals)."""

    units: float = 0.0
    column: str | None = None
    by: tuple[tuple[str, float], ...] = ()
    decimals: int | None = None
    decimals_by: tuple[tuple[str, int], ...] = ()  # per value of ``column``

    def units_for(self, value: object) -> float:
        return dict(self.by).get(value, self.units) if self.column else self.units

    def decimals_for(self, value: object, printed: int) -> int:
        if self.column and value in dict(self.decimals_by):
            return dict(self.decimals_by)[value]
        return self.decimals if self.decimals is not None else printed

    def describe(self) -> str:
        """The rule in words (README, provenance): "±2 in the paper's last printed digit (two decimals: ±0.02)"."""
        def one(units: float, decimals: int | None) -> str:
            text = "equal at the paper's printed precision" if units == 0 else f"±{units:g} in the paper's last printed digit"
            if decimals is not None and units:
                text += f" ({decimals} decimals: ±{units * 10.0 ** -decimals:g})"
            return text
        parts = [one(self.units, self.decimals)]
        if self.column:
            values = dict.fromkeys([k for k, _ in self.by] + [k for k, _ in self.decimals_by])
            parts += [f"{k}: {one(self.units_for(k), dict(self.decimals_by).get(k, self.decimals))}" for k in values]
        return "; ".join(parts)


@dataclass(frozen=True)
class Relation:
    """The relation of each cell to the paper: ``default``, or by the value of ``column`` (exact
    values, or shell patterns in ``patterns``), with the reason shown for each non-``same`` kind.
    ``from_column`` takes it from a column the builder fills (``kind: reason``)."""

    default: str = "same"
    column: str | None = None
    values: tuple[tuple[str, str], ...] = ()
    reasons: tuple[tuple[str, str], ...] = ()
    from_column: str | None = None

    def __post_init__(self):
        for kind in [self.default, *dict(self.values).values(), *dict(self.reasons)]:
            if kind not in RELATIONS:
                raise ValueError(f"relation {kind!r} is not one of {RELATIONS}")

    def of(self, row: dict) -> str:
        if self.from_column:
            value = row.get(self.from_column)
            text = self.default if is_nan(value) or value == "" else str(value)  # a paper-only row has none
            kind = text.split(":")[0].strip()
            if kind not in RELATIONS:
                raise ValueError(f"relation {text!r} (column {self.from_column!r}) does not start with one of {RELATIONS}")
            return kind
        if self.column is not None:
            value = row.get(self.column)
            for pattern, kind in self.values:
                if value == pattern or (isinstance(value, str) and fnmatch.fnmatchcase(value, pattern)):
                    return kind
        return self.default

    def reason(self, kind: str) -> str:
        return dict(self.reasons).get(kind, "")


@dataclass(frozen=True)
class ModelDerived:
    """Columns computed from model outputs and the drift each may show across machines: an absolute
    tolerance, or :data:`FOLLOWS` for flags and rounded values derived from them in the same row.
    ``where`` restricts it to rows whose ``column`` value is in the list."""

    columns: tuple[tuple[str, float | str], ...]
    why: str
    where: tuple[str, tuple[str, ...]] | None = None

    def tolerance(self, column: str) -> float | str | None:
        return dict(self.columns).get(column)

    def applies(self, row: dict) -> bool:
        if self.where is None:
            return True
        column, values = self.where
        return str(row.get(column)) in values


@dataclass(frozen=True)
class Spec:
    """One reproduced table or figure (see the module docstring)."""

    stem: str
    notebook: str
    paper: str  # "VizWiz-LF", "CommVQA" or "AFGV"
    reproduces: str  # the paper's name for it ("Table 2", "Fig. 5"), or "" for an extension
    title: str
    builder: str
    kind: str = "table"  # "table" or "figure"
    paper_table: str | None = None
    value: str | tuple[str, ...] | None = None
    keys: tuple[str, ...] = ()
    cells: tuple[str, ...] = ()  # the columns naming a cell in known differences and messages; default ``keys``
    relation: Relation = field(default_factory=Relation)
    tolerance: Tolerance | None = None
    known: str | None = None
    model_derived: ModelDerived | None = None
    data: tuple[str, ...] = ()  # a figure: the tables it is drawn from
    decimals: int = 4  # CSV precision
    md_decimals: int = 2  # Markdown precision

    @property
    def compared(self) -> bool:
        return self.paper_table is not None

    @property
    def cell_keys(self) -> tuple[str, ...]:
        return self.cells or self.keys


def _t(stem, notebook, paper, reproduces, title, builder, **kw) -> Spec:
    return Spec(stem=stem, notebook=notebook, paper=paper, reproduces=reproduces, title=title, builder=builder, **kw)


# --- the reasons shared by several entries ---------------------------------------------------

CLASSIFIER = ("the offline MiniLM + MLP role classifier: float64 features and training, identical on the CPUs "
              "and thread counts checked; a decision flip elsewhere moves a rate by about 1/600")
EMBEDDING = "MiniLM sentence embeddings (float64, rounded to 1e-6: identical on the CPUs and thread counts checked)"
NER = ("spaCy en_core_web_sm in float32 through BLIS, whose kernel is chosen per CPU and cannot be pinned "
       "(BLIS_ARCH_TYPE is not honoured by the installed build): an entity decision may flip on another CPU")
BERTSCORE = "BERTScore (float64 backbone, F1 rounded to 1e-6: identical on the CPUs and thread counts checked)"
OFFLINE_CLASSIFIER = ("analogous: the offline classifier scored against the released labels; the paper scores GPT-4 "
                      "against human labels of its own test set (baselines too), which are not released")

_F = FOLLOWS
_rate = 0.005  # classifier-derived rates and F1: a few decisions of 600 answers
_sim = 1e-4  # means of rounded embedding cosines

ENTRIES: list[Spec] = [
    # --- 01 dataset statistics ----------------------------------------------------------------
    _t("vizwiz-lf_validation_report", "01_dataset_stats", "VizWiz-LF", "", "VizWiz-LF validation report",
       "vqalib.datasets.load_vizwiz_lf"),
    _t("vizwiz-lf_table01_word_counts", "01_dataset_stats", "VizWiz-LF", "Table 1",
       "VizWiz-LF Table 1: words per text (mean, SD), reproduced vs paper", "vqalib.wordcounts.word_count_table",
       paper_table="vizwiz-lf_table01_word_counts", value=("mean_words", "sd_words"),
       keys=("category", "dataset", "column", "statistic"), cells=("category", "column", "statistic"),
       tolerance=Tolerance(units=1), known="table01"),
    # --- 02 functional roles -------------------------------------------------------------------
    _t("vizwiz-lf_table02_roles_by_answerability", "02_functional_roles", "VizWiz-LF", "Table 2",
       "VizWiz-LF Table 2: % of answers with each functional role, reproduced vs paper",
       "vqalib.roles.answers_with_label", paper_table="vizwiz-lf_table02_roles_by_answerability", value="percent",
       keys=("source", "role", "answerability"), tolerance=Tolerance(units=1), known="table02"),
    _t("vizwiz-lf_table03_info_sources", "02_functional_roles", "VizWiz-LF", "Table 3",
       "VizWiz-LF Table 3: % of answers with each information source, reproduced vs paper",
       "vqalib.roles.answers_with_label", paper_table="vizwiz-lf_table03_info_sources", value="percent",
       keys=("source", "info_source", "answerability"), tolerance=Tolerance(units=1), known="table03"),
    _t("vizwiz-lf_table02-03_agreement", "02_functional_roles", "VizWiz-LF", "Tables 2-3",
       "VizWiz-LF Tables 2-3: reproduced vs reported", "vqalib.plots.paper_agreement", kind="figure",
       data=("vizwiz-lf_table02_roles_by_answerability", "vizwiz-lf_table03_info_sources")),
    _t("vizwiz-lf_table15_role_annotation_distribution", "02_functional_roles", "VizWiz-LF", "Table 15",
       "VizWiz-LF Table 15: % of functional-role annotations per source, reproduced vs paper",
       "vqalib.roles.annotation_distribution", paper_table="vizwiz-lf_table15_role_annotation_distribution",
       value="percent", keys=("source", "role"), tolerance=Tolerance(units=100, decimals=2), known="table15"),
    _t("vizwiz-lf_table16_info_annotation_distribution", "02_functional_roles", "VizWiz-LF", "Table 16",
       "VizWiz-LF Table 16: % of information-source annotations per source, reproduced vs paper",
       "vqalib.roles.annotation_distribution", paper_table="vizwiz-lf_table16_info_annotation_distribution",
       value="percent", keys=("source", "info_source"), tolerance=Tolerance(units=100, decimals=2), known="table16"),
    _t("vizwiz-lf_fig05_role_info_cooccurrence", "02_functional_roles", "VizWiz-LF", "Fig. 5",
       "VizWiz-LF Fig. 5: sentences with each (role, information source) pair, all 7 sources",
       "vqalib.roles.role_info_cooccurrence"),
    _t("vizwiz-lf_fig05_role_info_cooccurrence", "02_functional_roles", "VizWiz-LF", "Fig. 5",
       "VizWiz-LF Fig. 5: role x information source", "vqalib.plots.heatmap", kind="figure",
       data=("vizwiz-lf_fig05_role_info_cooccurrence",)),
    _t("vizwiz-lf_role_mix_by_source", "02_functional_roles", "VizWiz-LF", "",
       "Functional-role annotations per source", "vqalib.plots.stacked_shares", kind="figure",
       data=("vizwiz-lf_table15_role_annotation_distribution",)),
    # --- 03 automatic evaluation ---------------------------------------------------------------
    _t("vizwiz-lf_table04_automatic_eval", "03_automatic_eval", "VizWiz-LF", "Table 4",
       "VizWiz-LF Table 4: reference-based metrics on a seeded 120-question sample, reproduced vs paper",
       "vqalib.metrics.table4_rows", paper_table="vizwiz-lf_table04_automatic_eval", value="value",
       keys=("source", "metric", "reference", "candidate"), tolerance=Tolerance(units=2), known="table04",
       relation=Relation(column="metric", values=(("Lex-Overlap (Unigram)", "fitted"), ("BERTScore", "analogous")),
                         reasons=(("fitted", "the paper does not define Lex-Overlap; ours is the definition closest to its "
                                             "column (vizwiz-lf_table04_lex_overlap_definitions)"),
                                  ("analogous", "BERTScore with the offline MiniLM backbone, not the paper's roberta-large "
                                                "(set VQALIB_BERTSCORE_MODEL=roberta-large online)"))),
       model_derived=ModelDerived((("reproduced", 1e-4), ("ci_low", 1e-4), ("ci_high", 1e-4), ("diff", _F),
                                   ("within_tolerance", _F), ("paper_in_ci", _F)), BERTSCORE,
                                  where=("metric", ("BERTScore",)))),
    _t("vizwiz-lf_table04_full_set_bootstrap", "03_automatic_eval", "VizWiz-LF", "Table 4",
       "VizWiz-LF Table 4 extended: all 600 questions x 7 sources, bootstrap 95% CIs", "vqalib.metrics.table4_rows",
       paper_table="vizwiz-lf_table04_automatic_eval", value="value", known="table04_full_set",
       keys=("source", "metric", "reference", "candidate"), tolerance=Tolerance(units=2),
       relation=Relation(default="analogous", reasons=(("analogous", "all 600 questions and 7 sources, not the paper's "
                                                                     "120-question sample; judged on the sample table"),)),
       model_derived=ModelDerived((("reproduced", 1e-4), ("ci_low", 1e-4), ("ci_high", 1e-4), ("diff", _F),
                                   ("paper_in_ci", _F)), BERTSCORE, where=("metric", ("BERTScore",)))),
    _t("vizwiz-lf_table04_lex_overlap_definitions", "03_automatic_eval", "VizWiz-LF", "Table 4",
       "VizWiz-LF Table 4 Lex-Overlap: plausible definitions vs the paper's column (sample)",
       "vqalib.metrics.compare_lexical_definitions"),
    _t("vizwiz-lf_table04_sensitivity", "03_automatic_eval", "VizWiz-LF", "Table 4",
       "VizWiz-LF Table 4 sensitivity: no-Answer-sentence rule x answerable questions (sample)",
       "vqalib.metrics.score_pairs"),
    _t("vizwiz-lf_reference_shift", "03_automatic_eval", "VizWiz-LF", "",
       "Mean score with short vs long references", "vqalib.plots.reference_shift", kind="figure",
       data=("vizwiz-lf_table04_full_set_bootstrap",)),
    _t("vizwiz-lf_table18_metric_human_correlation", "03_automatic_eval", "VizWiz-LF", "Table 18",
       "VizWiz-LF Table 18: Pearson r between metrics and human correctness", "vqalib.metrics.human_correlation"),
    # --- 04 human evaluation (SIMULATED unless a real ratings file is given) --------------------
    *[_t(f"vizwiz-lf_fig02_*_{part}", "04_human_eval_stats", "VizWiz-LF", "Fig. 2", title, builder, decimals=decimals)
      for part, title, builder, decimals in (
          ("ratings", "ratings of a study with the design of VizWiz-LF §6", "vqalib.simulation.simulated_study", 4),
          ("effects", "source effects of the generative model (latent SD units)", "vqalib.simulation.default_effects", 4),
          ("means", "VizWiz-LF Fig. 2 bars: mean normalised score and 95% CI per source",
           "vqalib.stats.figure2_analysis", 4),
          ("friedman", "VizWiz-LF Fig. 2: Friedman tests across sources per group and criterion",
           "vqalib.stats.figure2_analysis", 6),
          ("wilcoxon", "VizWiz-LF Fig. 2: pairwise Wilcoxon tests, Bonferroni x3", "vqalib.stats.figure2_analysis", 6),
          ("rejection_rates", "share of simulated replicates with a significant Friedman test",
           "vqalib.simulation.rejection_rates", 4))],
    _t("vizwiz-lf_fig02_*_bars", "04_human_eval_stats", "VizWiz-LF", "Fig. 2",
       "normalised rankings and ratings (VizWiz-LF Fig. 2 layout)", "vqalib.plots.human_eval_bars", kind="figure",
       data=("vizwiz-lf_fig02_*_means", "vizwiz-lf_fig02_*_wilcoxon")),
    _t("vizwiz-lf_human_correctness", "04_human_eval_stats", "VizWiz-LF", "Table 18",
       "VizWiz-LF Table 18 input: per-answer human correctness (mean of S+I ratings, 0-1)",
       "vqalib.ratings.per_answer_correctness"),
    _t("vizwiz-lf_table19_short_vs_long_survey", "04_human_eval_stats", "VizWiz-LF", "Table 19",
       "VizWiz-LF Table 19: short vs long answers, 8 BLV participants (paper values; not reproducible)",
       "vqalib.report.load_paper_table", paper_table="vizwiz-lf_table19_short_vs_long_survey", value="value",
       keys=("criterion", "answer_length", "statistic"), tolerance=Tolerance(units=1)),
    _t("vizwiz-lf_table19_preference_binomial", "04_human_eval_stats", "VizWiz-LF", "Table 19",
       "VizWiz-LF Table 19 / §6: binomial test of a 75% long-form preference by number of survey questions, "
       "and which numbers fit Table 19's means and SDs", "vqalib.stats.preference_binomial", decimals=15),
    # --- 05 abstention -------------------------------------------------------------------------
    _t("vizwiz-lf_table05_abstention", "05_abstention", "VizWiz-LF", "Table 5",
       "VizWiz-LF Table 5: abstention (vanilla column reproduced; other columns need model runs)",
       "vqalib.abstention.abstention_metrics", paper_table="vizwiz-lf_table05_abstention", value="value",
       keys=("model", "method", "metric"), known="table05",
       tolerance=Tolerance(units=2, decimals=2, column="metric", decimals_by=(("abs-%", 0),)),
       relation=Relation(column="model", values=(("Random", "analogous"),),
                         reasons=(("analogous", "the expectation of the random baseline; the paper's row is one "
                                                "unseeded draw"),)),
       model_derived=ModelDerived((("reproduced", _rate), ("diff", _F), ("within_tolerance", _F)),
                                  CLASSIFIER + " (model runs only)", where=("method", ("prompt",)))),
    _t("vizwiz-lf_table05_definition_variants", "05_abstention", "VizWiz-LF", "Table 5",
       "VizWiz-LF Table 5 diagnosis: abstention metrics under alternative definitions",
       "vqalib.abstention.definition_variants"),
    _t("vizwiz-lf_table26_abstention_strategies", "05_abstention", "VizWiz-LF", "Table 26",
       "VizWiz-LF Table 26: abstention strategies (vanilla reproduced; others need model runs)",
       "vqalib.abstention.abstention_metrics", paper_table="vizwiz-lf_table26_abstention_strategies", value="value",
       keys=("model", "method", "metric"), known="table26",
       tolerance=Tolerance(units=2, decimals=2, column="metric", decimals_by=(("abs-%", 0),)),
       relation=Relation(column="method", values=(("Random", "analogous"),),
                         reasons=(("analogous", "the expectation of the random baseline; the paper's row is one "
                                                "unseeded draw"),))),
    _t("vizwiz-lf_fig03_role_mix_strategies", "05_abstention", "VizWiz-LF", "Fig. 3",
       "VizWiz-LF Fig. 3: role mix before/after the abstention instruction (offline classifier)",
       "vqalib.abstention.strategy_role_mix",
       model_derived=ModelDerived((("percent", 0.5),), CLASSIFIER)),
    _t("vizwiz-lf_fig03_role_mix_strategies", "05_abstention", "VizWiz-LF", "Fig. 3",
       "Functional roles before/after the abstention instruction", "vqalib.plots.stacked_shares", kind="figure",
       data=("vizwiz-lf_fig03_role_mix_strategies",)),
    _t("vizwiz-lf_answerability_agreement", "05_abstention", "VizWiz-LF", "§7.2",
       "VizWiz-LF §7.2: expert abstention vs crowd answerability", "vqalib.abstention.answerability_agreement"),
    _t("vizwiz-lf_table09_role_classifier_f1", "05_abstention", "VizWiz-LF", "Table 9",
       "VizWiz-LF Table 9: per-role F1, offline classifier vs released labels (paper: GPT-4 vs human labels)",
       "vqalib.classify.cross_validate", paper_table="vizwiz-lf_table09_role_classifier_f1", value="f1",
       keys=("model", "role"), tolerance=Tolerance(units=5, decimals=2), known="table09",
       relation=Relation(default="analogous", reasons=(("analogous", OFFLINE_CLASSIFIER),)),
       model_derived=ModelDerived((("reproduced", _rate), ("diff", _F), ("within_tolerance", _F)), CLASSIFIER,
                                  where=("model", ("MiniLM + context (mlp)",)))),
    _t("vizwiz-lf_table10_info_classifier_f1", "05_abstention", "VizWiz-LF", "Table 10",
       "VizWiz-LF Table 10: per-source F1, offline classifier vs released labels (paper: GPT-4 vs human labels)",
       "vqalib.classify.cross_validate", paper_table="vizwiz-lf_table10_info_classifier_f1", value="f1",
       keys=("model", "info_source"), tolerance=Tolerance(units=5, decimals=2), known="table10",
       relation=Relation(default="analogous", reasons=(("analogous", OFFLINE_CLASSIFIER),)),
       model_derived=ModelDerived((("reproduced", _rate), ("diff", _F), ("within_tolerance", _F)), CLASSIFIER,
                                  where=("model", ("MiniLM + context (mlp)",)))),
    _t("vizwiz-lf_classifier_label_noise", "05_abstention", "VizWiz-LF", "Tables 9-10",
       "VizWiz-LF released sentence labels: noise measures", "vqalib.classify.label_noise",
       model_derived=ModelDerived((("value", _rate), ("n", 3)), CLASSIFIER,
                                  where=("measure", ("misaligned_answers", "rotated_answers")))),
    _t("vizwiz-lf_table05_abstention_offline_classifier", "05_abstention", "VizWiz-LF", "Table 5",
       "VizWiz-LF Table 5 with abstention from the offline classifier, and its agreement with the labels",
       "vqalib.classify.abstention_agreement",
       model_derived=ModelDerived(tuple((c, _rate) for c in (
           "abstain_predicted", "agreement", "agreement_ci_low", "agreement_ci_high", "kappa", "agreement_next_answer",
           "kappa_next_answer", "abs-acc", "abs-prec", "abs-recall", "abs-f1")) + (("abs-%", 0.5),), CLASSIFIER)),
    _t("vizwiz-lf_table05_abstention_decision_rules", "05_abstention", "VizWiz-LF", "Table 5",
       "VizWiz-LF abstention from the offline classifier: agreement with the labels under two answer-level rules",
       "vqalib.classify.abstention_decision_variants",
       model_derived=ModelDerived((("agreement", _rate), ("threshold", 0.05)), CLASSIFIER)),
    _t("vizwiz-lf_table05_abstention_labels_vs_classifier", "05_abstention", "VizWiz-LF", "Table 5",
       "VizWiz-LF Table 5 vanilla rows: abstention from the released labels vs the offline classifier, beside the paper",
       "vqalib.abstention.decision_comparison",
       model_derived=ModelDerived((("offline_classifier", _rate), ("closer_to_paper", _F)), CLASSIFIER)),
    _t("vizwiz-lf_llm_role_classifier_sample", "05_abstention", "VizWiz-LF", "Tables 11-14",
       "VizWiz-LF few-shot LLM role classifier on a sample of answers", "vqalib.classify.llm_classify"),
    # --- 06 AFGV -------------------------------------------------------------------------------
    _t("afgv_rewrites_accessibility_questions", "06_afgv_tiers", "AFGV", "",
       "AFGV rewrites of the VizWiz-LF and CommVQA questions (every question, every tier; where no rewrite "
       "moves FK the tier's way the row keeps the original and its status says why)",
       "vqalib.afgv.rewrite_questions",
       model_derived=ModelDerived((("intent_similarity", _sim),), EMBEDDING)),
    _t("afgv_table02_readability_by_tier", "06_afgv_tiers", "AFGV", "Table 2",
       "AFGV Table 2 layout: syllables and FK grade per tier, per question set (paper: GQA); simplified and "
       "complex over the questions with a rewrite in that tier, baseline over all, questions left out counted by reason",
       "vqalib.afgv.readability_table"),
    _t("afgv_intent_filter", "06_afgv_tiers", "AFGV", "",
       "AFGV intent filter: rewrites below the MiniLM cosine threshold per tier", "vqalib.afgv.intent_filter_table",
       model_derived=ModelDerived((("removed", 2), ("share_removed", 0.002), ("mean_similarity", _sim)), EMBEDDING)),
    _t("afgv_fk_by_tier", "06_afgv_tiers", "AFGV", "Table 2",
       "Flesch–Kincaid grade by tier (questions with a rewrite in the tier; baseline: all questions)",
       "vqalib.plots.tier_distribution", kind="figure", data=("afgv_rewrites_accessibility_questions",)),
    _t("afgv_table01_tier_accuracy", "06_afgv_tiers", "AFGV", "Table 1",
       "AFGV Table 1: CI, z and CI separation recomputed from the printed accuracies (N = 20,000)",
       "vqalib.afgv.table1_from_accuracies", paper_table="afgv_table01_tier_accuracy", value="value",
       keys=("model", "tier", "metric"), known="afgv_table01",
       # CI, z and separation inherit the rounding of the 3-decimal accuracies
       tolerance=Tolerance(units=0, column="metric", by=(("ci95_low", 1), ("ci95_high", 1), ("delta_vs_baseline", 1),
                                                          ("z_score", 25), ("min_ci_separation", 15))),
       relation=Relation(default="self-input", reasons=(("self-input", "recomputed from the paper's own printed "
                                                                       "accuracies: a check of its arithmetic"),))),
    _t("afgv_table01_implied_n", "06_afgv_tiers", "AFGV", "Table 1",
       "AFGV Table 1: the sample size each printed 95% CI implies, and LLaVA-1.5's z and CI separation "
       "recomputed at n = 5,000", "vqalib.afgv.implied_n"),
    _t("afgv_tier_accuracy_predictions", "06_afgv_tiers", "AFGV", "Table 1",
       "AFGV tier accuracy (exact match, Wald CI, z vs baseline)", "vqalib.afgv.tier_accuracy",
       model_derived=ModelDerived((("answer_similarity", _sim),), EMBEDDING)),
    _t("afgv_tier_accuracy_by_question_type", "06_afgv_tiers", "AFGV", "Discussion table",
       "AFGV tier accuracy by question type", "vqalib.afgv.tier_accuracy"),
    _t("afgv_intent_deltas", "06_afgv_tiers", "AFGV", "",
       "AFGV accuracy change for intent-preserved vs intent-shifted rewrites", "vqalib.afgv.intent_deltas",
       model_derived=ModelDerived(tuple((c, _rate) for c in ("accuracy", "baseline_accuracy", "delta_vs_baseline",
                                                            "shifted_to_preserved_ratio")) + (("n", 2),), EMBEDDING)),
    # --- 07 CommVQA ----------------------------------------------------------------------------
    _t("commvqa_validation_report", "07_commvqa_context", "CommVQA", "",
       "CommVQA: validation report of the annotations and the four result files", "vqalib.commvqa.load_commvqa"),
    _t("commvqa_table01_benchmark", "07_commvqa_context", "CommVQA", "Table 1",
       "CommVQA Table 1 under the authors' protocol, reproduced vs paper", "vqalib.commvqa.score_protocol",
       paper_table="commvqa_table01_benchmark", value="value", keys=("model", "condition", "metric"),
       tolerance=Tolerance(units=0), known="commvqa_table01", md_decimals=3),
    _t("commvqa_table01_bleu4_variants", "07_commvqa_context", "CommVQA", "Table 1",
       "CommVQA Table 1, BLIP-2 (contextual): BLEU-1/4 under variants of the authors' protocol",
       "vqalib.commvqa.bleu_variants"),
    _t("commvqa_table01_protocols", "07_commvqa_context", "CommVQA", "Table 1",
       "CommVQA Table 1: authors' protocol, parsed references on the same subsets, corrected protocol (95% CI)",
       "vqalib.commvqa.protocol_steps"),
    _t("commvqa_table01_protocols", "07_commvqa_context", "CommVQA", "Table 1",
       "CommVQA Table 1: authors' protocol vs corrected protocol", "vqalib.plots.protocol_comparison", kind="figure",
       data=("commvqa_table01_protocols",)),
    _t("commvqa_table01_context_effect", "07_commvqa_context", "CommVQA", "Table 1",
       "CommVQA Table 1: contextual minus baseline, corrected protocol, paired bootstrap 95% CI",
       "vqalib.commvqa.context_effect"),
    _t("commvqa_table01_reference_parsing", "07_commvqa_context", "CommVQA", "Table 1",
       "CommVQA Table 1: how the authors' comma-split references differ from the parsed lists",
       "vqalib.commvqa.reference_parsing_effects"),
    _t("commvqa_table01_subsets", "07_commvqa_context", "CommVQA", "Table 1",
       "CommVQA Table 1: scores of the authors' three 80% subsets under both reference parsings",
       "vqalib.commvqa.score_protocol"),
    _t("commvqa_context_counts", "07_commvqa_context", "CommVQA", "§3",
       "CommVQA: questions, answers, images and image-context pairs per context and subset",
       "vqalib.commvqa.context_counts"),
    _t("commvqa_answer_length", "07_commvqa_context", "CommVQA", "§4.3",
       "CommVQA: words and characters per human answer, by subset and context (95% CI)", "vqalib.commvqa.answer_length"),
    _t("commvqa_hedges", "07_commvqa_context", "CommVQA", "§4.3",
       "CommVQA: hedges in human answers, occurrences and share of answers, by subset and context",
       "vqalib.commvqa.hedge_counts"),
    _t("commvqa_top_trigrams", "07_commvqa_context", "CommVQA", "§4.3",
       "CommVQA: the most common trigrams of the human answers, by subset", "vqalib.commvqa.top_trigrams"),
    _t("commvqa_polar_answers", "07_commvqa_context", "CommVQA", "A.2.2",
       "CommVQA A.2.2: polar questions and how their answers go beyond yes/no, by subset",
       "vqalib.commvqa.polar_answers"),
    _t("commvqa_interrogatives_welch", "07_commvqa_context", "CommVQA", "§4.2",
       "CommVQA §4.2: interrogative words per context vs the rest, Welch's t-tests, by subset",
       "vqalib.commvqa.interrogative_tests"),
    _t("commvqa_fig05_entities_by_context", "07_commvqa_context", "CommVQA", "Figs. 3, 5",
       "CommVQA Figures 3 and 5: named entities per human answer by context and subset (95% CI)",
       "vqalib.commvqa.entity_rates",
       model_derived=ModelDerived((("mentions", 3), ("per_answer", 0.002), ("ci_low", 0.002), ("ci_high", 0.002)), NER)),
    _t("commvqa_fig05_entities_by_context", "07_commvqa_context", "CommVQA", "Fig. 5",
       "CommVQA Fig. 5: named entities in human answers, benchmark subset", "vqalib.plots.rates_by_context",
       kind="figure", data=("commvqa_fig05_entities_by_context",)),
    _t("commvqa_fig03_org_person", "07_commvqa_context", "CommVQA", "Fig. 3",
       "CommVQA Figure 3: ORG vs PERSON mentions, travel vs science magazines (log odds ratio, Fisher)",
       "vqalib.commvqa.org_person_interaction",
       model_derived=ModelDerived((("org_a", 2), ("person_a", 2), ("org_b", 2), ("person_b", 2), ("log_odds_ratio", 0.3),
                                   ("se", 0.1), ("z", 0.5), ("p_wald", _F), ("p_fisher", _F)), NER)),
    _t("commvqa_entity_overlap", "07_commvqa_context", "CommVQA", "§5.1",
       "CommVQA §5.1: share of a model's named entities found in the human answers", "vqalib.commvqa.entity_overlap",
       model_derived=ModelDerived((("unique_entities", 3), ("found_in_references", 3), ("share_found", 0.005),
                                   ("not_found", 3), ("share_numeric_of_not_found", 0.005),
                                   ("share_date_time_of_not_found", 0.005)), NER)),
    _t("commvqa_context_classifier", "07_commvqa_context", "CommVQA", "§4.2",
       "CommVQA §4.2: 6-way context prediction from the question, cross-validated accuracy vs chance",
       "vqalib.context.context_classifier",
       model_derived=ModelDerived((("accuracy", _rate), ("fold_mean", _rate), ("fold_sd", _rate),
                                   ("p_binomial_vs_chance", _F)), EMBEDDING)),
    _t("commvqa_fig02_pairwise_accuracy", "07_commvqa_context", "CommVQA", "Fig. 2",
       "CommVQA Figure 2: pairwise context classification accuracy (cross-validated)", "vqalib.context.pairwise_accuracy",
       model_derived=ModelDerived((("accuracy", _rate), ("fold_sd", _rate)), EMBEDDING)),
    _t("commvqa_fig02_pairwise_accuracy", "07_commvqa_context", "CommVQA", "Fig. 2",
       "CommVQA Fig. 2: telling two contexts apart from the question", "vqalib.plots.accuracy_heatmap", kind="figure",
       data=("commvqa_fig02_pairwise_accuracy",)),
    _t("commvqa_fig04_description_similarity", "07_commvqa_context", "CommVQA", "Fig. 4",
       "CommVQA Figure 4: cosine similarity of answers to the image description (95% CI), benchmark",
       "vqalib.context.similarity_summary",
       model_derived=ModelDerived((("mean", _sim), ("sd", _sim), ("ci_low", _sim), ("ci_high", _sim)), EMBEDDING)),
    _t("commvqa_fig04_similarity_tests", "07_commvqa_context", "CommVQA", "Fig. 4",
       "CommVQA Figure 4: baseline vs contextual description similarity, Welch and paired t-tests",
       "vqalib.context.similarity_tests",
       model_derived=ModelDerived((("baseline_mean", _sim), ("contextual_mean", _sim), ("difference", _sim),
                                   ("welch_t", 0.01), ("welch_df", 0.5), ("welch_p", _F), ("stars", _F),
                                   ("paired_t", 0.01), ("paired_p", _F)), EMBEDDING)),
    _t("commvqa_fig04_description_similarity", "07_commvqa_context", "CommVQA", "Fig. 4",
       "CommVQA Fig. 4: similarity of answers to the description", "vqalib.plots.description_similarity_bars",
       kind="figure", data=("commvqa_fig04_description_similarity", "commvqa_fig04_similarity_tests")),
    _t("commvqa_text_facts", "07_commvqa_context", "CommVQA", "text",
       "CommVQA: numbers stated in the paper's text beside ours (same quantity or analogous)",
       "vqalib.commvqa.paper_facts", paper_table="commvqa_text_facts", value="value", keys=("fact_id",),
       cells=("fact_id", "subset"),
       known="commvqa_text_facts", tolerance=Tolerance(units=0), relation=Relation(from_column="relation"),
       model_derived=ModelDerived((("reproduced", 0.5), ("diff", _F), ("within_tolerance", _F)),
                                  EMBEDDING + "; " + NER,
                                  where=("fact_id", ("CV31", "CV32", "CV37", "CV47", "CV48", "CV58", "CV59", "CV60",
                                                     "CV61")))),
]

# --- what the README's status table says about each notebook ------------------------------

@dataclass(frozen=True)
class Headline:
    """A number the README states about a notebook's results, read from ``figures/`` when the README is
    generated (never typed): ``text`` is formatted with the fields of the one row of ``table`` that
    ``where`` selects, or with the values a named summary of :data:`vqalib.report.SUMMARIES` computes."""

    text: str
    table: str = ""
    where: tuple[tuple[str, str], ...] = ()
    summary: str | None = None


@dataclass(frozen=True)
class NotebookStatus:
    """One row of the README status table: what a notebook reproduces, the agreement sentence of each
    compared table (:func:`vqalib.report.agreement_text`), headline numbers and a note without numbers."""

    notebook: str
    reproduces: str
    tables: tuple[str, ...] = ()
    note: str = ""
    headlines: tuple[Headline, ...] = ()


STATUS: tuple[NotebookStatus, ...] = (
    NotebookStatus(
        "01_dataset_stats",
        "VizWiz-LF **Table 1** (words per question, crowd answer, expert and six VLM answers, per category and in "
        "total); the data **validation report**",
        tables=("vizwiz-lf_table01_word_counts",),
        note="the cells outside the tolerance are explained in the notebook: misprints in the paper, and QWEN "
             "answers absent from the release"),
    NotebookStatus(
        "02_functional_roles",
        "VizWiz-LF **Tables 2, 3** (answers with each role / information source, answerable vs unanswerable), "
        "**Tables 15, 16** for all seven sources (the paper shows three), **Fig. 5** (role × information-source "
        "co-occurrence), role mix per source",
        tables=("vizwiz-lf_table02_roles_by_answerability", "vizwiz-lf_table03_info_sources",
                "vizwiz-lf_table15_role_annotation_distribution", "vizwiz-lf_table16_info_annotation_distribution"),
        note="the Table 2 cell outside the tolerance is a probable misprint (Expert Ans. Failure, answerable)"),
    NotebookStatus(
        "03_automatic_eval",
        "VizWiz-LF **Table 4** (Lex-Overlap, ROUGE-L, METEOR, BERTScore, LAVE for s_r/l_r references × l_c/l′_c "
        "candidates) on a seeded sample of the paper's size, the same on all questions and sources with bootstrap 95% "
        "CIs, which Lex-Overlap definition matches the paper, a sensitivity table, the short→long reference shift "
        "figure; **Table 18** hook",
        tables=("vizwiz-lf_table04_automatic_eval",),
        note="LAVE reads \"not run\" until a judge is configured, Table 18 until human ratings are given; every "
             "ROUGE/METEOR cell outside the tolerance is explained in the notebook (unanswerable questions in the s_r "
             "settings, the released Answer labels behind l′_c, the METEOR variant)",
        headlines=(Headline("{inside} of {n} ROUGE/METEOR cells of the paper lie inside the full-set 95% CI",
                            summary="rouge_meteor_paper_in_full_ci"),)),
    NotebookStatus(
        "04_human_eval_stats",
        "VizWiz-LF **Fig. 2** (normalised rankings and ratings, Friedman + pairwise Wilcoxon with Bonferroni) and "
        "**Table 19** with the binomial preference test; the per-answer correctness for **Table 18**",
        note="the study's per-rating data are not public: the whole analysis runs on a **SIMULATED** study of the "
             "paper's design (every output says so), and on a real ratings file when given (`-p ratings_path …`, "
             "schema in `data/ratings/README.md`)"),
    NotebookStatus(
        "05_abstention",
        "VizWiz-LF **Table 5** (vanilla column), **Table 26** vanilla rows, the expert–crowd **answerability "
        "agreement** (§7.2), an alternative-definition diagnosis; the offline role classifier (**Tables 9–10** "
        "layout) and abstention re-derived from it",
        tables=("vizwiz-lf_table05_abstention", "vizwiz-lf_table26_abstention_strategies",
                "vizwiz-lf_table09_role_classifier_f1", "vizwiz-lf_table10_info_classifier_f1"),
        note="GPT-4V's Table 5 row and Random are diagnosed in the notebook (the released GPT-4V labels are "
             "misaligned with their sentences, and re-labelling with the offline classifier comes far closer to the "
             "paper's row; Random is an expectation, the paper's a single draw); strategy columns, **Fig. 3** and the "
             "runs' ans-acc fill themselves from `runs/` (and a judge), else \"not run\"",
        headlines=(Headline("offline classifier: cross-validated weighted F1 {reproduced:.2f} against the released "
                            "role labels", table="vizwiz-lf_table09_role_classifier_f1",
                            where=(("model", "MiniLM + context (mlp)"), ("role", "Average"))),
                   Headline("abstention from it agrees with the label-based decision on at least {criterion:.0%} of "
                            "answers for {n_reached} of {n} sources; Expert {expert:.2f} (95% interval "
                            "{expert_low:.2f}–{expert_high:.2f}), GPT-4V {gpt4v:.2f}",
                            summary="abstention_agreement"))),
    NotebookStatus(
        "06_afgv_tiers",
        "AFGV rewrite pipeline (simplified / baseline / complex tiers) on the VizWiz-LF and CommVQA questions (GQA "
        "when given), **Table 2** layout (syllables and FK per tier), the intent filter, **Table 1**'s CIs, z-scores "
        "and CI separations recomputed from the paper's accuracies, tier accuracy / type breakdown / intent deltas "
        "from predictions",
        tables=("afgv_table01_tier_accuracy",),
        note="tier accuracy fills from AFGV runs in `runs/` (or a predictions CSV), else \"not run\"; LLaVA-1.5's "
             "printed intervals imply a smaller sample (see the notebook)",
        headlines=(Headline("simplified < baseline < complex mean FK grade on {ordered} of {n} question sets",
                            summary="tier_order"),)),
    NotebookStatus(
        "07_commvqa_context",
        "CommVQA **Table 1** (BLEU-1/4, METEOR, ROUGE-L, CIDEr for IDEFICS, mPLUG-Owl, LLaVA and BLIP-2, baseline vs "
        "contextual) under "
        "the authors' protocol and a corrected one with bootstrap CIs; question/answer analysis per context (hedges, "
        "polar questions, interrogatives with Welch tests, named entities; **Figs. 3, 5**); the context classifier "
        "and pairwise heatmap (**Fig. 2**); description similarity (**Fig. 4**); the numbers the paper states in its "
        "text",
        tables=("commvqa_table01_benchmark", "commvqa_text_facts"),
        note="the BLIP-2 contextual BLEU-4 cell outside is explained in the notebook (a probable transcription slip); "
             "CLIPScore \"not run\" (images, CLIP); any new model's rows fill from `runs/`"),
)
ABSTENTION_CRITERION = 0.90  # issue 4's bar for "the classifier's abstention agrees with the labels"


TABLES: dict[str, Spec] = {s.stem: s for s in ENTRIES if s.kind == "table"}
FIGURES: dict[str, Spec] = {s.stem: s for s in ENTRIES if s.kind == "figure"}


def _lookup(entries: dict[str, Spec], stem: str, what: str) -> Spec:
    if stem in entries:
        return entries[stem]
    for pattern, spec in entries.items():
        if any(ch in pattern for ch in "*?[") and fnmatch.fnmatchcase(stem, pattern):
            return spec
    raise KeyError(f"{what} {stem!r} is not in vqalib.registry; every file in figures/ needs an entry "
                   "(builder, relation, tolerance, model-derived columns)")


def table(stem: str) -> Spec:
    """The registry entry of the table saved as ``figures/<stem>.csv``."""
    return _lookup(TABLES, stem, "table")


def figure(stem: str) -> Spec:
    """The registry entry of the figure saved as ``figures/<stem>.png``."""
    return _lookup(FIGURES, stem, "figure")


def spec_for_file(name: str) -> Spec:
    """The entry a file of ``figures/`` belongs to (``x.csv``, ``x.md``: table; ``x.png``, ``.pdf``, ``.alt.txt``: figure)."""
    for suffix, find in ((".alt.txt", figure), (".png", figure), (".pdf", figure), (".csv", table), (".md", table)):
        if name.endswith(suffix):
            return find(name[: -len(suffix)])
    raise KeyError(f"{name}: not a table or figure file")


def tolerance_rules() -> list[dict]:
    """Every declared rule, one row per entry (provenance, README)."""
    rows = []
    for spec in ENTRIES:
        if spec.kind != "table":
            continue
        md = spec.model_derived
        rows.append({"stem": spec.stem, "notebook": spec.notebook, "reproduces": f"{spec.paper} {spec.reproduces}".strip(),
                     "paper_table": spec.paper_table or "",
                     "tolerance": spec.tolerance.describe() if spec.tolerance else "",
                     "relation": spec.relation.default if not spec.relation.from_column else f"from column {spec.relation.from_column}",
                     "relation_overrides": "; ".join(f"{k} -> {v}" for k, v in spec.relation.values),
                     "model_derived": "" if md is None else ", ".join(
                         f"{c} ({'follows' if t == FOLLOWS else f'±{t:g}'})" for c, t in md.columns)
                     + ("" if md is None or md.where is None else f" where {md.where[0]} in {list(md.where[1])}"),
                     "model_derived_why": "" if md is None else md.why})
    return rows


def absolute_tolerance(spec: Spec, row: dict, printed_decimals: int) -> tuple[float, int]:
    """(absolute tolerance, decimals compared) of one cell of ``spec``'s comparison."""
    rule = spec.tolerance or Tolerance()
    key = row.get(rule.column) if rule.column else None
    decimals = rule.decimals_for(key, printed_decimals)
    return rule.units_for(key) * 10.0 ** (-decimals), decimals


def is_nan(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))
