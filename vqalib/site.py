"""The reviewer site (`make html`, audited by `make check-site`): the executed notebooks, every table of
``figures/`` as an accessible HTML table and every figure, organised by paper and section, offline.

Layout of ``build/html``::

    index.html                 papers -> sections (one per notebook) -> tables and figures, with status labels
    sections/<notebook>.html   each table (caption, header scope, units) and figure (short alt, long description
                               linked by aria-describedby), each linked to the notebook cell that made it
    notebooks/<notebook>.html  the rendered notebook; a cell that saves a table or figure links back to it
    figures/                   the files of ``figures/`` (CSV, Markdown, PNG, PDF, alt text)
    assets/                    one stylesheet (no scripts, fonts or CDN: the site works offline)

Status labels come from the files themselves: "SIMULATED" from the file name, "not run" from a ``status``
column, agreement counts from ``within_tolerance`` (:func:`vqalib.report.agreement_summary`).
"""

from __future__ import annotations

import argparse
import html
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import pandas as pd

from vqalib import registry, report
from vqalib.datasets import project_root

SITE_TITLE = "Accessible VQA research compendium"
CODE_STYLE = "a11y-high-contrast-light"  # accessible-pygments: WCAG AAA code colours
MAX_ROWS = 60  # rows shown per table on a page; the CSV beside it holds all
SAVE_CALL = re.compile(r"\b(?:report\.)?save(?:_figure)?\(")
NOT_RUN = "not run"


@dataclass
class Item:
    """One table or figure of ``figures/`` and where it was made."""

    name: str  # file stem
    spec: registry.Spec
    kind: str  # "table" or "figure"
    cell_id: str | None = None
    cell_label: str = ""
    files: list[str] = field(default_factory=list)

    @property
    def anchor(self) -> str:
        return f"{self.kind}-{self.name}"


@dataclass
class Section:
    """One notebook: its title (its H1), the paper it serves and what it saved."""

    notebook: str
    title: str
    paper: str
    items: list[Item]


# --- reading the notebooks and figures ------------------------------------------------------

