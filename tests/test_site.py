"""The reviewer site (vqalib.compendium.site): built from the committed notebooks and figures/, checked as HTML here;
`make check-site` audits it in headless Chromium with axe-core and a keyboard walk."""

import re
from pathlib import Path

import nbformat
import pandas as pd
import pytest
from bs4 import BeautifulSoup

import shutil

from vqalib.compendium import grades, paper_view, site, site_html, site_printable
from vqalib.core import declarations, figure_files, registry, report
from vqalib.core.io import project_root

ROOT = project_root()
FIGURES = ROOT / "figures"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    return site.build(out=tmp_path_factory.mktemp("site") / "html")


def pages(out: Path) -> dict[str, BeautifulSoup]:
    return {str(p.relative_to(out)): BeautifulSoup(p.read_text(encoding="utf-8"), "html.parser")
            for p in sorted(out.rglob("*.html"))}


@pytest.fixture(scope="module")
def soups(built) -> dict[str, BeautifulSoup]:
    """Every page of the built site, parsed once for the tests that read them (they do not change them)."""
    return pages(built)


def test_every_page_has_landmarks_a_skip_link_a_real_title_and_nothing_from_other_hosts(soups, built):
    for name, soup in soups.items():
        assert soup.html["lang"] == "en", name
        assert soup.find("meta", attrs={"name": "viewport"}), name
        h1 = soup.find_all("h1")
        assert len(h1) == 1, name
        assert soup.title.get_text().startswith(h1[0].get_text(strip=True)), name  # the title says what the H1 says
        first_link = soup.find("a")
        assert first_link["href"] == "#main" and "skip-link" in first_link["class"], name
        assert soup.find("main", id="main") and soup.find("header") and soup.find("footer"), name
        # no require.js, MathJax or CDN: the site works offline; the leaderboard's sort buttons are one local file
        scripts = soup.find_all("script")
        if name == "leaderboard/index.html":
            assert len(scripts) == 1 and not scripts[0].string and "/" not in scripts[0]["src"], scripts
            assert (built / "leaderboard" / scripts[0]["src"]).is_file()
        else:
            assert not scripts, name
        for tag in soup.find_all(src=True) + soup.find_all("link", href=True):
            url = tag.get("src") or tag.get("href")
            assert not re.match(r"(https?:)?//", url), f"{name}: {url}"
        assert not soup.select("a.anchor-link"), name  # the "¶" links


def test_notebook_pages_are_titled_by_their_h1(built):
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        soup = BeautifulSoup((built / "notebooks" / f"{path.stem}.html").read_text(), "html.parser")
        title = site.notebook_title(nbformat.read(path, as_version=4))
        assert soup.title.get_text().startswith(title)
        assert soup.h1.get_text(strip=True) == title


def test_every_table_is_an_accessible_html_table_linked_both_ways_with_its_notebook_cell(soups):
    for csv in sorted(FIGURES.glob("*.csv")):
        spec = registry.table(csv.stem)
        section = soups[f"sections/{spec.notebook}.html"]
        block = section.find(id=f"table-{csv.stem}")
        assert block is not None, csv.name
        table = block.find("table")
        assert table.caption and csv.name in table.caption.get_text()
        assert all(th.get("scope") in {"col", "row"} for th in table.find_all("th"))
        assert len(table.thead.find_all("th")) == len(pd.read_csv(csv, nrows=0).columns)
        # to the cell that made it, and back
        cell_link = block.find("a", href=re.compile(rf"^\.\./notebooks/{spec.notebook}\.html#cell-"))
        assert cell_link is not None, f"{csv.name}: no link to its notebook cell"
        notebook = soups[f"notebooks/{spec.notebook}.html"]
        cell = notebook.find(id=cell_link["href"].split("#")[1])
        assert cell is not None, f"{csv.name}: {cell_link['href']} is not on the notebook page"
        back = cell.find_next_sibling("p", class_="site-links")
        assert back.find("a", href=f"../sections/{spec.notebook}.html#table-{csv.stem}"), csv.name
        # the index lists it
        assert soups["index.html"].find("a", href=f"sections/{spec.notebook}.html#table-{csv.stem}"), csv.name


