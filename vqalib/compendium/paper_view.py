"""The reviewer's paper view (:mod:`vqalib.compendium.site`): each reproduced paper table in the paper's own
layout, every cell showing the printed value beside ours and its status by symbol and text (colour only
repeats them), the reason of a cell outside the tolerance one click away, and the summary the index opens with.

Cell states, from the saved comparison in ``figures/`` and ``data/paper/known_differences.csv``:

- ``within``: a ``same`` cell within the registry's tolerance;
- ``explained``: a ``same`` cell outside it whose known difference cites committed evidence;
- ``unexplained``: a ``same`` cell outside it without such evidence;
- ``not-counted``: an ``analogous``, ``fitted`` or ``self-input`` cell (shown, never counted as reproduced);
- ``not-run``: a resource is missing (the reason is said once per table).

The summary counts come from :func:`vqalib.core.report.agreement_counts`, the function behind the README
status table, so the two cannot disagree.
"""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from vqalib.core import registry, report
from vqalib.core.evidence import parse
from vqalib.core.specs import Spec

STATES = {  # state -> (symbol, text)
    "within": ("✓", "within tolerance"),
    "explained": ("✗", "outside, explained"),
    "unexplained": ("!", "outside, unexplained"),
    "not-counted": ("○", "not counted"),
    "not-run": ("–", "not run"),
    "missing": ("?", "not reproduced"),
}
MAX_COLUMNS = 6  # printed columns per sub-table: every cell visible without scrolling at 1280 px
GRADES = (("full", "✔", 0.9), ("partial", "◐", 0.5), ("poor", "✖", 0.0))  # share of judged cells within


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def compared_stems(figures: Path) -> list[str]:
    """The registry's compared tables that have a file in ``figures`` (one paper view each), in registry order.

    Parameters
    ----------
    figures : Path
        The folder of saved tables.

    Returns
    -------
    list of str
    """
    return [stem for stem, spec in registry.TABLES.items()
            if spec.compared and "*" not in stem and (figures / f"{stem}.csv").exists()]


def cell_states(frame: pd.DataFrame, spec: Spec, *, known: pd.DataFrame | None = None) -> pd.DataFrame:
    """Each cell the paper prints, with its state (module docstring), explanation and evidence.

    Parameters
    ----------
    frame : pandas.DataFrame
        The comparison as saved in ``figures/<stem>.csv``.
    spec : Spec
        Its registry entry.
    known : pandas.DataFrame, optional
        The known differences (default ``data/paper/known_differences.csv``).

    Returns
    -------
    pandas.DataFrame
        The rows with a paper value, plus ``state``, ``kind`` (the relation), ``explanation`` and ``evidence``.
    """
    rows = frame[frame["paper"].notna()].copy()
    labels = pd.Series([" | ".join("" if pd.isna(v) else str(v) for v in r)
                        for r in rows[list(spec.cell_keys)].itertuples(index=False)], index=rows.index, dtype=object)
    table = spec.known or spec.stem
    rows["explanation"] = report.explain(labels, table=table, known=known)
    rows["evidence"] = report.explain(labels, table=table, known=known, column="evidence")
    kind = (rows["relation"].astype(str).str.split(":").str[0].str.strip() if "relation" in rows
            else pd.Series("same", index=rows.index))
    rows["kind"] = kind
    within = rows["within_tolerance"].map({True: True, False: False, "True": True, "False": False})
    not_run = (rows["status"].astype(str).str.startswith("not run") if "status" in rows
               else pd.Series(False, index=rows.index))
    evidenced = report.explained_cells(rows)
    state = pd.Series("missing", index=rows.index, dtype=object)
    state[within.eq(False) & ~evidenced] = "unexplained"
    state[within.eq(False) & evidenced] = "explained"
    state[within.eq(True)] = "within"
    state[rows["reproduced"].notna() & kind.ne("same")] = "not-counted"
    state[not_run] = "not-run"
    rows["state"] = state
    return rows