def notebook_title(nb) -> str:
    """The notebook's first Markdown H1 (page titles and links use it)."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            match = re.search(r"^#\s+(.+)$", cell.source, flags=re.M)
            if match:
                return match.group(1).strip()
    raise ValueError("notebook has no Markdown H1 title")


def _saved_names(source: str) -> list[str]:
    """The second argument (the stem) of each ``save(frame, stem, …)``/``save_figure(fig, stem, …)`` call
    in a cell, as written: a quoted name, a variable or an expression."""
    names = []
    for match in SAVE_CALL.finditer(source):
        depth, start = 0, None
        for k in range(match.end(), len(source)):
            ch = source[k]
            if ch in "([{":
                depth += 1
            elif ch in ")]}":
                if depth == 0:
                    break
                depth -= 1
            elif ch == "," and depth == 0:
                if start is not None:
                    break
                start = k + 1
        if start is not None:
            names.append(source[start:k].strip())
    return names


def producing_cell(nb, name: str, *, kind: str = "table") -> tuple[str, str] | None:
    """The id and "In [k]" label of the code cell that saves ``name``: a save call whose stem argument
    is the quoted name; else one whose stem is a variable, in a cell quoting the name (a loop over
    stems) or, for a pattern entry (``…_*_means``), its last part. The last such cell, if several."""
    spec = registry.figure(name) if kind == "figure" else registry.table(name)
    quoted = {f'"{name}"', f"'{name}'"}
    tail = spec.stem.rsplit("*", 1)[1].lstrip("_") if "*" in spec.stem else None
    best: dict[int, tuple[str, str]] = {}
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        stems = _saved_names(cell.source)
        where = (cell.id, f"In [{cell.execution_count}]" if cell.execution_count else "a cell")
        if quoted & set(stems):
            best[0] = where
        elif any(not s.startswith(("'", '"')) for s in stems) and (
                any(q in cell.source for q in quoted) or (tail and f'"{tail}"' in cell.source)):
            best[1] = where
    return best.get(0) or best.get(1)


def sections(*, notebooks: Path, figures: Path) -> list[Section]:
    """Every notebook with the tables and figures it saved, in the order its cells made them."""
    import nbformat

    from vqalib.reproduce import notebook_paths

    files = sorted([(p.stem, "table") for p in figures.glob("*.csv")] + [(p.stem, "figure") for p in figures.glob("*.png")])
    out = []
    for path in notebook_paths(notebooks):
        nb = nbformat.read(path, as_version=4)
        order = {cell.id: k for k, cell in enumerate(nb.cells)}
        items = []
        for name, kind in files:
            spec = registry.figure(name) if kind == "figure" else registry.table(name)
            if spec.notebook != path.stem:
                continue
            where = producing_cell(nb, name, kind=kind)
            suffixes = (".png", ".pdf", ".alt.txt") if kind == "figure" else (".csv", ".md")
            items.append(Item(name=name, spec=spec, kind=kind, cell_id=where[0] if where else None,
                              cell_label=where[1] if where else "",
                              files=[f"{name}{s}" for s in suffixes if (figures / f"{name}{s}").exists()]))
        items.sort(key=lambda i: (order.get(i.cell_id, len(order)), i.kind != "table", i.name))
        papers = [i.spec.paper for i in items]
        out.append(Section(notebook=path.stem, title=notebook_title(nb), items=items,
                           paper=max(set(papers), key=papers.count) if papers else ""))
    return out


def status(frame: pd.DataFrame, name: str) -> tuple[str, str]:
    """(css kind, label) of a table: SIMULATED, not run, partly not run, or the agreement with the paper."""
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
    """The unit shown under a column header, where the column name and values make it certain."""
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


def _column_texts(values: pd.Series, decimals: int) -> tuple[list[str], bool]:
    """A column as shown (the Markdown file's precision; whole numbers without decimals when every
    value is whole) and whether it is numeric (right-aligned)."""
    if pd.api.types.is_bool_dtype(values):
        return ["yes" if v else "no" for v in values], False
    if pd.api.types.is_numeric_dtype(values):
        present = values.dropna()
        whole = bool(len(present)) and bool((present == present.round()).all()) and present.abs().max() < 1e15
        fmt = (lambda v: f"{int(v)}") if whole else (lambda v: f"{v:.{decimals}f}")
        return ["" if pd.isna(v) else fmt(v) for v in values], True
    return ["" if pd.isna(v) else str(v) for v in values], False


def html_table(frame: pd.DataFrame, *, caption: str, row_headers: list[str], decimals: int,
               max_rows: int = MAX_ROWS, table_id: str) -> str:
    """An accessible table: ``<caption>``, column headers with ``scope="col"`` and units, the key columns
    as row headers (``scope="row"``), "not run" rows marked, at most ``max_rows`` rows (the caption says so)."""
    shown = frame.head(max_rows)
    cap = _e(caption) + (f' <span class="unit">showing the first {len(shown):,} of {len(frame):,} rows; all rows '
                         "are in the CSV</span>" if len(frame) > len(shown) else "")
    head = "".join(f'<th scope="col">{_e(c)}' + (f'<span class="unit">{_e(u)}</span>' if (u := unit(c, frame[c])) else "")
                   + "</th>" for c in frame.columns)
    columns = {c: _column_texts(shown[c], decimals) for c in frame.columns}
    not_run = shown["status"].astype(str).str.startswith(NOT_RUN).tolist() if "status" in shown else [False] * len(shown)
    body = []
    for r in range(len(shown)):
        cells = []
        for column, (texts, numeric) in columns.items():
            if column in row_headers:
                cells.append(f'<th scope="row">{_e(texts[r])}</th>')
            else:
                cells.append(f'<td class="num">{_e(texts[r])}</td>' if numeric else f"<td>{_e(texts[r])}</td>")
        body.append(('<tr class="row-not-run">' if not_run[r] else "<tr>") + "".join(cells) + "</tr>")
    return (f'<div class="table-scroll" role="region" tabindex="0" aria-labelledby="{table_id}-caption">'
            f'<table id="{table_id}"><caption id="{table_id}-caption">{cap}</caption><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table></div>")


def page(*, title: str, body: str, depth: int, nav: list[tuple[str, str]] = ()) -> str:
    """A whole page: language, viewport, title, skip link, banner, main and footer landmarks."""
    up = "../" * depth
    links = [("index.html", "Compendium home"), *nav]
    items = "".join(f'<li><a href="{up}{href}">{_e(label)}</a></li>' for href, label in links)
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{_e(title if title == SITE_TITLE else f'{title} · {SITE_TITLE}')}</title>"
            f'<link rel="stylesheet" href="{up}assets/site.css"><link rel="stylesheet" href="{up}assets/code.css">'
            "</head><body>"
            '<a class="skip-link" href="#main">Skip to main content</a>'
            f'<header class="site"><nav aria-label="Site"><ul>{items}</ul></nav></header>'
            f'<main id="main" tabindex="-1">{body}</main>'
            '<footer class="site"><p>Regenerated from the public data by <code>make reproduce</code> and '
            "<code>make html</code>; every number comes from <code>figures/</code>.</p></footer>"
            "</body></html>\n")


def _badges(kind: str, label: str, spec: registry.Spec) -> str:
    paper = f'<span class="badge badge-paper">{_e(spec.paper)} {_e(spec.reproduces)}</span>' if spec.reproduces else ""
    return f'<span class="badge badge-{kind}">{_e(label)}</span>{paper}'


def _made_in(item: Item, section: Section) -> str:
    if not item.cell_id:
        return f'Made in <a href="../notebooks/{section.notebook}.html">{_e(section.title)}</a>.'
    return (f'Made in <a href="../notebooks/{section.notebook}.html#cell-{item.cell_id}">{_e(item.cell_label)} of '
            f"{_e(section.title)}</a>.")


def table_section(item: Item, section: Section, figures: Path) -> tuple[str, str, str]:
    """(html, css kind, label) of one table on a section page."""
    frame = pd.read_csv(figures / f"{item.name}.csv")
    kind, label = status(frame, item.name)
    title = item.spec.title if "*" not in item.spec.stem else f"{item.spec.title} ({item.name})"
    note = ""
    if kind == "simulated":
        note = ('<p class="simulated-note"><strong>SIMULATED:</strong> a study of the paper\'s design with simulated '
                "ratings; the study's per-rating data are not public. Not a result of the paper.</p>")
    elif kind == "not-run":
        reasons = "; ".join(dict.fromkeys(s.removeprefix(f"{NOT_RUN}: ") for s in frame["status"].astype(str)))
        how = "; ".join(dict.fromkeys(frame["how to enable"].astype(str))) if "how to enable" in frame else ""
        note = f'<p class="not-run-note"><strong>Not run:</strong> {_e(reasons)}' + (
            f" <strong>How to enable:</strong> {_e(how)}" if how else "") + "</p>"
    keys = [c for c in (item.spec.cell_keys or frame.columns[:1]) if c in frame.columns]
    downloads = " · ".join(f'<a href="../figures/{_e(f)}">{_e(f.rsplit(".", 1)[1].upper())}</a>'
                           for f in item.files if f.endswith((".csv", ".md")))
    body = (f'<section class="item" id="{item.anchor}" aria-labelledby="{item.anchor}-h">'
            f'<h2 id="{item.anchor}-h">{_e(title)}</h2><p>{_badges(kind, label, item.spec)}</p>{note}'
            f'<p class="meta">{_made_in(item, section)} Files: {downloads}.</p>'
            + html_table(frame, caption=f"{title} (figures/{item.name}.csv)", row_headers=keys,
                         decimals=item.spec.md_decimals, table_id=f"{item.anchor}-table")
            + "</section>")
    return body, kind, label


def figure_section(item: Item, section: Section, figures: Path) -> tuple[str, str, str]:
    """(html, css kind, label) of one figure: short alt on the image, the long description in a
    disclosure referenced by ``aria-describedby`` (read once, not repeated in a caption)."""
    long = (figures / f"{item.name}.alt.txt").read_text(encoding="utf-8").strip()
    kind, label = ("simulated", "SIMULATED data") if "SIMULATED" in item.name else ("result", "Figure")
    desc = f"{item.anchor}-description"
    body = (f'<section class="item" id="{item.anchor}" aria-labelledby="{item.anchor}-h">'
            f'<h2 id="{item.anchor}-h">{_e(item.spec.title)}</h2><p>{_badges(kind, label, item.spec)}</p>'
            f'<figure><img src="../figures/{item.name}.png" alt="{_e(report.short_alt(item.name))}" '
            f'aria-describedby="{desc}" loading="lazy">'
            f"<figcaption><details><summary>Long description</summary><p id=\"{desc}\">{_e(long)}</p></details>"
            f'<p class="meta">Open full size: <a href="../figures/{item.name}.png">PNG image</a> · '
            f'<a href="../figures/{item.name}.pdf">PDF (vector)</a>. {_made_in(item, section)}</p>'
            "</figcaption></figure></section>")
    return body, kind, label


def section_page(section: Section, figures: Path) -> tuple[str, list[tuple[Item, str, str]]]:
    """The results page of one notebook, and each item's status (for the index)."""
    parts, states = [], []
    for item in section.items:
        made = table_section if item.kind == "table" else figure_section
        body, kind, label = made(item, section, figures)
        parts.append(body)
        states.append((item, kind, label))
    missing = [s for s in registry.FIGURES.values() if s.notebook == section.notebook
               and not any(i.kind == "figure" and registry.figure(i.name) is s for i in section.items)]
    for spec in missing:  # a figure whose data are "not run" has no image this time
        parts.append(f'<section class="item" id="figure-{_e(spec.stem)}"><h2>{_e(spec.title)}</h2><p>'
                     f'<span class="badge badge-not-run">Not run</span></p><p class="not-run-note">Not drawn: the '
                     f"table it is drawn from ({_e(', '.join(spec.data))}) is not run.</p></section>")
    intro = (f'<h1>Results: {_e(section.title)}</h1><p class="lede">The tables and figures saved by the notebook '
             f'<a href="../notebooks/{section.notebook}.html">{_e(section.title)}</a> ({_e(section.paper)}), in the '
             "order it makes them. Each links to the cell that made it.</p>")
    nav = [(f"notebooks/{section.notebook}.html", "The notebook")]
    return page(title=f"Results: {section.title}", body=intro + "".join(parts), depth=1, nav=nav), states


