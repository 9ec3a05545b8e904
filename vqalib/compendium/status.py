"""The README's status table (:func:`update_readme_status`): per notebook, the tables it compares, headline numbers
read from ``figures/`` (never typed) and a note without numbers."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from vqalib.core import registry
from vqalib.core.io import project_root, write_atomic
from vqalib.core.metrics.catalog import metric
from vqalib.core.report import agreement_text
from vqalib.papers.afgv.tables import tier_order_summary
from vqalib.papers.vizwiz_lf.classifier_tables import abstention_agreement_summary
from vqalib.papers.vizwiz_lf.roles import label_total_gap
from vqalib.papers.vizwiz_lf.scorecard import round_trip_summary
from vqalib.papers.vizwiz_lf.table4_tables import full_set_ci_summary

# --- what the README's status table says about each notebook ------------------------------

@dataclass(frozen=True)
class Headline:
    """A number the README states about a notebook's results, formatted from the one row ``where`` selects of
    ``table``, or from a named summary of :data:`SUMMARIES`, when the README is generated."""

    text: str
    table: str = ""
    where: tuple[tuple[str, str], ...] = ()
    summary: str | None = None


@dataclass(frozen=True)
class NotebookStatus:
    """One row of the README status table: what a notebook reproduces, its compared tables, headlines and a note."""

    notebook: str
    reproduces: str
    note: str = ""
    headlines: tuple[Headline, ...] = ()


_COUNTED_APART = ("the paper counted a different set of annotations: its percentages are whole counts of its own "
                  "label totals, not of the release's")
_CLASSIFIERS = ("offline classifiers scored against the released labels, analogous to the paper's GPT-4 scored against "
                "human labels of its own test set, which are not released")

NLTK_METEOR = metric("meteor_nltk").label  # the declared protocol's METEOR variant, named as the catalog names it

# why each compared table agrees with the paper as far as it does, one line without numbers (README and site)
REASONS = {
    "vizwiz-lf_table01_word_counts": "the cells outside are misprints in the paper, and QWEN answers absent from the "
                                     "release (see the notebook)",
    "vizwiz-lf_table02_roles_by_answerability": "the cell outside is a probable misprint (Expert Ans. Failure, "
                                                "answerable)",
    "vizwiz-lf_table03_info_sources": "",
    "vizwiz-lf_table15_role_annotation_distribution": _COUNTED_APART,
    "vizwiz-lf_table16_info_annotation_distribution": _COUNTED_APART,
    "vizwiz-lf_table04_automatic_eval": "each cell outside is explained with committed evidence (the sample draw, the "
                                        "protocol) or counted as unexplained; Lex-Overlap is fitted and BERTScore runs "
                                        "an offline backbone, so neither is counted; LAVE reads \"not run\" until a "
                                        "judge is configured",
    "vizwiz-lf_table04_full_set_bootstrap": "all questions and sources, not the paper's sample: shown with bootstrap "
                                            "95% CIs and judged on the sample table instead",
    "vizwiz-lf_table04_declared_protocol": f"the declared protocol's fitted choices ({NLTK_METEOR}, chosen for "
                                           "closeness, not named by the paper; GPT-4V's l′_c labels; the "
                                           "no-Answer-sentence rule) are counted apart from the reproduced cells; its "
                                           "ROUGE cells repeat the all-questions table's",
    "vizwiz-lf_table19_short_vs_long_survey": "the survey's per-response data are not public, so no cell can be "
                                              "recomputed",
    "vizwiz-lf_table05_abstention": "GPT-4V's row differs because the released GPT-4V labels are misaligned with their "
                                    "sentences; Random is an expectation, the paper's a single draw; the strategy "
                                    "columns and ans-acc need model runs in `runs/` and a judge",
    "vizwiz-lf_table26_abstention_strategies": "its vanilla and baseline rows repeat Table 5's vanilla column; the "
                                               "strategy rows need model runs in `runs/`",
    "vizwiz-lf_table09_role_classifier_f1": _CLASSIFIERS,
    "vizwiz-lf_table10_info_classifier_f1": _CLASSIFIERS,
    "afgv_table01_tier_accuracy": "the paper's own accuracies are the input (self-input): its intervals, z-scores and "
                                  "separations are recomputed from them; LLaVA-1.5's printed intervals imply a smaller "
                                  "sample",
    "commvqa_text_facts": "the release is larger than the paper's dataset, so text counts are shown for both "
                          "populations",
    "commvqa_table01_benchmark": "the BLIP-2 contextual BLEU-4 cell outside is a probable transcription slip; "
                                 "CLIPScore is not run (images, CLIP)",
}


def compared_tables(notebook: str) -> list[str]:
    """The compared tables a notebook saves, in registry order (the README status table's and the site's list)."""
    return [stem for stem, spec in registry.TABLES.items()
            if spec.compared and "*" not in stem and spec.notebook == notebook]


def table_reason(stem: str) -> str:
    """The one-line reason of a compared table (:data:`REASONS`), "" where nothing needs saying; none is an error."""
    if stem not in REASONS:
        raise KeyError(f"{stem}: a compared table needs a one-line reason in vqalib.compendium.status.REASONS")
    return REASONS[stem]


STATUS: tuple[NotebookStatus, ...] = (
    NotebookStatus(
        "01_dataset_stats",
        "VizWiz-LF **Table 1** (words per question, crowd answer, expert and six VLM answers, per category and in "
        "total); the data **validation report**",
),
    NotebookStatus(
        "02_functional_roles",
        "VizWiz-LF **Tables 2, 3** (answers with each role / information source, answerable vs unanswerable), "
        "**Tables 15, 16** for all seven sources (the paper shows three), **Fig. 5** (role × information-source "
        "co-occurrence), role mix per source",
        headlines=(Headline("Table 15's largest gap: for {source} the paper counts {paper_n:,} role labels, the "
                            "release {n:,} ({gap})", summary="table15_label_gap"),
                   Headline("Table 16's: for {source} the paper counts {paper_n:,} information-source labels, the "
                            "release {n:,} ({gap})", summary="table16_label_gap"))),
    NotebookStatus(
        "03_automatic_eval",
        "VizWiz-LF **Table 4** (Lex-Overlap, ROUGE-L, METEOR, BERTScore, LAVE for s_r/l_r references × l_c/l′_c "
        "candidates) on a seeded sample of the paper's size, the same on all questions and sources with bootstrap 95% "
        "CIs, the grid of scoring protocols the paper leaves open and **one declared protocol** for the whole table, a "
        "seed sweep of the paper's sample design, which Lex-Overlap definition matches the paper, the short→long "
        "reference shift figure; **Table 18** hook",
        note="Table 18 reads \"not run\" until human ratings are given",
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
        "layout; frozen features + MLP and fine-tuned MiniLM, the better one labelling answers) and abstention "
        "re-derived from it",
        note="re-labelling GPT-4V's answers with the offline classifier comes far closer to the paper's Table 5 row "
             "(see the notebook); strategy columns, **Fig. 3** and the runs' ans-acc fill themselves from `runs/` (and "
             "a judge), else \"not run\"",
        headlines=(Headline("offline classifiers' cross-validated weighted F1 against the released role labels: "
                            "MiniLM features + MLP {reproduced:.2f}", table="vizwiz-lf_table09_role_classifier_f1",
                            where=(("model", "MiniLM + context (mlp)"), ("role", "Average"))),
                   Headline("fine-tuned MiniLM {reproduced:.2f}", table="vizwiz-lf_table09_role_classifier_f1",
                            where=(("model", "MiniLM fine-tuned"), ("role", "Average"))),
                   Headline("abstention from the one that labels answers agrees with the label-based decision on at least {criterion:.0%} of "
                            "answers for {n_reached} of {n} sources; Expert {expert:.3f} (95% interval "
                            "{expert_low:.3f}–{expert_high:.3f}), GPT-4V {gpt4v:.3f}",
                            summary="abstention_agreement"))),
    NotebookStatus(
        "06_afgv_tiers",
        "AFGV rewrite pipeline (simplified / baseline / complex tiers) on the VizWiz-LF and CommVQA questions (GQA "
        "when given), **Table 2** layout (syllables and FK per tier), the intent filter, **Table 1**'s CIs, z-scores "
        "and CI separations recomputed from the paper's accuracies, tier accuracy / type breakdown / intent deltas "
        "from predictions",
        note="tier accuracy fills from AFGV runs in `runs/` (or a predictions CSV), else \"not run\"",
        headlines=(Headline("simplified < baseline < complex mean FK grade on {ordered} of {n} question sets",
                            summary="tier_order"),)),
    NotebookStatus(
        "07_commvqa_context",
        "CommVQA question/answer analysis per context (hedges, polar questions, interrogatives with Welch tests, "
        "named entities; **Figs. 3, 5**); the context classifier and pairwise heatmap (**Fig. 2**); description "
        "similarity (**Fig. 4**); the numbers the paper states in its text",
),
    NotebookStatus(
        "08_commvqa_benchmark",
        "CommVQA **Table 1** (BLEU-1/4, METEOR, ROUGE-L, CIDEr for IDEFICS, mPLUG-Owl, LLaVA and BLIP-2, baseline vs "
        "contextual) under the authors' protocol and a corrected one with bootstrap CIs; what each protocol "
        "difference does; the paired context effect",
        note="any new model's rows fill from `runs/`"),
    NotebookStatus(
        "09_score_a_model",
        "`vqalib score` on a model's answers: LLaVA's released VizWiz-LF answers given back as a plain file and scored "
        "as a new model (Tables 1–5, paired differences to the released models, the classifier's measured error); "
        "its scorecard in `scores/llava-released/`",
        note="the same path scores answers from `vqalib run`, lmms-eval and VLMEvalKit (README, \"Evaluate your own "
             "model\")",
        headlines=(Headline("the scorecard equals `figures/` to 4 decimals in {equal} of {n} label-free and "
                            "offline-classifier cells", summary="score_round_trip"),)),
)

# the named summaries a Headline may use: the saved table each reads and the paper function that summarises it
SUMMARIES = {"rouge_meteor_paper_in_full_ci": ("vizwiz-lf_table04_full_set_bootstrap", full_set_ci_summary),
             "abstention_agreement": ("vizwiz-lf_table05_abstention_offline_classifier",
                                      abstention_agreement_summary),
             "tier_order": ("afgv_table02_readability_by_tier", tier_order_summary),
             "table15_label_gap": ("vizwiz-lf_table15_role_annotation_distribution", label_total_gap),
             "table16_label_gap": ("vizwiz-lf_table16_info_annotation_distribution", label_total_gap),
             "score_round_trip": ("vizwiz-lf_score_round_trip", round_trip_summary)}


def _read_figure_table(figures: Path, stem: str) -> pd.DataFrame:
    return pd.read_csv(Path(figures) / f"{stem}.csv")


def headline_text(headline: Headline, *, figures: Path) -> str:
    """A README headline with its numbers read from ``figures/``."""
    if headline.summary:
        stem, summarise = SUMMARIES[headline.summary]
        return headline.text.format(**summarise(_read_figure_table(figures, stem)))
    rows = _read_figure_table(figures, headline.table)
    for column, value in headline.where:
        rows = rows[rows[column].astype(str) == value]
    if len(rows) != 1:
        raise ValueError(f"headline {headline.text!r}: {len(rows)} rows of {headline.table} match {headline.where}")
    return headline.text.format(**rows.iloc[0].to_dict())


def _sentence(text: str) -> str:
    return text[0].upper() + text[1:] + ("" if text.endswith(".") else ".")


def status_markdown(*, figures: Path | None = None) -> str:
    """The README table "What each notebook reproduces", every number in it read from ``figures/``."""
    figures = Path(figures) if figures is not None else project_root() / "figures"
    lines = ["| notebook | reproduces | status |", "|---|---|---|"]
    for row in STATUS:
        parts = []
        for stem in compared_tables(row.notebook):
            if (figures / f"{stem}.csv").exists():
                reason = table_reason(stem)
                parts.append(agreement_text(_read_figure_table(figures, stem), stem)
                             + (f" {_sentence(reason)}" if reason else ""))
        parts += [_sentence(headline_text(h, figures=figures)) for h in row.headlines]
        if row.note:
            parts.append(_sentence(row.note))
        lines.append(f"| `{row.notebook}` | {row.reproduces} | {' '.join(parts)} |")
    return "\n".join(lines) + "\n"


STATUS_BEGIN = "<!-- status: generated by `vqalib readme` from the table registry and figures/ -->"
STATUS_END = "<!-- status: end -->"


def update_readme_status(readme: Path | None = None, *, figures: Path | None = None) -> bool:
    """Rewrite the generated status table of README.md between its markers; returns whether the file changed.

    Parameters
    ----------
    readme : Path, optional
        The README to rewrite (default ``<project>/README.md``).
    figures : Path, optional
        The folder of saved tables (default ``<project>/figures``).
    """
    readme = Path(readme) if readme is not None else project_root() / "README.md"
    text = readme.read_text(encoding="utf-8")
    if STATUS_BEGIN not in text or STATUS_END not in text:
        raise ValueError(f"{readme}: no generated status block ({STATUS_BEGIN!r} ... {STATUS_END!r})")
    head, rest = text.split(STATUS_BEGIN, 1)
    _, tail = rest.split(STATUS_END, 1)
    new = f"{head}{STATUS_BEGIN}\n{status_markdown(figures=figures)}{STATUS_END}{tail}"
    if new != text:
        write_atomic(readme, new.encode("utf-8"))
    return new != text
