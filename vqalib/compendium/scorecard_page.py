"""A scorecard's accessible page (``index.html``) and figure, in the reviewer site's style: the verdict, where the
answers came from, then each table with the model's rows, beside the released models and beside the paper."""

from __future__ import annotations

import html
from importlib import resources
from pathlib import Path

import pandas as pd

from vqalib.compendium.score import Scorecard, coverage_lines
from vqalib.compendium.scorecard_verdict import verdict_html
from vqalib.compendium.site_html import html_table, page
from vqalib.papers.vizwiz_lf.scorecard import SELF_NOTE, with_notes

TITLES = {
    "vizwiz-lf_table01_word_counts": "VizWiz-LF Table 1: words per answer by question category",
    "vizwiz-lf_table02_roles_by_answerability": "VizWiz-LF Table 2: % of answers with each functional role",
    "vizwiz-lf_table03_info_sources": "VizWiz-LF Table 3: % of answers with each information source",
    "vizwiz-lf_table04_full_set_bootstrap": "VizWiz-LF Table 4: reference-based metrics, all answered questions, "
                                            "bootstrap 95% CIs",
    "vizwiz-lf_table05_abstention": "VizWiz-LF Table 5: abstention against the expert answerability labels",
    "classifier_error": "The offline classifier's measured error (5-fold cross-validation on the released answers)",
    "labelled_by": "How the answers were labelled (out-of-fold labels for answers equal to a released answer)",
    "paired_differences": "This model minus each released model, same questions (bootstrap 95% CI, Wilcoxon)",
    "round_trip": "Round trip: the scored answers' numbers beside the released model's numbers in figures/",
    "commvqa_table01_benchmark": "CommVQA Table 1 under the authors' protocol and the corrected one (95% CIs)",
    "commvqa_table01_context_effect": "CommVQA: contextual minus baseline, paired by question (95% CI)",
    "afgv_tier_accuracy_predictions": "AFGV Table 1: exact-match accuracy per tier (Wald 95% CI, z vs baseline)",
    "afgv_tier_accuracy_by_question_type": "AFGV: tier accuracy by question type",
    "afgv_intent_deltas": "AFGV: accuracy change with intent preserved vs shifted",
}

ROW_HEADERS = ("source", "model", "column", "category", "role", "info_source", "metric", "tier", "condition",
               "versus", "table", "labelled_by", "question_type")


def stylesheet() -> str:
    """The reviewer site's stylesheet (``vqalib/compendium/site.css``)."""
    return resources.files("vqalib.compendium").joinpath("site.css").read_text("utf-8")


def figure_for(card: Scorecard, out: Path, *, figures_dir=None) -> dict | None:
    """The figure that fits the scorecard, written into ``out`` (VizWiz-LF's Table 4 short-vs-long-reference plot;
    none for the others): ``{"png": name, "alt": text}`` or None."""
    import matplotlib.pyplot as plt

    from vqalib.core import report
    from vqalib.core.plots import contrast
    from vqalib.papers.vizwiz_lf.figures import reference_shift
    from vqalib.papers.vizwiz_lf.table4 import METRIC_NAMES

    stem = "vizwiz-lf_table04_full_set_bootstrap"
    if card.dataset != "vizwiz-lf" or stem not in card.tables:
        return None
    ids = {name: key for key, name in METRIC_NAMES.items()}
    released = pd.read_csv(report.figures_dir(figures_dir) / f"{stem}.csv")
    released = released[released["source"].isin(["GPT-4V", "LLaVA"])]  # two released models keep the plot readable
    mine = card.tables[stem]
    frame = pd.concat([mine.rename(columns={"value": "mean"}), released.rename(columns={"reproduced": "mean"})],
                      ignore_index=True)
    frame = frame.assign(metric=frame["metric"].map(ids), reference_kind=frame["reference"],
                         candidate_kind=frame["candidate"]).dropna(subset=["metric", "mean"])
    metrics = ["rouge", "meteor", "bertscore"]
    fig = reference_shift(frame, metrics=metrics, metric_names=METRIC_NAMES,
                          title=f"{card.model} beside GPT-4V and LLaVA: short vs long references (VizWiz-LF)")
    problems = contrast.contrast_problems(fig)
    if problems:
        raise ValueError("scorecard figure: text below the contrast minimum: " + "; ".join(problems))
    fig.savefig(out / "table04_reference_shift.png", metadata={"Software": None})
    plt.close(fig)
    rows = frame[frame["source"] == card.model].set_index(["metric", "reference_kind", "candidate_kind"])["mean"]
    parts = [f"{METRIC_NAMES[m]} {rows.get((m, 's_r', 'l_c'), float('nan')):.3f} with the short reference and "
             f"{rows.get((m, 'l_r', 'l_c'), float('nan')):.3f} with the long one" for m in metrics]
    alt = (f"Three panels (ROUGE, METEOR, BERTScore), each with a pair of lines for {card.model}, GPT-4V and LLaVA: "
           "mean score against the short crowd reference on the left and against the expert's long answer on the "
           "right, for the whole answer (solid) and its Answer sentences (dashed), with 95% confidence intervals. "
           f"For {card.model}, whole answers score " + "; ".join(parts) + ".")
    (out / "table04_reference_shift.alt.txt").write_text(alt + "\n", encoding="utf-8")
    return {"png": "table04_reference_shift.png", "alt": alt}


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def _table(frame: pd.DataFrame, *, caption: str, table_id: str, model: str | None = None) -> str:
    """A table of the page, without columns repeating the model's name and with a shared ``note`` said once above."""
    shown = frame.copy()
    for column in shown.columns:  # label tuples and lists as text
        if shown[column].map(lambda v: isinstance(v, (list, tuple))).any():
            shown[column] = shown[column].map(lambda v: ", ".join(map(str, v)) if isinstance(v, (list, tuple)) else v)
    lead = ""
    if model is not None and len(shown):
        shown = shown[[c for c in shown.columns if not shown[c].astype(str).eq(model).all()]]
        notes = shown["note"].fillna("").astype(str).unique() if "note" in shown else []
        if len(notes) == 1:
            lead = f'<p class="meta">Every row: {_e(notes[0])}.</p>' if notes[0] else ""
            shown = shown.drop(columns="note")
    headers = [c for c in shown.columns if c in ROW_HEADERS][:1]
    return lead + html_table(shown, caption=caption, row_headers=headers, decimals=4, max_rows=max(len(shown), 1),
                             table_id=table_id)