def notebook_page(path: Path, section: Section) -> str:
    """The rendered notebook (nbconvert's ``basic`` template, no scripts), with cell anchors, table
    semantics, figures from ``figures/`` instead of inline data, and links from each producing cell
    to its result."""
    import nbformat
    from bs4 import BeautifulSoup
    from nbconvert import HTMLExporter

    body, _ = HTMLExporter(template_name="basic").from_notebook_node(nbformat.read(path, as_version=4))
    soup = BeautifulSoup(body, "html.parser")
    for link in soup.select("a.anchor-link"):  # "¶" links: a name-less link per heading
        link.decompose()
    for cell in soup.select("div.cell[id]"):
        cell["id"] = cell["id"].replace("cell-id=", "cell-")
    for n, table in enumerate(soup.select("table"), 1):
        table.attrs.pop("border", None)
        for th in table.select("thead th"):
            if not th.get_text(strip=True):
                th.name = "td"  # pandas' empty corner cell is not a header
            else:
                th["scope"] = "colgroup" if th.get("colspan") else "col"
        for th in table.select("tbody th"):
            th["scope"] = "row"
        wrapper = soup.new_tag("div", attrs={"class": "table-scroll", "role": "region", "tabindex": "0",
                                             "aria-label": f"Output table {n}"})
        table.wrap(wrapper)
    for fig in soup.select("figure.vqalib-figure"):
        name = fig["data-figure"]
        fig.img["src"] = f"../figures/{name}.png"  # the page loads the committed file, not 200 KB of base64
        links = BeautifulSoup(f'<p class="meta">Open full size: <a href="../figures/{_e(name)}.png">PNG image</a> · '
                              f'<a href="../figures/{_e(name)}.pdf">PDF (vector)</a></p>', "html.parser")
        fig.figcaption.append(links)
    by_cell: dict[str, list[Item]] = {}
    for item in section.items:
        if item.cell_id:
            by_cell.setdefault(item.cell_id, []).append(item)
    for cell_id, items in by_cell.items():
        cell = soup.find(id=f"cell-{cell_id}")
        links = ", ".join(f'<a href="../sections/{section.notebook}.html#{i.anchor}">{_e(i.spec.title)}'
                          f'{" (" + _e(i.name) + ")" if "*" in i.spec.stem else ""}</a>' for i in items)
        cell.insert_after(BeautifulSoup(f'<p class="site-links">This cell saves: {links}.</p>', "html.parser"))
    nav = [(f"sections/{section.notebook}.html", "Results of this notebook")]
    return page(title=section.title, body=str(soup), depth=1, nav=nav)


