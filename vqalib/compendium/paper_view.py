"""The paper view (:mod:`vqalib.compendium.site`): each reproduced table in the paper's layout, every cell "printed |
ours" with its state by symbol and text (:data:`STATES`: within, explained, unexplained, not counted, not run), the
cells outside listed first and each reason one click away; the states add up to
:func:`vqalib.core.report.agreement_counts`.
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


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def compared_stems(figures: Path) -> list[str]:
    """The registry's compared tables with a file in ``figures`` (one paper view each), in registry order.

    Parameters
    ----------
    figures : Path
    """
    return [stem for stem, spec in registry.TABLES.items()
            if spec.compared and "*" not in stem and (figures / f"{stem}.csv").exists()]


def key_tuples(frame: pd.DataFrame, columns) -> list[tuple[str, ...]]:
    """Each row's values of ``columns`` as text ("" for missing): how a cell, a row or a column is named.

    Parameters
    ----------
    frame : pandas.DataFrame
    columns : sequence of str
    """
    return [tuple("" if pd.isna(v) else str(v) for v in r) for r in frame[list(columns)].itertuples(index=False)]


def cell_states(frame: pd.DataFrame, spec: Spec, *, known: pd.DataFrame | None = None) -> pd.DataFrame:
    """Each cell the paper prints, with its state, explanation and evidence.

    Parameters
    ----------
    frame : pandas.DataFrame
        The comparison as saved.
    spec : Spec
    known : pandas.DataFrame, optional

    Returns
    -------
    pandas.DataFrame
        The rows with a paper value, plus ``state``, ``kind``, ``explanation`` and ``evidence``.
    """
    rows = frame[frame["paper"].notna()].copy()
    labels = pd.Series([" | ".join(k) for k in key_tuples(rows, spec.cell_keys)], index=rows.index, dtype=object)
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


def _decimals(text: str) -> int:
    return len(text.split(".")[1]) if "." in text else 0


def _why(row: dict, link=None) -> str:
    """The explanation and its evidence, each reference a link where ``link`` gives one (the site's table row)."""
    evidence = row["evidence"] if isinstance(row["evidence"], str) else ""
    items = []
    for reference in parse(evidence) if evidence else []:
        href, text = (link(reference) if link else None) or (None, str(reference))
        items.append(f'<li><a href="{_e(href)}">{_e(text)}</a></li>' if href else f"<li><code>{_e(text)}</code></li>")
    return (f"<p>{_e(row['explanation'])}</p>"
            + (f"<p>Evidence:</p><ul>{''.join(items)}</ul>" if items else "<p>Evidence: none committed (unexplained).</p>"))


def _cell_label(row: dict) -> str:
    return " · ".join(str(v) for v in (*row["_row"], *row["_col"]) if v) + (f" ({row['_desc']})" if row["_desc"] else "")


def _descriptions(cells: pd.DataFrame, keys: list[str]) -> dict[tuple, str]:
    """Key -> the table's ``description`` where it is one text per key (a fact id's wording), else nothing."""
    if "description" not in cells or not keys:
        return {}
    texts = cells["description"].fillna("").astype(str).groupby(pd.Series(key_tuples(cells, keys), index=cells.index))
    return {key: group.iloc[0] for key, group in texts if group.nunique() == 1 and group.iloc[0]}


def _header(key: tuple, described: dict) -> str:
    name = _e(" ".join(p for p in key if p) or "value")
    return name + (f'<span class="pv-desc">{_e(described[key])}</span>' if key in described else "")


def _cell(row: dict, seen: dict, *, notes: bool, anchor: str, decimals: int, link=None) -> str:
    paper = _number(row["paper"])
    ours = _number(row["reproduced"], decimals + 1) if pd.notna(row["reproduced"]) else "—"
    symbol, text = STATES[row["state"]]
    if row["state"] == "not-counted":
        text = f"{row['kind']}, not counted"
    why = ""
    if row["explanation"] != report.NOT_EXPLAINED and row["state"] in ("explained", "unexplained", "not-counted"):
        first = row["explanation"] not in seen
        if first:
            seen[row["explanation"]] = (len(seen) + 1, _cell_label(row), _why(row, link))
        number, label, _ = seen[row["explanation"]]
        if notes:  # print: a numbered note under the table instead of a disclosure in the cell
            why = f' <a class="pv-note" href="#{anchor}-note-{number}">[note {number}]</a>'
        else:
            why = (f"<details><summary>Why: {_e(_cell_label(row))}</summary>"
                   f"{_why(row, link) if first else f'<p>As for {_e(label)}.</p>'}</details>")
    state = f'<span class="pv-state"><span aria-hidden="true">{symbol}</span> {_e(text)}</span>'
    return (f'<td class="pv pv-{row["state"]}" id="{anchor}-{row["_id"]}"><span class="pv-values">{_e(paper)} | '
            f"{_e(ours)}</span>" + (f"{state}{why}" if not notes else state[:-7] + why + "</span>") + "</td>")


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
               notes: bool = False, link=None) -> str:
    """One paper table in the paper's layout: each cell "printed | ours" (ours to one more decimal than the column prints)
    and its state, the cells outside listed first, the not-run reason once, wide tables split by column group.

    Parameters
    ----------
    frame : pandas.DataFrame
    spec : Spec
    known : pandas.DataFrame, optional
    anchor : str, default "pv"
        Prefix of the HTML ids.
    notes : bool, default False
        Explanations as numbered notes (print) instead of a disclosure per cell.
    link : callable, optional
        An evidence reference -> ``(href, text)`` or None.
    """
    cells = cell_states(frame, spec, known=known)
    columns_keys = list(spec.printed_column)
    row_keys = [k for k in spec.cell_keys if k not in columns_keys] or [k for k in spec.keys if k not in columns_keys]
    cells["_row"], cells["_col"] = key_tuples(cells, row_keys), key_tuples(cells, columns_keys)
    cells["_id"] = [f"cell-{k + 1}" for k in range(len(cells))]
    described_rows, described_columns = _descriptions(cells, row_keys), _descriptions(cells, columns_keys)
    cells["_desc"] = [described_rows.get(r) or described_columns.get(c) or ""
                      for r, c in zip(cells["_row"], cells["_col"])]
    decimals = {c: max(_decimals(_number(v)) for v in group) for c, group in cells.groupby("_col", sort=False)["paper"]}
    rows = list(dict.fromkeys(cells["_row"]))
    by = {(r, c): row for r, c, row in zip(cells["_row"], cells["_col"], cells.to_dict("records"))}
    seen: dict = {}  # an explanation shared by several cells is written out once
    parts = []
    off = [row for row in by.values() if row["state"] in ("explained", "unexplained")]
    if off:
        items = "".join(f'<li><a href="#{anchor}-{row["_id"]}">{_e(_cell_label(row))}</a>: '
                        f'{_e(_number(row["paper"]))} | {_e(_number(row["reproduced"], decimals[row["_col"]] + 1))} '
                        f"({STATES[row['state']][1]})</li>" for row in off)
        parts.append(f'<div class="pv-outside"><p><strong>Cells outside the tolerance ({len(off)}):</strong> printed | '
                     f'ours, each a link to its cell.</p><ul>{items}</ul></div>')
    if "status" in cells:
        reasons = dict.fromkeys(s for s in cells["status"].dropna().astype(str) if s.startswith("not run"))
        if reasons:
            parts.append('<p class="not-run-note"><strong>Not run</strong> (cells marked "– not run"): '
                         + " ".join(_e(r) for r in reasons) + "</p>")
    for n, group in enumerate(_groups(list(dict.fromkeys(cells["_col"])))):
        head = "".join(f'<th scope="col">{_header(c, described_columns)}</th>' for c in group)
        body = []
        for r in rows:
            if not any((r, c) in by for c in group):
                continue
            tds = "".join(_cell(by[(r, c)], seen, notes=notes, anchor=anchor, decimals=decimals[c], link=link)
                          if (r, c) in by else "<td></td>" for c in group)
            body.append(f'<tr><th scope="row">{_e(" · ".join(p for p in r if p))}'
                        + (f'<span class="pv-desc">{_e(described_rows[r])}</span>' if r in described_rows else "")
                        + f"</th>{tds}</tr>")
        corner = _e(" · ".join(row_keys))
        parts.append(f'<div class="table-scroll pv-scroll" role="region" tabindex="0" aria-labelledby="{anchor}-{n}-c">'
                     f'<table class="paper-view" id="{anchor}-{n}"><caption id="{anchor}-{n}-c">{_e(spec.paper)} '
                     f"{_e(spec.reproduces)}, part {n + 1}: each cell is the paper's printed value | ours</caption>"
                     f'<thead><tr><th scope="col">{corner}</th>{head}</tr></thead><tbody>{"".join(body)}</tbody>'
                     "</table></div>")
    if notes and seen:
        parts.append('<ol class="pv-notes">' + "".join(f'<li id="{anchor}-note-{n}"><p class="pv-note-head"><strong>'
                                                       f"{_e(label)}</strong></p>{text}</li>"
                                                       for n, label, text in seen.values()) + "</ol>")
    return "".join(parts)
