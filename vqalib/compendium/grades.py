"""The index's answer to "does it reproduce?": one grading rule for every compared table (:func:`grade`), the
summary table with each table's reason, and totals that count each distinct paper cell once (``Spec.repeats``)."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pandas as pd

from vqalib.compendium.paper_view import cell_states, compared_stems, key_tuples
from vqalib.core import registry, report

# the one grading rule (badges, the index summary, the report): the share of judged cells within the tolerance and
# the share of the printed cells not run
FULL_WITHIN, FULL_NOT_RUN, PARTIAL_WITHIN, MOSTLY_NOT_RUN = 0.95, 0.10, 0.5, 0.5
GRADES = {  # grade -> (symbol, what it means)
    "full": ("✔", f"at least {FULL_WITHIN:.0%} of the judged cells within the tolerance and under "
                  f"{FULL_NOT_RUN:.0%} of the printed cells not run"),
    "partial": ("◐", f"at least {PARTIAL_WITHIN:.0%} of the judged cells within, or more not run than a full grade "
                     "allows"),
    "poor": ("✖", f"under {PARTIAL_WITHIN:.0%} of the judged cells within"),
    "none": ("○", "no cell judged: every printed cell is of another relation (shown, not counted) or not run"),
    "not-run": ("–", "every printed cell not run: a resource is missing"),
}


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def grade(counts: dict) -> tuple[str, str, str]:
    """(grade, symbol, text) of a table's agreement under the one rule of :data:`GRADES`.

    Parameters
    ----------
    counts : dict
        :func:`vqalib.core.report.agreement_counts`.
    """
    printed = counts["compared"] + counts["not_counted"] + counts["not_run"]
    if printed and counts["not_run"] == printed:
        return "not-run", GRADES["not-run"][0], f"not run: all {printed} cells"
    not_run = f"{counts['not_run']} of {printed} cells not run" if counts["not_run"] else ""
    first = f"mostly not run ({counts['not_run']} of {printed} cells); " if counts["not_run"] >= MOSTLY_NOT_RUN * printed else ""
    if not counts["compared"]:
        consistent = (f"; {counts['consistent']} of {counts['self-input']} self-input cells consistent"
                      if "consistent" in counts and counts.get("self-input") else "")
        return "none", GRADES["none"][0], f"{first}no cell judged{consistent}" + (f"; {not_run}" if not_run and not first else "")
    within = counts["within"] / counts["compared"]
    if within >= FULL_WITHIN and counts["not_run"] < FULL_NOT_RUN * printed:
        name = "full"
    else:
        name = "partial" if within >= PARTIAL_WITHIN else "poor"
    text = f"{name}: {counts['within']} of {counts['compared']} judged within"
    return name, GRADES[name][0], first + text + (f"; {not_run}" if not_run and not first else "")


SUMMARY_COLUMNS = ("within", "explained", "unexplained", "not_counted", "not_run")
SUMMARY_HEADERS = ("within tolerance", "outside, explained", "outside, unexplained", "not counted", "not run")
_STATE_COLUMN = {"within": "within", "explained": "explained", "unexplained": "unexplained",
                 "not-counted": "not_counted", "not-run": "not_run"}  # cell_states' state -> summary column


def distinct_cells(figures: Path, *, known: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every printed cell of every compared table with the stem of the table whose cell it repeats
    (``Spec.repeats``)."""
    return _distinct_cells(_compared_frames(figures), known=known)


def _compared_frames(figures: Path) -> dict[str, pd.DataFrame]:
    return {stem: pd.read_csv(figures / f"{stem}.csv") for stem in compared_stems(figures)}