def index_page(all_sections: list[Section], states: dict[str, list[tuple[Item, str, str]]]) -> str:
    """Papers, then their sections (notebooks), then each table and figure with its status label."""
    parts = [f"<h1>{_e(SITE_TITLE)}</h1>",
             '<p class="lede">Every table and figure of three papers on visual question answering for blind and '
             "low-vision people, regenerated from the public data. Each section is one notebook: read its results "
             "or the notebook itself. Labels: <span class=\"badge badge-result\">Result</span> computed here; "
             '<span class="badge badge-not-run">Not run</span> a resource is missing (the page says how to enable '
             'it); <span class="badge badge-simulated">SIMULATED data</span> illustrative data of the paper\'s '
             "design, not a finding.</p>"]
    for paper, title in registry.PAPERS.items():
        mine = [s for s in all_sections if s.paper == paper]
        if not mine:
            continue
        parts.append(f'<section aria-labelledby="paper-{_e(paper)}"><h2 id="paper-{_e(paper)}">{_e(paper)}: '
                     f"{_e(title)}</h2>")
        for s in mine:
            items = "".join(f'<li><a href="sections/{s.notebook}.html#{item.anchor}">{_e(item.spec.title)}'
                            f'{" (" + _e(item.name) + ")" if "*" in item.spec.stem else ""}</a> '
                            f"{_badges(kind, label, item.spec)}</li>" for item, kind, label in states[s.notebook])
            parts.append(f'<h3><a href="sections/{s.notebook}.html">{_e(s.title)}</a></h3>'
                         f'<p class="meta"><a href="notebooks/{s.notebook}.html">Read the notebook {_e(s.notebook)}'
                         f'</a> · {len(s.items)} tables and figures</p><ul class="items">{items}</ul>')
        parts.append("</section>")
    return page(title=SITE_TITLE, body="".join(parts), depth=0)


