"""The reviewer's pages of the site (:mod:`vqalib.compendium.site`): a paper view per reproduced table, the index's
opening and the printable report (``make report``: ``build/report.pdf`` by headless Chromium).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pandas as pd

from vqalib.compendium import grades, paper_view
from vqalib.compendium.site_html import MAX_ROWS, _e, html_table, page
from vqalib.compendium.status import REASONS
from vqalib.core import upstream, declarations, evidence, registry, report

PAPER_LINKS = {  # the papers reproduced; AFGV's copy names no public address
    "VizWiz-LF": "https://arxiv.org/abs/2408.06303",
    "CommVQA": "https://arxiv.org/abs/2402.15002",
}


def paper_page(stem: str, figures: Path, *, known: pd.DataFrame | None = None) -> str:
    """``papers/<stem>.html``: one reproduced table in the paper's layout, with its agreement sentence, grade and reason.

    Parameters
    ----------
    stem : str
        A compared table of the registry.
    figures : Path
    known : pandas.DataFrame, optional
        Default ``data/paper/known_differences.csv``.
    """
    spec = registry.table(stem)
    frame = pd.read_csv(figures / f"{stem}.csv")
    counts = report.agreement_counts(frame, stem, known=known)
    name, symbol, text = grades.grade(counts)
    legend = " ".join(f'<span class="pv-key pv-{state}"><span aria-hidden="true">{symbol}</span> {_e(text)}</span>'
                      for state, (symbol, text) in paper_view.STATES.items() if state != "missing")
    body = (f"<h1>{_e(spec.paper)} {_e(spec.reproduces)}: the paper's numbers beside ours</h1>"
            f'<p class="lede">{_e(report.agreement_text(frame, stem, known=known))}</p>'
            f'<p>Grade: <span class="grade grade-{name}"><span aria-hidden="true">{symbol}</span> {_e(text)}</span> '
            f'(<a href="../index.html#grades">the grading rule</a>). {_e(_reason(stem))}</p>'
            "<p class=\"meta\">Each cell: the value the paper prints | ours, to one more decimal than the paper prints "
            f"in that column. States: {legend}. Open “Why: …” for the cause of a difference and links to the committed "
            "cells that show it. Only cells within the tolerance count as reproduced. "
            f'<a href="../sections/{spec.notebook}.html#table-{stem}">The full table with every column</a> · '
            f'<a href="../notebooks/{spec.notebook}.html">the notebook</a> · <a href="../figures/{stem}.csv">CSV</a>.</p>'
            + paper_view.paper_view(frame, spec, known=known, anchor=f"pv-{stem}",
                                    link=evidence_links(figures, prefix="../")))
    return page(title=f"{spec.paper} {spec.reproduces}: the paper's numbers beside ours", body=body, depth=1,
                nav=[(f"sections/{spec.notebook}.html", "Results of this notebook")])


def opening(table: pd.DataFrame) -> str:
    """The top of ``index.html``: where to start, the summary table and figure of every reproduced table, the sources.

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`vqalib.compendium.grades.summary`.
    """
    start = ('<section aria-labelledby="start"><h2 id="start">Start here</h2><ul>'
             "<li><strong>Reviewers</strong>: the summary below answers “does it reproduce?” for every paper table; "
             "each table's paper view shows the printed value beside ours, cell by cell, with the reason for every "
             "difference. The printable report is <code>make report</code>.</li>"
             "<li><strong>Researchers</strong>: each section is one notebook; its results page lists every table and "
             "figure it saves, and the notebook shows how they are computed.</li>"
             "<li><strong>Practitioners</strong>: the Scorecards at the end score models with <code>vqalib score</code>"
             "; the same tables for your model are one command away.</li></ul></section>")
    summary = ('<section aria-labelledby="answer"><h2 id="answer">Does it reproduce?</h2>' + grade_legend()
               + grades.summary_html(table, link=lambda s: f"papers/{s}.html", reasons=REASONS)
               + grades.summary_figure(table) + "</section>")
    return start + summary + sources()


def grade_legend() -> str:
    """The grading rule as the index and the report state it."""
    items = "".join(f'<li><span class="grade grade-{name}"><span aria-hidden="true">{symbol}</span> {_e(name.replace("-", " "))}</span>: '
                    f"{_e(meaning)}</li>" for name, (symbol, meaning) in grades.GRADES.items())
    return (f'<div id="grades"><p>Agreement grades, one rule for every table (a table with at least '
            f"{grades.MOSTLY_NOT_RUN:.0%} of its printed cells not run says so first; only cells within the "
            f'tolerance count as reproduced):</p><ul class="grades">{items}</ul></div>')


def _reason(stem: str) -> str:
    said = REASONS.get(stem, "").replace("`", "")
    return f"Why: {said}." if said else ""


def evidence_links(figures: Path, *, prefix: str):
    """A function from an evidence reference to ``(href, text)`` of the first site table row it cites (None for a
    ``data/paper/`` file, not on the site).

    Parameters
    ----------
    figures : Path
    prefix : str
        The path from the page to the site root.
    """
    read: dict = {}

    def link(reference: evidence.Reference):
        if not reference.path.startswith("figures/"):
            return None
        path = figures / reference.path.removeprefix("figures/")
        if path not in read:
            read[path] = None if not path.exists() else pd.read_csv(path, dtype=str, keep_default_na=False)
        if read[path] is None:
            return None
        rows = evidence.resolve(reference, root=figures, table=read[path]).index
        stem, first = path.stem, int(rows[0])
        page_k = first // MAX_ROWS
        page = f"{registry.table(stem).notebook}.html" if page_k == 0 else f"{stem}-rows-{page_k + 1}.html"
        where = " & ".join(f"{k}={v}" for k, v in reference.where)
        more = f" (first of {len(rows)} rows)" if len(rows) > 1 else ""
        return (f"{prefix}sections/{page}#{stem}-row-{first + 1}",
                f"{reference.path}, row {first + 1}{more}: {where} → {reference.column}")

    return link


def sources() -> str:
    """The sources section: the papers, the upstream data at their pinned commits, the provenance record."""
    papers = "".join(f'<li>{_e(p)}: <a href="{PAPER_LINKS[p]}">{_e(t)}</a></li>' if p in PAPER_LINKS
                     else f"<li>{_e(p)}: {_e(t)} (no public address in the copy this compendium works from)</li>"
                     for p, t in declarations.papers().items())
    repos = dict.fromkeys((f.dataset, f.repo, f.commit) for f in upstream.FILES)
    data = "".join(f'<li>{_e(d)}: <a href="https://github.com/{_e(r)}/tree/{_e(c)}">{_e(r)} at {_e(c[:12])}</a></li>'
                       for d, r, c in repos)
    return ('<section aria-labelledby="sources"><h2 id="sources">Sources</h2><h3>The papers</h3>'
            f"<ul>{papers}</ul><h3>The data, at the commits every number was computed from</h3><ul>{data}</ul>"
            '<p>Machine, versions, data hashes and tolerance rules of the run: <a href="figures/PROVENANCE.json">'
            "figures/PROVENANCE.json</a>.</p></section>")


def report_page(table: pd.DataFrame, figures: Path, *, known: pd.DataFrame | None = None) -> str:
    """``report.html``: the summary and every paper view on one page, explanations as numbered notes.

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`vqalib.compendium.grades.summary`.
    figures : Path
    known : pandas.DataFrame, optional
    """
    parts = ["<h1>Reproduction report: every paper table, the printed value beside ours</h1>", grade_legend(),
             grades.summary_html(table, link=lambda s: f"#{s}", reasons=REASONS)]
    link = evidence_links(figures, prefix="")
    for row in table.to_dict("records"):
        stem, (name, symbol, text) = row["stem"], row["grade"]
        spec = registry.table(stem)
        frame = pd.read_csv(figures / f"{stem}.csv")
        view = paper_view.paper_view(frame, spec, known=known, anchor=f"r-{stem}", notes=True, link=link)
        parts.append(f'<section class="report-table" id="{stem}" aria-labelledby="{stem}-h"><h2 id="{stem}-h">'
                     f"{_e(spec.paper)} {_e(spec.reproduces)}</h2><p>{_e(report.agreement_text(frame, stem, known=known))}"
                     f' Grade: <span class="grade grade-{name}"><span aria-hidden="true">{symbol}</span> {_e(text)}'
                     f"</span>. {_e(_reason(stem))}</p>{view}</section>")
    beside = beside_stems(figures)
    if beside:
        parts.insert(3, "<p>Also shown beside the paper's numbers in a notebook, without a graded comparison: "
                     + ", ".join(f'<a href="#{s}">{_e(_name(s))}</a>' for s in beside) + ".</p>")
    for stem in beside:
        spec = registry.table(stem)
        frame = pd.read_csv(figures / f"{stem}.csv")
        keys = [c for c in (spec.cell_keys or frame.columns[:1]) if c in frame.columns]
        parts.append(f'<section class="report-table report-beside" id="{stem}" aria-labelledby="{stem}-h">'
                     f'<h2 id="{stem}-h">{_e(_name(stem))}</h2><p>{_e(spec.title)}. Shown beside the paper\'s numbers '
                     "(the columns named paper…) by its notebook, not graded: the registry declares no comparison for "
                     "it.</p>" + html_table(frame, caption=f"{_name(stem)} (figures/{stem}.csv)", row_headers=keys,
                                            decimals=spec.md_decimals, table_id=f"r-{stem}") + "</section>")
    return page(title="Reproduction report: every paper table, the printed value beside ours", body="".join(parts),
                depth=0)


def _name(stem: str) -> str:
    spec = registry.table(stem)
    return f"{spec.paper} {spec.reproduces}"


def beside_stems(figures: Path) -> list[str]:
    """Tables a notebook shows beside the paper's numbers (a ``paper…`` column) without a graded comparison, one per
    paper table that no compared table covers (AFGV Table 2: the paper measured GQA, we the VizWiz-LF and CommVQA
    questions).

    Parameters
    ----------
    figures : Path
    """
    covered = {_name(stem) for stem in paper_view.compared_stems(figures)}
    out = []
    for stem, spec in registry.TABLES.items():
        path = figures / f"{stem}.csv"
        if spec.compared or "*" in stem or not spec.reproduces or _name(stem) in covered or not path.exists():
            continue
        if any(c.startswith("paper") for c in pd.read_csv(path, nrows=0).columns):
            out.append(stem)
            covered.add(_name(stem))
    return out


def write_pdf(html_path: Path, pdf_path: Path, *, chromium: str = "chromium") -> Path:
    """Print a page to PDF with headless Chromium (A4 landscape); a missing browser or failed print is a RuntimeError.

    Parameters
    ----------
    html_path : Path
    pdf_path : Path
        Replaced whole.
    chromium : str, default "chromium"
    """
    if shutil.which(chromium) is None:
        raise RuntimeError(f"{chromium} not found: install Debian's chromium package to print the report")
    tmp = pdf_path.with_name(f".{pdf_path.name}.tmp")
    command = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-pdf-header-footer",
               f"--print-to-pdf={tmp}", html_path.resolve().as_uri()]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0 or not tmp.exists() or tmp.stat().st_size == 0:
        raise RuntimeError(f"chromium could not print {html_path}: {done.stderr.strip()[-500:]}")
    tmp.replace(pdf_path)
    return pdf_path


def row_pages(figures: Path, *, sections) -> dict[str, str]:
    """The further pages of every table longer than :data:`~vqalib.compendium.site_html.MAX_ROWS` rows
    (``sections/<stem>-rows-<k>.html``).

    Parameters
    ----------
    figures : Path
    sections : list
        :func:`vqalib.compendium.site.sections`.

    Returns
    -------
    dict of str to str
        File name -> page.
    """
    pages = {}
    for section in sections:
        for item in section.items:
            if item.kind != "table":
                continue
            frame = pd.read_csv(figures / f"{item.name}.csv")
            keys = [c for c in (item.spec.cell_keys or frame.columns[:1]) if c in frame.columns]
            for k in range(1, -(-len(frame) // MAX_ROWS)):
                title = f"{item.spec.title}: rows {k * MAX_ROWS + 1:,}–{min((k + 1) * MAX_ROWS, len(frame)):,}"
                body = (f"<h1>{_e(title)}</h1><p class=\"meta\">Part {k + 1} of the table on "
                        f'<a href="{section.notebook}.html#{item.anchor}">its results page</a>; all rows are in '
                        f'<a href="../figures/{item.name}.csv">the CSV</a>.</p>'
                        + html_table(frame, caption=f"{item.spec.title} (figures/{item.name}.csv)", row_headers=keys,
                                     decimals=item.spec.md_decimals, table_id=f"{item.anchor}-rows-{k + 1}",
                                     start=k * MAX_ROWS, row_anchor=f"{item.name}-row"))
                pages[f"{item.name}-rows-{k + 1}.html"] = page(title=title, body=body, depth=1, nav=[
                    (f"sections/{section.notebook}.html", "Results of this notebook")])
    return pages