def test_figures_have_a_short_alt_and_a_long_description_linked_not_repeated(soups):
    for png in sorted(FIGURES.glob("*.png")):
        spec = registry.figure(png.stem)
        long = (FIGURES / f"{png.stem}.alt.txt").read_text(encoding="utf-8").strip()
        for page in (f"sections/{spec.notebook}.html", f"notebooks/{spec.notebook}.html"):
            img = soups[page].find("img", src=f"../figures/{png.name}")
            assert img is not None, f"{png.name} not on {page}"
            assert img["alt"] == figure_files.short_alt(png.stem) and len(img["alt"]) < 150
            description = soups[page].find(id=img["aria-describedby"])
            assert description.get_text(strip=True) == long
            assert soups[page].get_text().count(long) == 1  # said once
            assert img.find_parent("a") is None  # the image is not a link named by its alt
            assert soups[page].find("a", href=f"../figures/{png.name}")  # full size


def test_not_run_and_simulated_tables_are_labelled(soups):
    index = soups["index.html"]
    for csv in sorted(FIGURES.glob("*.csv")):
        frame = pd.read_csv(csv)
        item = index.find("a", href=re.compile(rf"#table-{re.escape(csv.stem)}$")).parent
        labels = item.get_text(" ", strip=True)
        spec = registry.table(csv.stem)
        if "SIMULATED" in csv.stem:
            assert item.find(class_="badge-simulated"), csv.name
        elif spec.compared and "*" not in spec.stem:  # the index summary's grade, symbol and text as well as colour
            name, symbol, text = grades.grade(report.agreement_counts(frame, csv.stem))
            badge = item.find(class_=f"grade-{name}")
            assert badge and text in labels and badge.find(attrs={"aria-hidden": "true"}).get_text() == symbol, csv.name
        elif "status" in frame and frame["status"].astype(str).str.startswith("not run").all():
            assert "Not run" in labels, csv.name
        elif "status" in frame and frame["status"].astype(str).str.startswith("not run").any():
            assert "Partly not run" in labels, csv.name
        else:
            assert item.find(class_="badge-result"), csv.name


def test_index_is_organised_by_paper_then_section(built, soups):
    index = soups["index.html"]
    papers = [h.get_text() for h in index.find_all("h2")]
    assert [p.split(":")[0] for p in papers] == ["Start here", "Does it reproduce?", "Sources", *declarations.papers(),
                                                  "Scorecards"]
    vizwiz = index.find("h2", id="paper-VizWiz-LF").find_parent("section")
    assert [a["href"] for a in vizwiz.select("h3 a")] == [f"sections/0{k}_{n}.html" for k, n in (
        (1, "dataset_stats"), (2, "functional_roles"), (3, "automatic_eval"), (4, "human_eval_stats"), (5, "abstention"),
        (9, "score_a_model"))] + ["sections/10_leaderboard.html"]  # the leaderboard's items are mostly VizWiz-LF's
    assert index.find("a", href="leaderboard/index.html") and (built / "leaderboard" / "index.html").exists()
    cards = index.find("h2", id="scorecards").find_parent("section")
    assert [a["href"] for a in cards.select("li a")] == ["scores/llava-released/index.html"]
    assert (built / "scores" / "llava-released" / "scorecard.json").exists()


def test_long_tables_are_paged_and_say_so():
    frame = pd.DataFrame({"question_id": range(100), "share": [0.5] * 100, "n": range(100)})
    text = site_html.html_table(frame, caption="T", row_headers=["question_id"], decimals=2, max_rows=10, table_id="t")
    soup = BeautifulSoup(text, "html.parser")
    assert len(soup.tbody.find_all("tr")) == 10
    assert "rows 1–10 of 100" in soup.caption.get_text()
    later = BeautifulSoup(site_html.html_table(frame, caption="T", row_headers=["question_id"], decimals=2, max_rows=10,
                                               table_id="t", start=90), "html.parser")
    assert [tr.th.get_text() for tr in later.tbody.find_all("tr")][0] == "90"
    assert [u.get_text() for u in soup.select("thead .unit")] == ["proportion (0–1)", "count"]
    assert soup.select_one("tbody th").get("scope") == "row"
    assert soup.select_one(".table-scroll")["tabindex"] == "0"  # a scrolling region keyboard users can reach