def _number(value, decimals: int | None = None) -> str:
    if pd.isna(value):
        return ""
    return f"{value:.{decimals}f}" if decimals is not None else format(float(value), ".6g")


def _why(row: dict) -> str:
    evidence = row["evidence"] if isinstance(row["evidence"], str) else ""
    cited = "".join(f"<li><code>{_e(reference)}</code></li>" for reference in (parse(evidence) if evidence else []))
    return (f"<p>{_e(row['explanation'])}</p>"
            + (f"<p>Evidence:</p><ul>{cited}</ul>" if cited else "<p>Evidence: none committed (unexplained).</p>"))


def _cell(row: pd.Series, seen: dict, *, notes: bool, anchor: str) -> str:
    paper = _number(row["paper"])
    printed = len(paper.split(".")[1]) if "." in paper else 0
    ours = _number(row["reproduced"], printed + 1) if pd.notna(row["reproduced"]) else "—"
    symbol, text = STATES[row["state"]]
    if row["state"] == "not-counted":
        text = f"{row['kind']}, not counted"
    why = ""
    if row["explanation"] != report.NOT_EXPLAINED and row["state"] in ("explained", "unexplained", "not-counted"):
        first = row["explanation"] not in seen
        if first:
            seen[row["explanation"]] = (len(seen) + 1, " · ".join(str(v) for v in (*row["_row"], *row["_col"]) if v),
                                        _why(row))
        number, label, _ = seen[row["explanation"]]
        if notes:  # print: a numbered note under the table instead of a disclosure in the cell
            why = f' <a class="pv-note" href="#{anchor}-note-{number}">[note {number}]</a>'
        else:
            why = f"<details><summary>Why</summary>{_why(row) if first else f'<p>As for {_e(label)}.</p>'}</details>"
    return (f'<td class="pv pv-{row["state"]}"><span class="pv-values">{_e(paper)} | {_e(ours)}</span>'
            f'<span class="pv-state"><span aria-hidden="true">{symbol}</span> {_e(text)}{why}</span></td>')


def _groups(columns: list[tuple], *, limit: int = MAX_COLUMNS) -> list[list[tuple]]:
    """Consecutive printed columns packed into sub-tables of at most ``limit``, never splitting a first-level
    group (a metric's settings stay together) unless it alone is wider."""
    first: dict = {}
    for column in columns:
        first.setdefault(column[0], []).append(column)
    out: list[list[tuple]] = []
    for members in first.values():
        if out and len(out[-1]) + len(members) <= limit:
            out[-1] += members
        else:
            out += [members[k:k + limit] for k in range(0, len(members), limit)]
    return out


