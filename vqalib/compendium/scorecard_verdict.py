"""The verdict that opens a scorecard page: what was scored, headline measures with intervals, the comparison with
the released models, what rests on the offline classifier and the round trip; every number read from its tables."""

from __future__ import annotations

import html

import pandas as pd

from vqalib.compendium.score import Scorecard, coverage_lines
from vqalib.papers.vizwiz_lf.scorecard import LABELLED_CANDIDATE, round_trip_summary, same_answer_sources

MINUS = "\u2212"
REFERENCES = {"s_r": "the short crowd reference s_r", "l_r": "the expert's long answer l_r"}


def _n(value: float) -> str:
    text = f"{value:.4f}"
    return "0.0000" if text == "-0.0000" else text.replace("-", MINUS)


def _signed(value: float) -> str:
    text = _n(value)
    return text if text.startswith(MINUS) or text == "0.0000" else "+" + text


def _ci(low: float, high: float) -> str:
    return f"95% CI {_n(low)} to {_n(high)}"


def _direction(low: float, high: float) -> str:
    return "higher" if low > 0 else "lower" if high < 0 else "same"


def _joined(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _setting(row) -> str:
    if pd.isna(row.reference) or str(row.reference) == "":
        return str(row.metric)
    candidate = "l_c′" if row.candidate == LABELLED_CANDIDATE else str(row.candidate)
    return f"{row.metric} ({row.reference}, {candidate})"


def _by_direction(rows: pd.DataFrame, *, versus: str) -> str:
    """``higher than X on A +d, …; lower than X on …; not distinguishable from X on …`` (no empty group)."""
    groups = {"higher": [], "lower": [], "same": []}
    for row in rows.itertuples(index=False):
        groups[_direction(row.ci_low, row.ci_high)].append(f"{_setting(row)} {_signed(row.difference)}")
    heads = {"higher": f"higher than {versus} on ", "lower": f"lower than {versus} on ",
             "same": f"not distinguishable from {versus} on "}
    return "; ".join(heads[k] + ", ".join(v) for k, v in groups.items() if v)


def _vizwiz_headline(card: Scorecard) -> list:
    t4 = card.tables.get("vizwiz-lf_table04_full_set_bootstrap")
    if t4 is None or t4.empty:
        return []
    whole = t4[t4["candidate"].astype(str) != LABELLED_CANDIDATE]
    parts = []
    for metric, rows in whole.groupby("metric", sort=False):
        if rows["value"].isna().all():
            status = rows["status"].dropna().astype(str) if "status" in rows else pd.Series(dtype=str)
            parts.append(f"{metric}: {status.iloc[0].split(';')[0] if len(status) else 'not run'}")
            continue
        cells = [f"{_n(r.value)} ({_ci(r.ci_low, r.ci_high)})"
                 + (f" against {REFERENCES.get(r.reference, r.reference)}" if isinstance(r.reference, str)
                    and r.reference else "")
                 for r in rows.dropna(subset=["value"]).itertuples(index=False)]
        parts.append(f"{metric}: " + "; ".join(cells))
    return [("p", "Headline measures (Table 4, whole answers): the mean score with its bootstrap 95% CI."),
            ("ul", parts)]


def _vizwiz_comparisons(card: Scorecard) -> list:
    diffs = card.tables.get("paired_differences")
    if diffs is None or diffs.empty:
        return [("p", "No paired comparison with the released models was computed (scored with --no-compare); their "
                      "values are beside each table.")]
    same = same_answer_sources(diffs)
    items = []
    for versus, rows in diffs.groupby("versus", sort=False):
        labelled = rows[rows["candidate"].astype(str) == LABELLED_CANDIDATE]
        whole = rows.drop(labelled.index)
        n = sorted(set(rows["n"].astype(int)))
        on = f"{n[0]:,} questions" if len(n) == 1 else f"{n[0]:,}–{n[-1]:,} questions"
        if versus in same:
            text = (f"{versus} (self-comparison, {on}): these are {versus}'s released answers, so every whole-answer "
                    "difference is 0 on every question and there is nothing to test")
            if len(labelled):
                moved = sum(_direction(r.ci_low, r.ci_high) != "same" for r in labelled.itertuples(index=False))
                text += (f"; the Answer-sentence differences, {_signed(labelled['difference'].min())} to "
                         f"{_signed(labelled['difference'].max())}, come only from the classifier's sentence labels "
                         "(the released answers' are the annotators'), and "
                         + ("none of them excludes 0" if not moved else f"{moved} of them exclude 0"))
            items.append(text + ".")
            continue
        text = f"{versus} ({on}): " + (_by_direction(whole, versus=versus) or "no whole-answer setting")
        if len(labelled):
            text += f". With Answer sentences (classifier labels): {_by_direction(labelled, versus=versus)}"
        items.append(text + ".")
    lead = (f"{html.escape(card.model)} minus each released model, paired on the questions both answered: higher or "
            "lower where the difference's bootstrap 95% CI excludes 0, else not distinguishable. Each setting is "
            "written metric (reference, candidate) with the difference; l_c is the whole answer, l_c′ (l_c_prime in "
            "the tables) its Answer sentences, which the offline classifier labels. The intervals and Wilcoxon "
            'p-values are in the table <a href="#paired_differences">paired differences</a>.')
    return [("p-html", lead), ("ul", items)]


def _classifier(card: Scorecard) -> list:
    error = card.tables.get("classifier_error")
    if error is None or error.empty:
        return []
    tables = sorted(dict.fromkeys(error["table"].astype(str)))
    text = (f"Numbers that rest on the offline classifier's labels ({error['classifier'].iloc[0]}): {_joined(tables)} "
            "(roles, information sources, abstention) and every l_c′ setting above")
    abst = card.tables.get("vizwiz-lf_table05_abstention")
    if abst is not None and not abst.empty:
        values = abst.set_index("metric")["value"]
        shown = [f"{m} {_n(values[m])}" for m in ("abs-acc", "abs-f1") if m in values]
        text += f"; this model's abstention: {', '.join(shown)} (no interval)" if shown else ""
    average = error[error["label"].astype(str) == "Average"]
    errors = [f"{r.table} average F1 {_n(r.value)} ({_ci(r.ci_low, r.ci_high)})"
              for r in average.itertuples(index=False)]
    agreement = error[error["measure"].astype(str).str.startswith("agreement")]
    if len(agreement):
        low, high = agreement.loc[agreement["value"].idxmin()], agreement.loc[agreement["value"].idxmax()]
        errors.append(f"abstention agreement with the released labels from {_n(low['value'])} ({low['source']}) to "
                      f"{_n(high['value'])} ({high['source']})")
    text += ". Its measured error, cross-validated on the released answers: " + "; ".join(errors) if errors else ""
    labelled = card.tables.get("labelled_by")
    if labelled is not None and not labelled.empty:
        by = labelled.set_index("labelled_by")["answers"].astype(int)
        oof = int(by[by.index.astype(str).str.startswith("out-of-fold")].sum())
        text += (f". {oof:,} of {int(by.sum()):,} answers equal a released answer and carry its out-of-fold labels; "
                 f"{int(by.get('classifier', 0)):,} are labelled by the final classifier")
    return [("p", text + ".")]


def _round_trip(card: Scorecard) -> list:
    frame = card.tables.get("round_trip")
    diffs = card.tables.get("paired_differences")
    if frame is None or frame.empty or diffs is None:
        return []
    same = same_answer_sources(diffs)
    source = _joined(same) if same else "the released model"
    counts = round_trip_summary(frame)
    parts = _joined(list(dict.fromkeys(frame["table"].astype(str))))
    none = len(frame) - counts["n"]  # cells with no released value compare nothing: said, not counted as unequal
    if not counts["n"]:
        return [("p", f"Round trip: these are {source}'s released answers given back, but none of the {none} cells "
                      f"has a released value in figures/ to compare with: {parts}.")]
    cells = f"{counts['n']} cells with a released value" if none else f"{counts['n']} cells"
    rest = f"; {none} have none" if none else ""
    return [("p", f"Round trip: these are {source}'s released answers given back, and {counts['equal']} of {cells} "
                  f"equal {source}'s numbers in figures/ to 4 decimals{rest}: {parts}.")]


def _commvqa(card: Scorecard) -> list:
    out = []
    bench = card.tables.get("commvqa_table01_benchmark")
    if bench is not None and not bench.empty:
        corrected = bench[bench["protocol"] == "corrected"]
        for condition, rows in corrected.groupby("condition", sort=False):
            cells = [f"{r.metric} {_n(r.value)} ({_ci(r.ci_low, r.ci_high)})" for r in rows.itertuples(index=False)]
            out.append(("p", f"Table 1, corrected protocol, {condition}: " + "; ".join(cells) + "."))
    effect = card.tables.get("commvqa_table01_context_effect")
    if effect is not None and not effect.empty:
        text = _by_direction(effect.assign(reference="", candidate=""), versus="baseline")
        out.append(("p", f"Contextual minus baseline, paired by question: contextual {text}. The released models' "
                         "values are beside each table; no paired test against them is computed for CommVQA."))
    return out


def _afgv(card: Scorecard) -> list:
    tiers = card.tables.get("afgv_tier_accuracy_predictions")
    if tiers is None or tiers.empty:
        return []
    if "accuracy" not in tiers:
        status = tiers["status"].astype(str).iloc[0] if "status" in tiers else "not run"
        return [("p", f"Tier accuracy: {status}.")]
    cells = [f"{r.tier} {_n(r.accuracy)} ({_ci(r.ci95_low, r.ci95_high)})" for r in tiers.itertuples(index=False)]
    return [("p", "Exact-match accuracy per tier: " + "; ".join(cells) + ".")]


def verdict_blocks(card: Scorecard) -> list[tuple[str, object]]:
    """The verdict as blocks in reading order: ``("p", text)``, ``("p-html", markup)`` or ``("ul", [text, …])``."""
    lead = [("p", f"{card.model}: " + "; ".join(coverage_lines(card)) + ".")]
    if card.dataset == "vizwiz-lf":
        return lead + _round_trip(card) + _vizwiz_headline(card) + _vizwiz_comparisons(card) + _classifier(card)
    return lead + (_commvqa(card) if card.dataset == "commvqa" else _afgv(card))


def verdict_text(card: Scorecard) -> str:
    """The verdict as plain text, one block a paragraph (list items on their own lines)."""
    import re

    lines = []
    for kind, content in verdict_blocks(card):
        if kind == "ul":
            lines += [f"- {item}" for item in content]
        else:
            lines.append(html.unescape(re.sub(r"<[^>]+>", "", content)) if kind == "p-html" else content)
    return "\n".join(lines)


def verdict_html(card: Scorecard) -> str:
    """The verdict section that opens the scorecard page (a ``<section>`` with its heading)."""
    parts = []
    for kind, content in verdict_blocks(card):
        if kind == "ul":
            parts.append("<ul>" + "".join(f"<li>{html.escape(item)}</li>" for item in content) + "</ul>")
        elif kind == "p-html":
            parts.append(f"<p>{content}</p>")
        else:
            parts.append(f"<p>{html.escape(content)}</p>")
    return ('<section class="verdict" aria-labelledby="verdict"><h2 id="verdict">Verdict</h2>'
            + "".join(parts) + "</section>")
