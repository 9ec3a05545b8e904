"""What the README's status table says about each notebook (:func:`vqalib.compendium.status.update_readme_status`):
the tables it compares, headline numbers read from ``figures/`` (never typed) and a note without numbers."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from vqalib.core.io import project_root, write_atomic
from vqalib.core.report import agreement_text
from vqalib.papers.afgv.tables import tier_order_summary
from vqalib.papers.vizwiz_lf.classifier_tables import abstention_agreement_summary
from vqalib.papers.vizwiz_lf.scorecard import round_trip_summary
from vqalib.papers.vizwiz_lf.table4_report import full_set_ci_summary

# --- what the README's status table says about each notebook ------------------------------

@dataclass(frozen=True)
class Headline:
    """A number the README states about a notebook's results, read from ``figures/`` when the README is
    generated (never typed): ``text`` is formatted with the fields of the one row of ``table`` that
    ``where`` selects, or with the values a named summary of :data:`vqalib.compendium.status.SUMMARIES` computes."""

    text: str
    table: str = ""
    where: tuple[tuple[str, str], ...] = ()
    summary: str | None = None


@dataclass(frozen=True)
class NotebookStatus:
    """One row of the README status table: what a notebook reproduces, the agreement sentence of each
    compared table (:func:`vqalib.core.report.agreement_text`), headline numbers and a note without numbers."""

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
        note="the Table 2 cell outside the tolerance is a probable misprint (Expert Ans. Failure, answerable); the Table "
             "15 and 16 cells outside differ because the paper counted a slightly different set of annotations: its "
             "percentages are whole counts of its own totals, and those counts differ from the release's for a few labels"),
    NotebookStatus(
        "03_automatic_eval",
        "VizWiz-LF **Table 4** (Lex-Overlap, ROUGE-L, METEOR, BERTScore, LAVE for s_r/l_r references × l_c/l′_c "
        "candidates) on a seeded sample of the paper's size, the same on all questions and sources with bootstrap 95% "
        "CIs, the grid of scoring protocols the paper leaves open and **one declared protocol** for the whole table, a "
        "seed sweep of the paper's sample design, which Lex-Overlap definition matches the paper, the short→long "
        "reference shift figure; **Table 18** hook",
        tables=("vizwiz-lf_table04_automatic_eval", "vizwiz-lf_table04_declared_protocol"),
        note="the declared protocol's fitted choices (the METEOR implementation, GPT-4V's l′_c "
             "labels, the no-Answer-sentence rule) are counted apart from the reproduced cells; LAVE reads \"not run\" until a "
             "judge is configured, Table 18 until human ratings are given; each cell outside the tolerance is "
             "explained with committed evidence (the sample draw, the protocol) or counted as unexplained",
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
        tables=("vizwiz-lf_table05_abstention", "vizwiz-lf_table26_abstention_strategies",
                "vizwiz-lf_table09_role_classifier_f1", "vizwiz-lf_table10_info_classifier_f1"),
        note="GPT-4V's Table 5 row and Random are diagnosed in the notebook (the released GPT-4V labels are "
             "misaligned with their sentences, and re-labelling with the offline classifier comes far closer to the "
             "paper's row; Random is an expectation, the paper's a single draw); strategy columns, **Fig. 3** and the "
             "runs' ans-acc fill themselves from `runs/` (and a judge), else \"not run\"",
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
        tables=("afgv_table01_tier_accuracy",),
        note="tier accuracy fills from AFGV runs in `runs/` (or a predictions CSV), else \"not run\"; LLaVA-1.5's "
             "printed intervals imply a smaller sample (see the notebook)",
        headlines=(Headline("simplified < baseline < complex mean FK grade on {ordered} of {n} question sets",
                            summary="tier_order"),)),
    NotebookStatus(
        "07_commvqa_context",
        "CommVQA question/answer analysis per context (hedges, polar questions, interrogatives with Welch tests, "
        "named entities; **Figs. 3, 5**); the context classifier and pairwise heatmap (**Fig. 2**); description "
        "similarity (**Fig. 4**); the numbers the paper states in its text",
        tables=("commvqa_text_facts",),
        note="the release is larger than the paper's dataset, so text counts are shown for both populations"),
    NotebookStatus(
        "08_commvqa_benchmark",
        "CommVQA **Table 1** (BLEU-1/4, METEOR, ROUGE-L, CIDEr for IDEFICS, mPLUG-Owl, LLaVA and BLIP-2, baseline vs "
        "contextual) under the authors' protocol and a corrected one with bootstrap CIs; what each protocol "
        "difference does; the paired context effect",
        tables=("commvqa_table01_benchmark",),
        note="the BLIP-2 contextual BLEU-4 cell outside is explained in the notebook (a probable transcription slip); "
             "CLIPScore \"not run\" (images, CLIP); any new model's rows fill from `runs/`"),
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
             "score_round_trip": ("vizwiz-lf_score_round_trip", round_trip_summary)}


def _read_figure_table(figures: Path, stem: str) -> pd.DataFrame:
    return pd.read_csv(Path(figures) / f"{stem}.csv")


def headline_text(headline: Headline, *, figures: Path) -> str:
    """A README headline with its numbers read from ``figures/``.

    Parameters
    ----------
    headline : Headline
        The headline: a format string and either a named summary or a table and the row to read.
    figures : Path
        The folder of saved tables.

    Returns
    -------
    str
        The headline's text with its numbers filled in.
    """
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
    """The README table "What each notebook reproduces", every number in it read from ``figures/``.

    Parameters
    ----------
    figures : Path, optional
        The folder of saved tables (default ``<project>/figures``).

    Returns
    -------
    str
        The Markdown table, one row per notebook of :data:`STATUS`.
    """
    figures = Path(figures) if figures is not None else project_root() / "figures"
    lines = ["| notebook | reproduces | status |", "|---|---|---|"]
    for row in STATUS:
        parts = [agreement_text(_read_figure_table(figures, stem), stem) for stem in row.tables]
        parts += [_sentence(headline_text(h, figures=figures)) for h in row.headlines]
        if row.note:
            parts.append(_sentence(row.note))
        lines.append(f"| `{row.notebook}` | {row.reproduces} | {' '.join(parts)} |")
    return "\n".join(lines) + "\n"


STATUS_BEGIN = "<!-- status: generated by `vqalib readme` from the table registry and figures/ -->"
STATUS_END = "<!-- status: end -->"


def update_readme_status(readme: Path | None = None, *, figures: Path | None = None) -> bool:
    """Rewrite the generated status table of README.md between its markers.

    Parameters
    ----------
    readme : Path, optional
        The README to rewrite (default ``<project>/README.md``).
    figures : Path, optional
        The folder of saved tables (default ``<project>/figures``).

    Returns
    -------
    bool
        Whether the file changed.
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