def paper_view(frame: pd.DataFrame, spec: Spec, *, known: pd.DataFrame | None = None, anchor: str = "pv",
               notes: bool = False) -> str:
    """One paper table in the paper's layout: rows and columns as printed, each cell "printed | ours" and its
    state; the not-run reason said once; wide tables split into sub-tables by the first column level.

    Parameters
    ----------
    frame : pandas.DataFrame
        The comparison as saved in ``figures/``.
    spec : Spec
        Its registry entry (``printed_column`` names the column keys; the other cell keys are the rows).
    known : pandas.DataFrame, optional
        As in :func:`cell_states`.
    anchor : str, default "pv"
        Prefix of the tables' HTML ids.
    notes : bool, default False
        Explanations as numbered notes under the tables (print) instead of a "Why" disclosure in each cell.

    Returns
    -------
    str
        HTML: the not-run note (if any) and one ``<table>`` per column group.
    """
    cells = cell_states(frame, spec, known=known)
    columns_keys = list(spec.printed_column)
    row_keys = [k for k in spec.cell_keys if k not in columns_keys] or [k for k in spec.keys if k not in columns_keys]
    cells["_row"] = [tuple("" if pd.isna(v) else str(v) for v in r) for r in cells[row_keys].itertuples(index=False)]
    cells["_col"] = [tuple("" if pd.isna(v) else str(v) for v in r) for r in cells[columns_keys].itertuples(index=False)]
    rows = list(dict.fromkeys(cells["_row"]))
    by = {(r, c): row for r, c, row in zip(cells["_row"], cells["_col"], cells.to_dict("records"))}
    seen: dict = {}  # an explanation shared by several cells is written out once
    parts = []
    if "status" in cells:
        reasons = dict.fromkeys(s for s in cells["status"].dropna().astype(str) if s.startswith("not run"))
        if reasons:
            parts.append('<p class="not-run-note"><strong>Not run</strong> (cells marked "– not run"): '
                         + " ".join(_e(r) for r in reasons) + "</p>")
    for n, group in enumerate(_groups(list(dict.fromkeys(cells["_col"])))):
        head = "".join(f'<th scope="col">{_e(" ".join(p for p in c if p) or "value")}</th>' for c in group)
        body = []
        for r in rows:
            if not any((r, c) in by for c in group):
                continue
            tds = "".join(_cell(pd.Series(by[(r, c)]), seen, notes=notes, anchor=anchor) if (r, c) in by
                          else "<td></td>" for c in group)
            body.append(f'<tr><th scope="row">{_e(" · ".join(p for p in r if p))}</th>{tds}</tr>')
        corner = _e(" · ".join(row_keys))
        parts.append(f'<div class="table-scroll pv-scroll" role="region" tabindex="0" aria-labelledby="{anchor}-{n}-c">'
                     f'<table class="paper-view" id="{anchor}-{n}"><caption id="{anchor}-{n}-c">{_e(spec.paper)} '
                     f"{_e(spec.reproduces)}, part {n + 1}: each cell is the paper's printed value | ours</caption>"
                     f'<thead><tr><th scope="col">{corner}</th>{head}</tr></thead><tbody>{"".join(body)}</tbody>'
                     "</table></div>")
    if notes and seen:
        parts.append('<ol class="pv-notes">' + "".join(f'<li id="{anchor}-note-{n}"><strong>{_e(label)}</strong>'
                                                       f"{text}</li>" for n, label, text in seen.values()) + "</ol>")
    return "".join(parts)


def grade(counts: dict) -> tuple[str, str, str]:
    """(grade, symbol, text) of a table's agreement: full, partial or poor by the share of judged cells within the
    tolerance (:data:`GRADES`), or "none" when no cell is judged.

    Parameters
    ----------
    counts : dict
        :func:`vqalib.core.report.agreement_counts`.

    Returns
    -------
    tuple of str
    """
    if not counts["compared"]:
        return "none", "○", "no cell judged"
    share = counts["within"] / counts["compared"]
    name, symbol, _ = next(g for g in GRADES if share >= g[2])
    return name, symbol, f"{name}: {counts['within']} of {counts['compared']} within"


SUMMARY_COLUMNS = ("within", "explained", "unexplained", "not_counted", "not_run")
SUMMARY_HEADERS = ("within tolerance", "outside, explained", "outside, unexplained", "not counted", "not run")


