"""The HTML pieces of the reviewer site (:mod:`vqalib.compendium.site`): status labels, column units, accessible
tables, the page frame and badges; pure functions that read no file."""

from __future__ import annotations

import html

import pandas as pd

from vqalib.compendium import grades
from vqalib.core import report
from vqalib.core import specs
from vqalib.core.inference import p_value_text
from vqalib.core.io import open_regular
from vqalib.core.out_folders import OutputKind

SITE_TITLE = "Accessible VQA research compendium"
MAX_ROWS = 2000  # rows per page; a longer table continues on further pages (every row is on the site)
NOT_RUN = "not run"


def _is_site_index(path) -> bool:
    """Whether ``path`` is the index page of a site :func:`vqalib.compendium.site.build` wrote (its title)."""
    with open_regular(path, what="site index") as handle:
        return f"<title>{SITE_TITLE}</title>".encode() in handle.read(1 << 16)


SITE = OutputKind(what="reviewer site", option="vqalib site build", marker="index.html", is_marker=_is_site_index)


def status(frame: pd.DataFrame, name: str) -> tuple[str, str]:
    """(css kind, label) of a table not graded against the paper: SIMULATED, not run, partly not run, or its counts.

    Parameters
    ----------
    frame : pandas.DataFrame
        The table as saved in ``figures/``.
    name : str
        The table's file stem; "SIMULATED" in it marks simulated data.
    """
    if "SIMULATED" in name:
        return "simulated", "SIMULATED data"
    if "status" in frame:
        not_run = frame["status"].astype(str).str.startswith(NOT_RUN)
        if not_run.all():
            return "not-run", "Not run"
        if not_run.any():
            return "partial", f"Partly not run ({int(not_run.sum())} of {len(frame)} rows)"
    if {"within_tolerance", "reproduced", "paper"} <= set(frame.columns):
        counts = report.agreement_summary(frame)
        if counts["compared"]:
            return "result", f"{counts['within']} of {counts['compared']} compared cells within tolerance"
    return "result", "Result"


def unit(column: str, values: pd.Series) -> str:
    """The unit shown under a column header where the column name and values make it certain, else "" (shares within
    [-1, 1] are proportions, else percentages)."""
    c = column.lower()
    if c in {"p", "friedman_p", "p_value"} or c.startswith("p_") or c.endswith("_p"):
        return "p-value"
    if c in {"ci_low", "ci_high", "ci95_low", "ci95_high"} or c.startswith("agreement_ci"):
        return "95% CI bound"
    if c == "n" or c.startswith("n_") or c in {"count", "occurrences", "mentions", "support", "rows", "answers_with"}:
        return "count"
    if "words" in c:
        return "words"
    if "chars" in c:
        return "characters"
    if "syllables" in c:
        return "syllables"
    if "fk" in c:
        return "FK grade level"
    numeric = pd.to_numeric(values, errors="coerce").dropna()
    if c.startswith("share") or c.endswith("_share") or "percent" in c:
        return "proportion (0–1)" if len(numeric) and numeric.abs().max() <= 1 else "%"
    return ""


# --- HTML -------------------------------------------------------------------------------------

def _e(text) -> str:
    return html.escape(str(text), quote=True)


def _column_texts(values: pd.Series, decimals: int, *, p_value: bool = False) -> tuple[list[str], bool]:
    """A column as shown (Markdown precision, whole numbers bare, p-values as "< 0.0001") and whether numeric."""
    if pd.api.types.is_bool_dtype(values):
        return ["yes" if v else "no" for v in values], False
    if p_value and pd.api.types.is_numeric_dtype(values):
        return [p_value_text(v) for v in values], True
    if pd.api.types.is_numeric_dtype(values):
        present = values.dropna()
        whole = bool(len(present)) and bool((present == present.round()).all()) and present.abs().max() < 1e15
        fmt = (lambda v: f"{int(v)}") if whole else (lambda v: f"{v:.{decimals}f}")
        return ["" if pd.isna(v) else fmt(v) for v in values], True
    return ["" if pd.isna(v) else str(v) for v in values], False