def test_producing_cell_is_the_cell_the_record_names():
    """The site links a result to the cell `vqalib reproduce` recorded (figures/SAVED_BY.json), not a source scan."""
    cells = [nbformat.v4.new_code_cell("report.check(t, stem)"), nbformat.v4.new_code_cell("x")]
    for k, cell in enumerate(cells):
        cell.id, cell.execution_count = f"c{k}", k + 1
    cells[1].execution_count = None
    nb = nbformat.v4.new_notebook(cells=cells)
    assert site.producing_cell(nb, {"notebook": "01_x", "cell": "c0"}) == ("c0", "In [1]")
    assert site.producing_cell(nb, {"notebook": "01_x", "cell": "c1"}) == ("c1", "a cell")
    assert site.producing_cell(nb, {"notebook": "01_x", "cell": "gone"}) is None  # edited since the run: no link
    assert site.producing_cell(nb, None) is None


def test_paper_view_shows_printed_and_ours_with_a_state_in_the_papers_layout():
    spec = registry.table("vizwiz-lf_table04_automatic_eval")
    frame = pd.read_csv(FIGURES / "vizwiz-lf_table04_automatic_eval.csv")
    soup = BeautifulSoup(paper_view.paper_view(frame, spec), "html.parser")
    tables = soup.select("table.paper-view")
    assert all(len(t.thead.find_all("th")) - 1 <= paper_view.MAX_COLUMNS for t in tables)
    headers = [th.get_text() for t in tables for th in t.thead.find_all("th")[1:]]
    assert "ROUGE s_r l_c" in headers and "METEOR l_r l_c_prime" in headers and len(headers) == 17
    rows = {tr.th.get_text(): tr for t in tables for tr in t.tbody.find_all("tr") if "ROUGE s_r l_c" in
            [th.get_text() for th in t.thead.find_all("th")]}
    gemini = rows["Gemini"].find_all("td")[1]  # ROUGE s_r + l_c: outside, explained by the sample draw
    assert gemini.select_one(".pv-values").get_text() == "0.19 | 0.126"
    assert "outside, explained" in gemini.get_text() and gemini.details and "seed_sweep" in gemini.details.get_text()
    assert len(soup.select("p.not-run-note")) == 1  # LAVE's reason once, not in every row
    states = paper_view.cell_states(frame, spec)
    counts = report.agreement_counts(frame, "vizwiz-lf_table04_automatic_eval")
    assert (states["state"] == "within").sum() == counts["within"]
    assert (states["state"] == "unexplained").sum() == counts["unexplained"]


def test_index_summary_counts_are_the_readme_status_counts():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    summary = grades.summary(FIGURES)
    assert len(summary) == len(paper_view.compared_stems(FIGURES)) >= 15
    for row in summary.to_dict("records"):
        if row["compared"]:
            assert f"{row['within']} of {row['compared']} cells within tolerance" in readme, row["stem"]
        if row["explained"] or row["unexplained"]:
            assert f"{row['explained']} explained with evidence, {row['unexplained']} unexplained" in readme, row["stem"]


def test_committed_notebooks_have_no_truncated_text_cells_and_no_elided_columns():
    truncated = []
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            for output in cell.get("outputs", []):
                html = output.get("data", {}).get("text/html", "")
                for td in BeautifulSoup(html, "html.parser").find_all("td") if "<td" in html else []:
                    text = td.get_text().strip()
                    if text.endswith(("...", "…")) and text not in ("...", "…"):  # not a whole elided row
                        truncated.append(f"{path.name}: {text[:60]}")
                text = html + "".join(output.get("data", {}).get("text/plain", ""))
                if re.search(r"\.\.\.</t[hd]>|rows x \d+ columns\]", text):
                    truncated.append(f"{path.name}: a table with elided rows or columns")  # display.max_columns
    assert not truncated, truncated[:5]


@pytest.mark.skipif(not (shutil.which("chromium") and shutil.which("pdftotext")),
                    reason="needs Debian's chromium and poppler-utils (.ci/run installs both)")