def _beside_tables(side: pd.DataFrame, *, title: str, model: str, table_id: str) -> str:
    """The model's rows beside the released models, then beside the paper's printed values (``paper: <source>``)."""
    paper = [c for c in side.columns if str(c).startswith("paper: ")]
    released = side.drop(columns=paper)
    keys = list(released.columns[:list(released.columns).index(model)]) if model in released.columns else []
    out = _table(released, caption=f"{title}: {model} beside the released models (reproduced here)",
                 table_id=table_id)
    if paper:
        out += _table(side[keys + ([model] if model in side.columns else []) + paper],
                      caption=f"{title}: {model} beside the paper's printed values", table_id=f"{table_id}p")
    return out


def _self_comparison_note(frame: pd.DataFrame) -> str:
    """Why rows of the paired differences have no p-value."""
    if "note" not in frame or not frame["note"].astype(str).str.startswith("self-comparison").any():
        return ""
    versus = ", ".join(dict.fromkeys(frame.loc[frame["note"] == SELF_NOTE, "versus"].astype(str)))
    return (f"<p>Rows marked <q>self-comparison</q> compare this model with {_e(versus)}, the released model whose "
            "answers these are: every whole-answer score is the same on every question, so the difference is 0 with "
            "a 0-width interval and a Wilcoxon test has no nonzero difference to rank (p left blank). Its "
            "Answer-sentence rows (l_c_prime) differ only because this model's sentences carry the classifier's "
            "labels and the released ones the annotators'.</p>")


def page_html(card: Scorecard, besides: dict[str, pd.DataFrame | None], *, figure: dict | None, depth: int = 0,
              nav: list[tuple[str, str]] = (), home: str | None = "index.html", where: str | None = None) -> str:
    """The scorecard page, ``depth`` folders below the site root (0: a standalone scorecard folder); ``home`` the
    "Compendium home" link (None: none), ``where`` the folder its numbers are in (the footer says it)."""
    sources = card.sources
    source_items = "".join(
        f"<li><code>{_e(Path(s['path']).name)}</code>: {_e(s['format'])}"
        + (f", written by {_e(s['toolkit'])}" if s.get("toolkit") else "")
        + (f" ({_e(s['version'])})" if s.get("version") else "")
        + f", {s['records']:,} records, SHA-256 <code>{_e(s['sha256'])}</code></li>" for s in sources)
    coverage = "".join(f"<li>{_e(line)}</li>" for line in coverage_lines(card))
    parts = [f"<h1>Scorecard: {_e(card.model)} on {_e(card.dataset)}</h1>", verdict_html(card),
             "<p>The model's answers scored with the same code as the compendium's notebooks. Each table shows this "
             "model's rows, then the same rows beside the released models and beside the paper's printed values. Numbers "
             "from the offline classifier carry its measured error (table <a href=\"#classifier_error\">classifier "
             "error</a>).</p>",
             f"<h2>Answers</h2><ul>{source_items}</ul><h2>Coverage</h2><ul>{coverage}</ul>",
             '<p>Files: <a href="scorecard.json">scorecard.json</a> (this model\'s rows); each table as CSV and '
             "Markdown beside this page.</p>"]
    if figure:
        parts.append(f'<h2>Figure</h2><figure><img src="{_e(figure["png"])}" alt="{_e(figure["alt"])}">'
                     f'<figcaption>Short vs long references, {_e(card.model)} beside GPT-4V and LLaVA.</figcaption></figure>')
    for k, (stem, frame) in enumerate(card.tables.items()):
        title = TITLES.get(stem, stem)
        parts.append(f'<h2 id="{_e(stem)}">{_e(title)}</h2><p>{_e("; ".join(coverage_lines(card)))}. '
                     f'<a href="{_e(stem)}.csv">CSV</a>, <a href="{_e(stem)}.md">Markdown</a>.</p>')
        if stem == "paired_differences":
            frame = frame if "note" in frame else with_notes(frame)  # a scorecard written before the notes
            parts.append(_self_comparison_note(frame))
        parts.append(_table(frame, caption=f"{title}: {card.model}", table_id=f"t{k}", model=card.model))
        side = besides.get(stem)
        if side is not None and len(side):
            parts.append(_beside_tables(side, title=title, model=card.model, table_id=f"t{k}b"))
    beside = f"<code>{_e(where)}</code> (the files beside this page)" if where else "the files beside this page"
    footer = (f"Scored by <code>vqalib score</code>: this model's numbers come from {beside}; the released models' "
              "and the paper's beside them from <code>figures/</code>.")
    return page(title=f"Scorecard: {card.model} on {card.dataset}", body="".join(parts), depth=depth, nav=list(nav),
                home=home, footer=footer)