def _distinct_cells(tables: dict[str, pd.DataFrame], *, known: pd.DataFrame | None) -> pd.DataFrame:
    frames, seen = [], {}
    for stem, table in tables.items():
        spec = registry.table(stem)
        cells = cell_states(table, spec, known=known)
        cells = cells[cells["state"].isin(list(_STATE_COLUMN))]
        keys = key_tuples(cells, spec.cell_keys)
        values = list(zip(cells["paper"].round(6), cells["reproduced"].round(6).fillna(-1e300)))
        seen[stem] = dict(zip(keys, values))
        repeats = []
        for key, value in zip(keys, values):
            other = spec.repeats.table if spec.repeats else None
            repeats.append(other if other and seen.get(other, {}).get(spec.repeats.key(key)) == value else "")
        frames.append(pd.DataFrame({"stem": stem, "key": keys, "state": cells["state"].map(_STATE_COLUMN).tolist(),
                                    "repeats": repeats}))
    return pd.concat(frames, ignore_index=True)


def distinct_totals(cells: pd.DataFrame) -> dict:
    """The totals of :func:`distinct_cells`, each repeated cell once in its most judged state, and ``repeated``."""
    judged = ("within", "explained", "unexplained")
    totals = cells.loc[cells["repeats"].eq(""), "state"].value_counts().to_dict()
    state = {(r["stem"], r["key"]): r["state"] for r in cells.to_dict("records")}
    for row in cells[cells["repeats"].ne("") & cells["state"].isin(judged)].to_dict("records"):
        first = state[(row["repeats"], registry.table(row["stem"]).repeats.key(row["key"]))]
        if first not in judged:  # judged here, not counted where first shown: counted as judged
            totals[first] -= 1
            totals[row["state"]] = totals.get(row["state"], 0) + 1
    out = {c: int(totals.get(c, 0)) for c in SUMMARY_COLUMNS}
    out["repeated"] = int(cells["repeats"].ne("").sum())
    return out


