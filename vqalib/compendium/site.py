"""The reviewer site (`make html`, audited by `make check-site`), offline: ``index.html`` by paper and section,
``sections/<notebook>.html`` (each table and figure, linked to the cell that saved it: ``figures/SAVED_BY.json``),
``notebooks/<notebook>.html`` (the rendered notebook, linking back), ``papers/`` and ``figures/``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import pandas as pd

from vqalib.compendium import grades
from vqalib.compendium.site_html import SITE, MAX_ROWS, NOT_RUN, SITE_TITLE, _badges, _e, html_table, page, status
from vqalib.core import declarations, figure_files, registry, report, saved_by, specs
from vqalib.core.io import project_root
from vqalib.core.out_folders import replace_folder

CODE_STYLE = "a11y-high-contrast-light"  # accessible-pygments: WCAG AAA code colours


@dataclass
class Item:
    """One table or figure of ``figures/`` and where it was made."""

    name: str  # file stem
    spec: specs.Spec
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
    """The notebook's first Markdown H1 (page titles and links); none is a ValueError.

    Parameters
    ----------
    nb : nbformat.NotebookNode
    """
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            match = re.search(r"^#\s+(.+)$", cell.source, flags=re.M)
            if match:
                return match.group(1).strip()
    raise ValueError("notebook has no Markdown H1 title")


def producing_cell(nb, entry: dict | None) -> tuple[str, str] | None:
    """The id and "In [k]" label of the cell the record names (:mod:`vqalib.core.saved_by`), if it is in ``nb``.

    Parameters
    ----------
    nb : nbformat.NotebookNode
    entry : dict or None
        The file's entry of ``figures/SAVED_BY.json``.
    """
    cell = next((c for c in nb.cells if entry and c.get("id") == entry["cell"] and c.cell_type == "code"), None)
    if cell is None:
        return None
    return cell.id, f"In [{cell.execution_count}]" if cell.execution_count else "a cell"


def sections(*, notebooks: Path, figures: Path) -> list[Section]:
    """Every notebook with the tables and figures it saved (those its registry entries name), in the order its cells
    made them (an item without a recorded cell last).

    Parameters
    ----------
    notebooks : Path
    figures : Path
        The saved tables (``*.csv``), figures (``*.png``) and ``SAVED_BY.json``.

    Returns
    -------
    list of Section
    """
    import nbformat

    from vqalib.compendium.reproduce import notebook_paths

    files = sorted([(p.stem, "table") for p in figures.glob("*.csv")] + [(p.stem, "figure") for p in figures.glob("*.png")])
    record = saved_by.read(figures)
    out = []
    for path in notebook_paths(notebooks):
        nb = nbformat.read(path, as_version=4)
        order = {cell.id: k for k, cell in enumerate(nb.cells)}
        items = []
        for name, kind in files:
            spec = registry.figure(name) if kind == "figure" else registry.table(name)
            if spec.notebook != path.stem:
                continue
            suffixes = (".png", ".pdf", ".alt.txt") if kind == "figure" else (".csv", ".md")
            where = producing_cell(nb, record.get(f"{name}{suffixes[0]}"))
            items.append(Item(name=name, spec=spec, kind=kind, cell_id=where[0] if where else None,
                              cell_label=where[1] if where else "",
                              files=[f"{name}{s}" for s in suffixes if (figures / f"{name}{s}").exists()]))
        items.sort(key=lambda i: (order.get(i.cell_id, len(order)), i.kind != "table", i.name))
        papers = [i.spec.paper for i in items]
        out.append(Section(notebook=path.stem, title=notebook_title(nb), items=items,
                           paper=max(set(papers), key=papers.count) if papers else ""))
    return out


# --- pages -------------------------------------------------------------------------------------

def _made_in(item: Item, section: Section) -> str:
    if not item.cell_id:
        return f'Made in <a href="../notebooks/{section.notebook}.html">{_e(section.title)}</a>.'
    return (f'Made in <a href="../notebooks/{section.notebook}.html#cell-{item.cell_id}">{_e(item.cell_label)} of '
            f"{_e(section.title)}</a>.")


def table_section(item: Item, section: Section, figures: Path) -> tuple[str, str, str]:
    """One table on a section page: heading, badges (a compared table's grade), notes, the producing cell, downloads and
    the accessible HTML table.

    Parameters
    ----------
    item : Item
    section : Section
    figures : Path

    Returns
    -------
    (html, kind, label) : tuple of str
        The ``<section>``, then the badge's kind and label (for the index).
    """
    frame = pd.read_csv(figures / f"{item.name}.csv")
    if item.spec.compared and "*" not in item.spec.stem and "SIMULATED" not in item.name:  # the summary's grade
        grade, _, label = grades.grade(report.agreement_counts(frame, item.name))
        kind = f"grade-{grade}"
    else:
        kind, label = status(frame, item.name)
    title = item.spec.title if "*" not in item.spec.stem else f"{item.spec.title} ({item.name})"
    note = ""
    if kind == "simulated":
        note = ('<p class="simulated-note"><strong>SIMULATED:</strong> a study of the paper\'s design with simulated '
                "ratings; the study's per-rating data are not public. Not a result of the paper.</p>")
    elif kind in ("not-run", "grade-not-run"):
        reasons = "; ".join(dict.fromkeys(s.removeprefix(f"{NOT_RUN}: ") for s in frame["status"].astype(str)))
        how = "; ".join(dict.fromkeys(frame["how to enable"].astype(str))) if "how to enable" in frame else ""
        note = f'<p class="not-run-note"><strong>Not run:</strong> {_e(reasons)}' + (
            f" <strong>How to enable:</strong> {_e(how)}" if how else "") + "</p>"
    keys = [c for c in (item.spec.cell_keys or frame.columns[:1]) if c in frame.columns]
    downloads = " · ".join(f'<a href="../figures/{_e(f)}">{_e(f.rsplit(".", 1)[1].upper())}</a>'
                           for f in item.files if f.endswith((".csv", ".md")))
    if len(frame) > MAX_ROWS:
        downloads += ". Rows: " + ", ".join(f'<a href="{item.name}-rows-{k + 1}.html">{k * MAX_ROWS + 1:,}–'
                                            f'{min((k + 1) * MAX_ROWS, len(frame)):,}</a>'
                                            for k in range(1, -(-len(frame) // MAX_ROWS)))
    if item.spec.compared and "*" not in item.spec.stem:
        downloads += f' · <a href="../papers/{item.name}.html">the paper view (printed value beside ours)</a>'
    body = (f'<section class="item" id="{item.anchor}" aria-labelledby="{item.anchor}-h">'
            f'<h2 id="{item.anchor}-h">{_e(title)}</h2><p>{_badges(kind, label, item.spec)}</p>{note}'
            f'<p class="meta">{_made_in(item, section)} Files: {downloads}.</p>'
            + html_table(frame, caption=f"{title} (figures/{item.name}.csv)", row_headers=keys,
                         decimals=item.spec.md_decimals, table_id=f"{item.anchor}-table", row_anchor=f"{item.name}-row")
            + "</section>")
    return body, kind, label


def figure_section(item: Item, section: Section, figures: Path) -> tuple[str, str, str]:
    """One figure: short alt on the image, the long description in a disclosure referenced by ``aria-describedby``.

    Parameters
    ----------
    item : Item
    section : Section
    figures : Path

    Returns
    -------
    (html, kind, label) : tuple of str
    """
    long = (figures / f"{item.name}.alt.txt").read_text(encoding="utf-8").strip()
    kind, label = ("simulated", "SIMULATED data") if "SIMULATED" in item.name else ("result", "Figure")
    desc = f"{item.anchor}-description"
    body = (f'<section class="item" id="{item.anchor}" aria-labelledby="{item.anchor}-h">'
            f'<h2 id="{item.anchor}-h">{_e(item.spec.title)}</h2><p>{_badges(kind, label, item.spec)}</p>'
            f'<figure><img src="../figures/{item.name}.png" alt="{_e(figure_files.short_alt(item.name))}" '
            f'aria-describedby="{desc}" loading="lazy">'
            f"<figcaption><details><summary>Long description</summary><p id=\"{desc}\">{_e(long)}</p></details>"
            f'<p class="meta">Open full size: <a href="../figures/{item.name}.png">PNG image</a> · '
            f'<a href="../figures/{item.name}.pdf">PDF (vector)</a>. {_made_in(item, section)}</p>'
            "</figcaption></figure></section>")
    return body, kind, label


def section_page(section: Section, figures: Path) -> tuple[str, list[tuple[Item, str, str]]]:
    """The results page of one notebook (a registered figure without an image is listed as not drawn).

    Parameters
    ----------
    section : Section
    figures : Path

    Returns
    -------
    (html, states) : tuple of str and list of (Item, str, str)
        The page and each item's ``(item, kind, label)``, for the index.
    """
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
    """The rendered notebook (nbconvert's ``basic`` template, no scripts) with cell anchors, table semantics, figures
    loaded from ``figures/`` and, after each producing cell, links to what it saved.

    Parameters
    ----------
    path : Path
        The executed notebook.
    section : Section
    """
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


def index_page(all_sections: list[Section], states: dict[str, list[tuple[Item, str, str]]], *,
               scorecards: list[tuple[str, str]] = (), opening: str = "") -> str:
    """``index.html``: the opening, then the papers, their sections and each table and figure with its status label.

    Parameters
    ----------
    all_sections : list of Section
    states : dict of str to list of (Item, str, str)
        Per notebook, :func:`section_page`'s states.
    scorecards : sequence of (str, str), default ()
        ``(href, title)`` of the scorecards, listed last.
    opening : str, default ""
        HTML after the lede (:func:`vqalib.compendium.site_printable.opening`).
    """
    parts = [f"<h1>{_e(SITE_TITLE)}</h1>",
             '<p class="lede">Every table and figure of three papers on visual question answering for blind and '
             "low-vision people, regenerated from the public data. Each section is one notebook: read its results "
             "or the notebook itself. Labels: a compared table's <a href=\"#grades\">agreement grade</a>; "
             "<span class=\"badge badge-result\">Result</span> computed here; "
             '<span class="badge badge-not-run">Not run</span> a resource is missing (the page says how to enable '
             'it); <span class="badge badge-simulated">SIMULATED data</span> illustrative data of the paper\'s '
             "design, not a finding.</p>", opening]
    for paper, title in declarations.papers().items():
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
    if scorecards:
        links = "".join(f'<li><a href="{_e(href)}">{_e(title)}</a></li>' for href, title in scorecards)
        parts.append('<section aria-labelledby="scorecards"><h2 id="scorecards">Scorecards: models scored with '
                     "<code>vqalib score</code></h2><p>Each scorecard sets a model's tables beside the released models "
                     f'and the papers (folders under <code>scores/</code>).</p><ul class="items">{links}</ul></section>')
    return page(title=SITE_TITLE, body="".join(parts), depth=0)


def build(*, out: Path | None = None, notebooks: Path | None = None, figures: Path | None = None) -> Path:
    """Write the site into ``out`` (default ``build/html``, swapped in whole) from the notebooks and ``figures/``.

    Parameters
    ----------
    out : Path, optional
    notebooks, figures : Path, optional
        Default ``notebooks/`` and ``figures/``.
    """
    root = project_root()
    notebooks = notebooks or root / "notebooks"
    figures = figures or root / "figures"
    return replace_folder(out or root / "build" / "html", kind=SITE,
                          fill=lambda fresh: _write_site(fresh, root=root, notebooks=notebooks, figures=figures))


def _write_site(out: Path, *, root: Path, notebooks: Path, figures: Path) -> None:
    """Every page and file of the site, into the empty folder ``out``."""
    from pygments.formatters import HtmlFormatter

    from vqalib.compendium import leaderboard_files, paper_view, site_printable
    from vqalib.compendium.scorecard_files import scorecard_pages

    for folder in ("notebooks", "sections", "assets", "papers"):
        (out / folder).mkdir(parents=True)
    shutil.copytree(figures, out / "figures", ignore=shutil.ignore_patterns(".*"))
    (out / "assets" / "site.css").write_text(resources.files("vqalib.compendium").joinpath("site.css").read_text("utf-8"), "utf-8")
    (out / "assets" / "code.css").write_text(HtmlFormatter(style=CODE_STYLE).get_style_defs(".highlight"), "utf-8")
    all_sections = sections(notebooks=notebooks, figures=figures)
    states = {}
    for section in all_sections:
        text, states[section.notebook] = section_page(section, figures)
        (out / "sections" / f"{section.notebook}.html").write_text(text, encoding="utf-8")
        page_html = notebook_page(notebooks / f"{section.notebook}.ipynb", section)
        (out / "notebooks" / f"{section.notebook}.html").write_text(page_html, encoding="utf-8")
    for name, text in site_printable.row_pages(figures, sections=all_sections).items():
        (out / "sections" / name).write_text(text, encoding="utf-8")
    for stem in paper_view.compared_stems(figures):
        (out / "papers" / f"{stem}.html").write_text(site_printable.paper_page(stem, figures), encoding="utf-8")
    summary = grades.summary(figures)  # one read of every compared table, for the index and the report
    (out / "report.html").write_text(site_printable.report_page(summary, figures), encoding="utf-8")
    cards = scorecard_pages(root / "scores", out / "scores")
    board = leaderboard_files.site_page(root, out)
    ranked = (f'<p class="lede"><a href="{board}">The leaderboard</a>: every released model and scorecard on the papers\' '
              "measures, with intervals, in tiers only where paired tests separate them.</p>") if board else ""
    (out / "index.html").write_text(index_page(all_sections, states, scorecards=cards,
                                               opening=ranked + site_printable.opening(summary)), encoding="utf-8")


def check(*, site: Path, out: Path, timeout: float | None = None) -> int:
    """Audit every page in headless Chromium with axe-core and a keyboard walk (``site-check/``).

    Parameters
    ----------
    site : Path
    out : Path
        The folder for the report and screenshots.
    timeout : float, optional
        Base of each page's time limit, s.

    Returns
    -------
    int
        0 every page passes, 1 a page fails, 2 a setup or internal error.
    """
    shots = ("index.html", "notebooks/02_functional_roles.html", "papers/vizwiz-lf_table04_automatic_eval.html")
    command = ["node", str(project_root() / "site-check" / "check.mjs"), "--site", str(site), "--out", str(out),
               *(["--timeout", str(timeout)] if timeout is not None else []), *(f"--screenshot={s}" for s in shots)]
    return subprocess.run(command, check=False).returncode