def summary(figures: Path, *, known: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per compared table: the counts the index opens with (:func:`vqalib.core.report.agreement_counts`).

    Parameters
    ----------
    figures : Path
        The folder of saved tables.
    known : pandas.DataFrame, optional
        As in :func:`cell_states`.

    Returns
    -------
    pandas.DataFrame
        ``stem``, ``paper``, ``table``, ``compared`` and :data:`SUMMARY_COLUMNS`.
    """
    rows = []
    for stem in compared_stems(figures):
        spec = registry.table(stem)
        counts = report.agreement_counts(pd.read_csv(figures / f"{stem}.csv"), stem, known=known)
        rows.append({"stem": stem, "paper": spec.paper, "table": spec.reproduces, "compared": counts["compared"],
                     **{c: counts[c] for c in SUMMARY_COLUMNS}, "grade": grade(counts)})
    return pd.DataFrame(rows)


def summary_html(table: pd.DataFrame, *, link) -> str:
    """The index's summary table: one row per compared table, the counts and a graded badge.

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`summary` output.
    link : callable
        stem -> href of its paper view.

    Returns
    -------
    str
    """
    head = "".join(f'<th scope="col">{_e(h)}</th>' for h in ("Paper table", *SUMMARY_HEADERS, "Agreement"))
    body = []
    for r in table.to_dict("records"):
        name, symbol, text = r["grade"]
        nums = "".join(f'<td class="num">{int(r[c])}</td>' for c in SUMMARY_COLUMNS)
        body.append(f'<tr><th scope="row"><a href="{_e(link(r["stem"]))}">{_e(r["paper"])} {_e(r["table"])}</a></th>'
                    f'{nums}<td><span class="grade grade-{name}"><span aria-hidden="true">{symbol}</span> '
                    f"{_e(text)}</span></td></tr>")
    return ('<div class="table-scroll" role="region" tabindex="0" aria-labelledby="summary-caption"><table '
            'id="summary"><caption id="summary-caption">Every reproduced paper table: its cells by state (only cells '
            'within the tolerance count as reproduced)</caption>'
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>")


def summary_figure(table: pd.DataFrame) -> str:
    """One accessible figure of the summary: a bar per table, split by state, each part labelled with its count
    (an inline SVG with a title and description; the summary table is its data).

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`summary` output.

    Returns
    -------
    str
    """
    fills = {"within": "#1b7837", "explained": "url(#hatch)", "unexplained": "#b2182b", "not_counted": "#d9d9d9",
             "not_run": "#ffffff"}
    width, bar, gap, left = 860, 18, 8, 330
    rows = []
    for k, r in enumerate(table.to_dict("records")):
        y = 30 + k * (bar + gap)
        total = sum(int(r[c]) for c in SUMMARY_COLUMNS) or 1
        x = left
        name = f"{r['paper']} {r['table']}"[:52]
        rows.append(f'<text x="{left - 6}" y="{y + 13}" text-anchor="end">{_e(name)}</text>')
        for c in SUMMARY_COLUMNS:
            w = (width - left - 10) * int(r[c]) / total
            if w:
                rows.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{bar}" fill="{fills[c]}" '
                            f'stroke="#1a1a1a"><title>{_e(r["paper"])} {_e(r["table"])}: {int(r[c])} '
                            f'{dict(zip(SUMMARY_COLUMNS, SUMMARY_HEADERS))[c]}</title></rect>')
                x += w
    height = 40 + len(table) * (bar + gap)
    legend = "; ".join(f"{h}: {'green' if c == 'within' else 'hatched' if c == 'explained' else 'red' if c == 'unexplained' else 'grey' if c == 'not_counted' else 'white'}"
                      for c, h in zip(SUMMARY_COLUMNS, SUMMARY_HEADERS))
    total = {c: int(table[c].sum()) for c in SUMMARY_COLUMNS}
    desc = ("Cells of every reproduced paper table by state: " + ", ".join(
        f"{total[c]} {h}" for c, h in zip(SUMMARY_COLUMNS, SUMMARY_HEADERS)) + f". Colours: {legend}.")
    return (f'<figure class="summary-figure"><svg role="img" aria-labelledby="sf-title sf-desc" viewBox="0 0 {width} '
            f'{height}" width="100%" font-size="12" font-family="system-ui, sans-serif">'
            f'<title id="sf-title">Agreement of every reproduced paper table</title><desc id="sf-desc">{_e(desc)}</desc>'
            '<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">'
            '<rect width="6" height="6" fill="#f4a582"/><line x1="0" y1="0" x2="0" y2="6" stroke="#1a1a1a" '
            'stroke-width="2"/></pattern></defs>' + "".join(rows) + "</svg>"
            f"<figcaption>{_e(desc)}</figcaption></figure>")