def build(*, out: Path | None = None, notebooks: Path | None = None, figures: Path | None = None) -> Path:
    """Write the site into ``out`` (default ``build/html``) from the committed notebooks and ``figures/``."""
    from pygments.formatters import HtmlFormatter

    root = project_root()
    out = out or root / "build" / "html"
    notebooks = notebooks or root / "notebooks"
    figures = figures or root / "figures"
    if out.exists():
        shutil.rmtree(out)
    for folder in ("notebooks", "sections", "assets"):
        (out / folder).mkdir(parents=True)
    shutil.copytree(figures, out / "figures", ignore=shutil.ignore_patterns(".*"))
    (out / "assets" / "site.css").write_text(resources.files("vqalib").joinpath("site.css").read_text("utf-8"), "utf-8")
    (out / "assets" / "code.css").write_text(HtmlFormatter(style=CODE_STYLE).get_style_defs(".highlight"), "utf-8")
    all_sections = sections(notebooks=notebooks, figures=figures)
    states = {}
    for section in all_sections:
        text, states[section.notebook] = section_page(section, figures)
        (out / "sections" / f"{section.notebook}.html").write_text(text, encoding="utf-8")
        page_html = notebook_page(notebooks / f"{section.notebook}.ipynb", section)
        (out / "notebooks" / f"{section.notebook}.html").write_text(page_html, encoding="utf-8")
    (out / "index.html").write_text(index_page(all_sections, states), encoding="utf-8")
    return out


def check(*, site: Path, out: Path) -> int:
    """Audit every page in headless Chromium with axe-core and a keyboard walk (``site-check/``)."""
    script = project_root() / "site-check" / "check.mjs"
    command = ["node", str(script), "--site", str(site), "--out", str(out),
               "--screenshot", "index.html", "--screenshot", "notebooks/02_functional_roles.html"]
    return subprocess.run(command, check=False).returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vqalib.site", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("build", help="write build/html from notebooks/ and figures/")
    c = sub.add_parser("check", help="build, then audit every page (Chromium, axe-core, keyboard walk)")
    c.add_argument("--out", default="build/site-check", help="report and screenshots folder")
    args = parser.parse_args(argv)
    site = build()
    print(f"wrote {site / 'index.html'}")
    if args.command == "check":
        return check(site=site, out=Path(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