def html_table(frame: pd.DataFrame, *, caption: str, row_headers: list[str], decimals: int,
               max_rows: int = MAX_ROWS, table_id: str, start: int = 0, row_anchor: str = "") -> str:
    """An accessible table: caption, scoped column and row headers with units, "not run" rows marked, ``max_rows`` rows.

    Parameters
    ----------
    frame : pandas.DataFrame
        A table of ``figures/``.
    caption : str
    row_headers : list of str
        The columns shown as row headers.
    decimals : int
        Decimals of numeric columns that are not all whole numbers.
    max_rows : int, default MAX_ROWS
        The rows shown on this page.
    table_id : str
        The table's HTML id.
    start : int, default 0
        The first row shown.
    row_anchor : str, default ""
        When given, row k (from 1) gets the id ``<row_anchor>-<k>`` (evidence links point at it).
    """
    shown = frame.iloc[start:start + max_rows]
    cap = _e(caption) + (f' <span class="unit">rows {start + 1:,}–{start + len(shown):,} of {len(frame):,}; the other '
                         "rows are on the pages linked above</span>" if len(frame) > len(shown) else "")
    head = "".join(f'<th scope="col">{_e(c)}' + (f'<span class="unit">{_e(u)}</span>' if (u := unit(c, frame[c])) else "")
                   + "</th>" for c in frame.columns)
    columns = {c: _column_texts(shown[c], decimals, p_value=unit(c, frame[c]) == "p-value") for c in frame.columns}
    not_run = shown["status"].astype(str).str.startswith(NOT_RUN).tolist() if "status" in shown else [False] * len(shown)
    body = []
    for r in range(len(shown)):
        cells = []
        for column, (texts, numeric) in columns.items():
            if column in row_headers and texts[r]:
                cells.append(f'<th scope="row">{_e(texts[r])}</th>')
            elif column in row_headers:  # an empty key (Lex-Overlap has no reference) is no header
                cells.append("<td></td>")
            else:
                cells.append(f'<td class="num">{_e(texts[r])}</td>' if numeric else f"<td>{_e(texts[r])}</td>")
        attrs = (' class="row-not-run"' if not_run[r] else "") + (f' id="{row_anchor}-{start + r + 1}"' if row_anchor else "")
        body.append(f"<tr{attrs}>" + "".join(cells) + "</tr>")
    return (f'<div class="table-scroll" role="region" tabindex="0" aria-labelledby="{table_id}-caption">'
            f'<table id="{table_id}"><caption id="{table_id}-caption">{cap}</caption><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table></div>")


SITE_FOOTER = ("Regenerated from the public data by <code>make reproduce</code> and <code>make html</code>; every "
               "number comes from <code>figures/</code>.")


def page(*, title: str, body: str, depth: int, nav: list[tuple[str, str]] = (), home: str | None = "index.html",
         footer: str = SITE_FOOTER, script: str = "") -> str:
    """A whole page: language, viewport, ``title``, skip link, banner, ``nav``, main (``body``) and footer landmarks;
    ``depth`` folders below the site root; ``home`` the "Compendium home" link from there (None: none); ``footer``
    its HTML; ``script`` a local script's src, deferred (progressive enhancement; "": none, the usual)."""
    up = "../" * depth
    links = ([(home, "Compendium home")] if home else []) + list(nav)
    items = "".join(f'<li><a href="{up}{href}">{_e(label)}</a></li>' for href, label in links)
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{_e(title if title == SITE_TITLE else f'{title} · {SITE_TITLE}')}</title>"
            f'<link rel="stylesheet" href="{up}assets/site.css"><link rel="stylesheet" href="{up}assets/code.css">'
            + (f'<script src="{_e(script)}" defer></script>' if script else "") + "</head><body>"
            '<a class="skip-link" href="#main">Skip to main content</a>'
            f'<header class="site"><nav aria-label="Site"><ul>{items}</ul></nav></header>'
            f'<main id="main" tabindex="-1">{body}</main>'
            f'<footer class="site"><p>{footer}</p></footer>'
            "</body></html>\n")


def _badges(kind: str, label: str, spec: specs.Spec) -> str:
    paper = f'<span class="badge badge-paper">{_e(spec.paper)} {_e(spec.reproduces)}</span>' if spec.reproduces else ""
    if kind.startswith("grade-"):  # symbol, text and border style as well as colour
        symbol = grades.GRADES[kind.removeprefix("grade-")][0]
        return (f'<span class="badge grade {kind}"><span aria-hidden="true">{symbol}</span> Paper agreement, '
                f"{_e(label)}</span>{paper}")
    return f'<span class="badge badge-{kind}">{_e(label)}</span>{paper}'