@pytest.mark.full  # slow for `make test` (its 10-minute budget); CI runs it in `make test-full`
def test_report_pdf_keeps_every_column_of_every_paper_table(built, tmp_path):
    import subprocess

    pdf = site_printable.write_pdf(built / "report.html", tmp_path / "report.pdf")
    text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    words = set(re.split(r"[\s/]+", text))  # a long header wraps after a slash
    for stem in paper_view.compared_stems(FIGURES):
        spec = registry.table(stem)
        frame = pd.read_csv(FIGURES / f"{stem}.csv")
        soup = BeautifulSoup(paper_view.paper_view(frame, spec), "html.parser")
        for th in soup.select("table.paper-view thead th"):  # a header may wrap onto lines of its own
            desc = th.select_one(".pv-desc")  # a description may break inside a word in a narrow column
            name = th.get_text(" ").removesuffix(desc.get_text()) if desc else th.get_text(" ")
            assert set(re.split(r"[\s/]+", name.strip())) <= words, (stem, name)
            assert not desc or desc.get_text().replace(" ", "")[:6] in "".join(text.split()), (stem, desc.get_text())
        for values in soup.select(".pv-values"):  # every printed value and ours, the last column's too
            assert set(values.get_text().split()) - {"|", "—"} <= words, (stem, values.get_text())


def test_paper_views_link_each_cell_outside_and_each_evidence_reference_to_a_row_that_exists(soups):
    links = 0
    for name, soup in soups.items():
        if not name.startswith("papers/"):
            continue
        outside = soup.select(".pv-outside a")
        assert len(outside) == len(soup.select("td.pv-explained, td.pv-unexplained")), name  # each cell listed
        for details in soup.select("td.pv details"):
            assert details.parent.name == "td", name  # no <details> inside a <span>
            assert details.summary.get_text().startswith("Why: ") and len(details.summary.get_text()) > 6, name
        for a in outside + soup.select("td.pv details a[href]"):
            page, _, anchor = a["href"].partition("#")
            target = soups[str((Path(name).parent / page).as_posix()).replace("papers/../", "")] if page else soup
            assert target.find(id=anchor) is not None, (name, a["href"])
            links += 1
    assert links > 100


def test_ours_has_one_more_decimal_than_the_papers_column_even_where_a_zero_was_dropped():
    spec = registry.table("commvqa_table01_benchmark")
    soup = BeautifulSoup(paper_view.paper_view(pd.read_csv(FIGURES / "commvqa_table01_benchmark.csv"), spec),
                         "html.parser")
    blip2 = next(td for tr in soup.select("tr") if tr.th and tr.th.get_text() == "BLIP-2"
                 for td in tr.select("td.pv-explained"))
    printed, ours = blip2.select_one(".pv-values").get_text().split(" | ")
    assert printed == "0.01" and ours == "0.0143"  # the column prints three decimals (0.106, 0.045, ...)


def test_the_scorecard_says_its_numbers_come_from_scores_and_leads_home(soups):
    """The committed scorecard (scores/) and its copy on the site: the footer names its folder, not figures/ alone, and
    "Compendium home" leads to the checkout's README (standalone) or the site's index, never to the page itself."""
    committed = BeautifulSoup((ROOT / "scores" / "llava-released" / "index.html").read_text(encoding="utf-8"),
                              "html.parser")
    for soup, home in ((committed, "../../README.md"), (soups["scores/llava-released/index.html"], "../../index.html")):
        footer = soup.find("footer").get_text(" ", strip=True)
        assert "come from scores/llava-released/" in footer and "every number comes from figures/" not in footer
        assert soup.find("a", string="Compendium home")["href"] == home
    assert (ROOT / "scores" / "llava-released" / "../../README.md").resolve() == ROOT / "README.md"
    for name, soup in soups.items():  # no style of any page fetches from another host either
        for style in soup.find_all("style"):
            assert not re.search(r"(@import|url\()\s*['\"]?(https?:)?//", style.get_text()), name


def test_report_names_every_table_a_notebook_sets_beside_the_paper(built):
    soup = BeautifulSoup((built / "report.html").read_text(encoding="utf-8"), "html.parser")
    headings = {h.get_text(strip=True) for h in soup.select("section.report-table h2")}
    for path in sorted(FIGURES.glob("*.csv")):
        spec = registry.TABLES.get(path.stem)
        if spec is None or "*" in spec.stem or not spec.reproduces:
            continue
        if spec.compared or any(c.startswith("paper") for c in pd.read_csv(path, nrows=0).columns):
            assert f"{spec.paper} {spec.reproduces}" in headings, path.stem
    assert "AFGV Table 2" in headings