def summary(figures: Path, *, known: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per compared table: the counts the index opens with, its grade and the cells it repeats of another table.

    Parameters
    ----------
    figures : Path
        The folder of saved tables.
    known : pandas.DataFrame, optional
        As in :func:`cell_states`.

    Returns
    -------
    pandas.DataFrame
        ``attrs["totals"]`` holds :func:`distinct_totals`.
    """
    known = report.load_known_differences() if known is None else known  # read once for every table
    tables = _compared_frames(figures)
    cells = _distinct_cells(tables, known=known)
    rows = []
    for stem, table in tables.items():
        spec = registry.table(stem)
        counts = report.agreement_counts(table, stem, known=known)
        mine = cells[cells["stem"] == stem]
        rows.append({"stem": stem, "paper": spec.paper, "table": spec.reproduces, "compared": counts["compared"],
                     **{c: counts[c] for c in SUMMARY_COLUMNS}, "grade": grade(counts),
                     "repeated": int(mine["repeats"].ne("").sum()),
                     "repeats": spec.repeats.table if spec.repeats else ""})
    table = pd.DataFrame(rows)
    table.attrs["totals"] = distinct_totals(cells)
    return table


def _sentence(text: str) -> str:
    """Escaped, capitalised, with a full stop; `code` in backticks (as the README writes it) as ``<code>``."""
    if not text:
        return ""
    text = _e(text[:1].upper() + text[1:] + ("" if text.endswith(".") else "."))
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", text)


def _label(stem: str) -> str:
    spec = registry.table(stem)
    return f"{spec.paper} {spec.reproduces}"


def summary_html(table: pd.DataFrame, *, link, reasons: dict | None = None) -> str:
    """The index's summary table: counts, a graded badge and the reason per compared table, then the totals."""
    headers = ("Paper table", *SUMMARY_HEADERS, "Agreement") + (("Why",) if reasons is not None else ())
    head = "".join(f'<th scope="col">{_e(h)}</th>' for h in headers)
    body = []
    for r in table.to_dict("records"):
        name, symbol, text = r["grade"]
        nums = "".join(f'<td class="num" data-label="{_e(h)}">{int(r[c])}</td>'
                       for c, h in zip(SUMMARY_COLUMNS, SUMMARY_HEADERS))
        why = ""
        if reasons is not None:
            said = [_sentence(reasons.get(r["stem"], ""))]
            if r["repeated"]:
                said.insert(0, f"{r['repeated']} of its cells repeat cells of {_label(r['repeats'])}, counted once in "
                               "the totals.")
            why = f'<td data-label="Why">{" ".join(s for s in said if s) or "—"}</td>'
        body.append(f'<tr><th scope="row"><a href="{_e(link(r["stem"]))}">{_e(r["paper"])} {_e(r["table"])}</a></th>'
                    f'{nums}<td data-label="Agreement"><span class="grade grade-{name}"><span aria-hidden="true">{symbol}</span> '
                    f"{_e(text)}</span></td>{why}</tr>")
    totals = table.attrs.get("totals")
    foot = ""
    if totals:
        foot = (f'<tfoot><tr><th scope="row">All tables, each distinct cell once ({totals["repeated"]} repeated cells '
                "left out)</th>" + "".join(f'<td class="num" data-label="{_e(h)}">{totals[c]}</td>'
                          for c, h in zip(SUMMARY_COLUMNS, SUMMARY_HEADERS))
                + f'<td class="empty" colspan="{len(headers) - 1 - len(SUMMARY_COLUMNS)}"></td></tr></tfoot>')
    # no scroll box: every row and column shows at 1280 px; under 40rem each row reflows into a card (site.css)
    return ('<div class="summary-table"><table id="summary"><caption id="summary-caption">Every reproduced paper table: its cells by state (only cells '
            'within the tolerance count as reproduced)</caption>'
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody>{foot}</table></div>")


def summary_figure(table: pd.DataFrame) -> str:
    """The summary as a bar per table, split by state: each label HTML text (readable at every width), each bar an
    SVG whose parts are sized in percent and named with their counts."""
    fills = {"within": "#1b7837", "explained": "url(#hatch)", "unexplained": "#b2182b", "not_counted": "#d9d9d9",
             "not_run": "#ffffff"}
    names = dict(zip(SUMMARY_COLUMNS, SUMMARY_HEADERS))
    rows = []
    for r in table.to_dict("records"):
        total = sum(int(r[c]) for c in SUMMARY_COLUMNS) or 1
        label = f"{r['paper']} {r['table']}"
        said = ", ".join(f"{int(r[c])} {names[c]}" for c in SUMMARY_COLUMNS)
        x, parts = 0.0, []
        for c in SUMMARY_COLUMNS:
            w = 100 * int(r[c]) / total
            if w:
                parts.append(f'<rect x="{x:.2f}%" y="1" width="{w:.2f}%" height="18" fill="{fills[c]}" '
                             f'stroke="#1a1a1a"><title>{_e(label)}: {int(r[c])} {names[c]}</title></rect>')
                x += w
        rows.append(f'<li><span class="sf-label">{_e(label)}</span><svg class="sf-bar" role="img" '
                    f'aria-label="{_e(label)}: {_e(said)}" width="100%" height="20">{"".join(parts)}</svg></li>')
    legend = "; ".join(f"{h}: {'green' if c == 'within' else 'hatched' if c == 'explained' else 'red' if c == 'unexplained' else 'grey' if c == 'not_counted' else 'white'}"
                      for c, h in zip(SUMMARY_COLUMNS, SUMMARY_HEADERS))
    total = table.attrs.get("totals") or {c: int(table[c].sum()) for c in SUMMARY_COLUMNS}
    desc = ("Cells of every reproduced paper table by state, each distinct cell once: " + ", ".join(
        f"{total[c]} {h}" for c, h in zip(SUMMARY_COLUMNS, SUMMARY_HEADERS)) + f". Colours: {legend}.")
    return ('<figure class="summary-figure" aria-labelledby="sf-caption"><svg class="sf-defs" width="0" height="0" '
            'aria-hidden="true" focusable="false"><defs><pattern id="hatch" width="6" height="6" '
            'patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#f4a582"/>'
            '<line x1="0" y1="0" x2="0" y2="6" stroke="#1a1a1a" stroke-width="2"/></pattern></defs></svg>'
            f'<ul class="sf-rows">{"".join(rows)}</ul>'
            f'<figcaption id="sf-caption">Agreement of every reproduced paper table. {_e(desc)}</figcaption></figure>')