def test_commvqa_text_facts_carry_their_descriptions_in_the_paper_view():
    frame = pd.read_csv(FIGURES / "commvqa_text_facts.csv")
    soup = BeautifulSoup(paper_view.paper_view(frame, registry.table("commvqa_text_facts")), "html.parser")
    described = {th.contents[0]: th.select_one(".pv-desc").get_text() for th in soup.select("thead th")[1:]
                 if th.select_one(".pv-desc")}
    facts = frame.drop_duplicates("fact_id").set_index("fact_id")["description"]
    shown = {th.contents[0] for th in soup.select("thead th") if str(th.contents[0]).startswith("CV")}
    assert shown and all(described.get(f) == facts[f] for f in shown)


def _scores_with_card(tmp_path) -> Path:
    """``tmp_path/scores/card``: a copy of the committed scorecard, one thing changed per test."""
    folder = tmp_path / "scores" / "card"
    shutil.copytree(ROOT / "scores" / "llava-released", folder)
    return folder


def test_the_site_copies_only_a_scorecards_regular_files_and_names_each_other_entry(tmp_path):
    import os

    from vqalib.compendium.scorecard_files import scorecard_pages

    folder = _scores_with_card(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("the secret")
    os.mkfifo(folder / "pipe.csv")  # a pipe: copying it would wait for a writer
    (folder / "linked.txt").symlink_to(outside / "secret.txt")
    (folder / "linked_dir").symlink_to(outside)
    (folder / "assets" / "deep.css").symlink_to(outside / "secret.txt")
    out = tmp_path / "site" / "scores"
    with pytest.warns(RuntimeWarning) as warned:
        pages = scorecard_pages(tmp_path / "scores", out)
    assert pages == [("scores/card/index.html", "LLaVA (scored again) on vizwiz-lf")]
    named = sorted(str(w.message) for w in warned if "not copied to the site" in str(w.message))
    assert [m.split(": ")[0].rsplit("/", 2)[-1] for m in named] == ["deep.css", "linked.txt", "linked_dir", "pipe.csv"]
    assert "a named pipe (FIFO)" in named[3] and f"a symbolic link (to {outside})" in named[2]
    copied = {p.relative_to(out / "card").as_posix() for p in (out / "card").rglob("*")}
    assert {"scorecard.json", "per_question.csv", "index.html", "assets/site.css"} <= copied
    assert not copied & {"pipe.csv", "linked.txt", "linked_dir", "assets/deep.css"}
    assert not any(p.is_symlink() or b"the secret" in p.read_bytes() for p in (out / "card").rglob("*") if p.is_file())


def test_a_bad_scorecard_stops_the_site_build_named_and_reads_nothing_outside_it(tmp_path):
    import json
    import os

    from vqalib.compendium.scorecard_files import scorecard_pages
    from vqalib.compendium.scorecard_schema import ScorecardError

    folder = _scores_with_card(tmp_path)
    secret = tmp_path / "elsewhere" / "secret.csv"
    secret.parent.mkdir()
    secret.write_text("password\nhunter2\n")
    card = json.loads((folder / "scorecard.json").read_text())
    card["tables"]["../../elsewhere/secret"] = [{"password": "hunter2"}]  # a table name that leaves the folder
    (folder / "scorecard.json").write_text(json.dumps(card))
    out = tmp_path / "site" / "scores"
    with pytest.raises(ScorecardError, match=r"card: scorecard\.json: field tables\['\.\./\.\./elsewhere/secret'\]: not "
                                             r"a table of a vizwiz-lf scorecard"):
        scorecard_pages(tmp_path / "scores", out)
    assert not out.exists()
    shutil.copyfile(ROOT / "scores" / "llava-released" / "scorecard.json", folder / "scorecard.json")
    table = folder / "vizwiz-lf_table01_word_counts.csv"
    table.unlink()
    table.symlink_to(secret)
    with pytest.raises(ScorecardError, match=r"vizwiz-lf_table01_word_counts\.csv: the file: is a symbolic link"):
        scorecard_pages(tmp_path / "scores", out)
    table.unlink()
    table.write_text("category,value\nTotal,1\n")  # not the table scorecard.json holds
    with pytest.raises(ScorecardError, match=r"word_counts\.csv: top level: 1 rows of columns \['category', 'value'\]"):
        scorecard_pages(tmp_path / "scores", out)
    (folder / "scorecard.json").unlink()
    os.mkfifo(folder / "scorecard.json")
    with pytest.raises(ScorecardError, match=r"scorecard\.json: the file: is a named pipe"):
        scorecard_pages(tmp_path / "scores", out)
