"""The leaderboard folder of ``vqalib leaderboard --out``: per dataset the table and its pairs as CSV and Markdown, and
a figure per headline measure, and one page readable without script (a table per dataset and measure, the tier rule
stated; ARCHITECTURE "Folders a command writes")."""

from __future__ import annotations

import html
import json
from importlib import resources
from pathlib import Path

import pandas as pd

from vqalib.compendium import leaderboard, leaderboard_figures
from vqalib.core import figure_files
from vqalib.core.escaping import csv_formula_safe, csv_formula_unquoted, markdown_frame, markdown_text
from vqalib.core.io import write_atomic
from vqalib.core.out_folders import OutputKind, json_marker, replace_folder

FORMAT = "vqalib-leaderboard/1"
SCRIPT = "table_sort.js"  # package data beside site.css: the tables' sort buttons, shipped with each page
LEADERBOARD = OutputKind(what="leaderboard", option="vqalib leaderboard --out", marker="leaderboard.json",
                         is_marker=lambda p: (json_marker(p, max_bytes=1 << 20) or {}).get("format") == FORMAT)
TITLES = leaderboard.TITLES


def _markdown(frame: pd.DataFrame, title: str) -> str:
    """A leaderboard table as Markdown, every text cell (model names, origins, notes) escaped to show as text."""
    body = markdown_frame(frame).to_markdown(index=False, floatfmt=".4f", missingval="")
    return f"# {markdown_text(title)}\n\n{markdown_text(leaderboard.RULE)}\n\n{body}\n"


def _table_files(frame: pd.DataFrame, title: str) -> tuple[bytes, bytes]:
    """A table's CSV (no cell a spreadsheet would run as a formula) and Markdown (text shown as text) bytes."""
    csv = csv_formula_safe(frame).to_csv(index=False, lineterminator="\n")
    return csv.encode(), _markdown(frame, title).encode()


def _cell(value) -> str:
    return "" if pd.isna(value) else f"{value:.4f}" if isinstance(value, float) else str(value)


def script_text() -> str:
    """The sort script the leaderboard page loads (:data:`SCRIPT`, package data)."""
    return resources.files("vqalib.compendium").joinpath(SCRIPT).read_text("utf-8")


def saved_figures(folder: str | Path, dataset: str) -> list[tuple[str, str]]:
    """``(stem, long description)`` of each headline figure of ``dataset`` saved in ``folder``, in measure order.

    Parameters
    ----------
    folder : str or Path
        ``figures/`` or a leaderboard folder.
    dataset : str
    """
    names = [leaderboard_figures.figure_name(dataset, m) for m in leaderboard_figures.HEADLINE.get(dataset, ())]
    return [(n, (Path(folder) / f"{n}.alt.txt").read_text(encoding="utf-8").strip()) for n in names
            if (Path(folder) / f"{n}.png").exists() and (Path(folder) / f"{n}.alt.txt").exists()]


def _figure(name: str, long: str, src: str) -> str:
    desc = f"{name}-description"
    return (f'<figure><img src="{html.escape(src + name)}.png" alt="{html.escape(figure_files.short_alt(name))}" '
            f'aria-describedby="{desc}"><figcaption><details><summary>Long description</summary><p id="{desc}">'
            f'{html.escape(long)}</p></details><p>Open full size: <a href="{html.escape(src + name)}.png">PNG image</a>'
            f' · <a href="{html.escape(src + name)}.pdf">PDF (vector)</a></p></figcaption></figure>')


def page_section(dataset: str, table: pd.DataFrame, *, figures: list[tuple[str, str]] = (), src: str = "") -> str:
    """One dataset's section of the page: its figures, then a captioned table per measure, rows in rank order (no
    script needed; :data:`SCRIPT` adds sort buttons to each ``table.sortable``).

    Parameters
    ----------
    dataset : str
    table : pandas.DataFrame
        :func:`vqalib.compendium.leaderboard.leaderboard`'s ``table``.
    figures : sequence of (str, str), default ()
        :func:`saved_figures`.
    src : str, default ""
        The figures' folder, relative to the page.
    """
    parts = [f'<section aria-labelledby="lb-{dataset}"><h2 id="lb-{dataset}">{html.escape(TITLES[dataset])}</h2>']
    parts += [_figure(name, long, src) for name, long in figures]
    heads = ["Tier", "Model", "Estimate", "95% interval", "Questions", "Kind", "Where it came from", "Note"]
    for (metric, reference), part in table.groupby(["metric", "reference"], sort=False):
        name = f"{metric} ({reference})" if isinstance(reference, str) and reference else metric
        rows = "".join(
            "<tr>" + f'<td>{html.escape(_cell(r.tier))}</td><th scope="row">{html.escape(r.model)}</th>'
            + f"<td>{_cell(r.value)}</td><td>{_cell(r.ci_low)} to {_cell(r.ci_high)}</td><td>{int(r.n)}</td>"
            + "".join(f"<td>{html.escape(_cell(v))}</td>" for v in (r.kind, r.origin, r.note)) + "</tr>"
            for r in part.itertuples(index=False))
        header = "".join(f'<th scope="col">{h}</th>' for h in heads)
        parts.append(f'<div class="table-wrap table-scroll" role="region" tabindex="0" aria-label="{html.escape(name)}">'
                     f'<table class="sortable"><caption>{html.escape(TITLES[dataset])}: {html.escape(name)}, '
                     f'{"highest first (described, not ranked)" if metric in leaderboard.REPORTED else "best first"}'
                     "</caption>"
                     f"<thead><tr>{header}</tr></thead><tbody>{rows}</tbody></table></div>")
    return "".join(parts) + "</section>"


def page_body(tables: dict[str, pd.DataFrame], *, figures: dict[str, list[tuple[str, str]]] | None = None,
              src: str = "", intro: str = "") -> str:
    """The leaderboard page's content: heading, the tier rule, then each dataset's figures and tables.

    Parameters
    ----------
    tables : dict of str to pandas.DataFrame
        Dataset -> leaderboard table.
    figures : dict of str to list of (str, str), optional
        Dataset -> :func:`saved_figures`.
    src : str, default ""
        The figures' folder, relative to the page.
    intro : str, default ""
        HTML after the heading (where the rows come from).
    """
    shown = {**tables, "afgv": tables.get("afgv", pd.DataFrame(columns=leaderboard.COLUMNS))}  # AFGV: said if empty
    sections = "".join(page_section(d, t, figures=(figures or {}).get(d, ()), src=src) if len(t) else
                       f'<section aria-labelledby="lb-{d}"><h2 id="lb-{d}">{html.escape(TITLES[d])}</h2>'
                       f"<p>{html.escape(leaderboard.AFGV_NOT_RUN if d == 'afgv' else 'No models.')}</p></section>"
                       for d, t in shown.items())
    judged = any(((t["metric"] == "GPT-4 (LAVE)") & (t["kind"] == "released")).any() for t in tables.values())
    lave = "" if judged else f"<p>{html.escape(leaderboard.LAVE_NOTE)}.</p>"
    return (f"<h1>Leaderboard</h1>{intro}<p>{html.escape(leaderboard.RULE)}</p>"
            f"{lave}{sections}")


def page_html(tables: dict[str, pd.DataFrame], *, css: str = "",
              figures: dict[str, list[tuple[str, str]]] | None = None) -> str:
    """The leaderboard page of ``vqalib leaderboard``, loading :data:`SCRIPT` from its folder (the reviewer site
    frames :func:`page_body` its own way).

    Parameters
    ----------
    tables : dict of str to pandas.DataFrame
        Dataset -> leaderboard table.
    css : str
        A stylesheet link's href, or "" for none.
    figures : dict of str to list of (str, str), optional
        Dataset -> :func:`saved_figures` (in the page's folder).
    """
    link = f'<link rel="stylesheet" href="{html.escape(css)}">' if css else ""
    return ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<title>Leaderboard · vqalib</title>{link}<script src="{SCRIPT}" defer></script></head>'
            f"<body><main>{page_body(tables, figures=figures)}"
            "</main></body></html>\n")


def write(out: str | Path, *, scores_dir: str | Path | None, n_resamples: int = 1000, seed: int = 0) -> Path:
    """Write the leaderboard folder of the released models and every scorecard under ``scores_dir``; returns its page.

    Parameters
    ----------
    out : str or Path
        The folder: created, or replaced whole when it is a leaderboard; anything else is refused.
    scores_dir : str or Path, optional
        The scorecard folders (``scores/``).
    n_resamples, seed : int
    """
    from vqalib.core.judge.cache import judge_from_env

    judge = judge_from_env()  # LAVE of the released answers when a judge is configured, as notebook 03 does
    boards = {d: leaderboard.leaderboard(d, scores_dir=scores_dir, judge=judge, n_resamples=n_resamples, seed=seed)
              for d in leaderboard.DATASETS}

    def fill(folder: Path) -> None:
        for dataset, board in boards.items():
            if board["table"].empty:  # AFGV without a scorecard: the page says so
                continue
            for name, frame in (("leaderboard", board["table"]), ("pairs", board["pairs"])):
                csv, md = _table_files(frame, f"{TITLES[dataset]} {name}")
                write_atomic(folder / f"{name}_{dataset}.csv", csv)
                write_atomic(folder / f"{name}_{dataset}.md", md)
            leaderboard_figures.save_figures(board["table"], dataset=dataset, directory=folder)
        scorecards = sorted({m for b in boards.values() for m, k in zip(b["table"]["model"], b["table"]["kind"])
                             if k == "scorecard"})
        write_atomic(folder / "leaderboard.json", json.dumps({"format": FORMAT, "rule": leaderboard.RULE,
                                                             "scorecards": scorecards}, indent=2).encode() + b"\n")
        figures = {d: saved_figures(folder, d) for d in boards}
        write_atomic(folder / SCRIPT, script_text().encode())
        write_atomic(folder / "index.html", page_html({d: b["table"] for d, b in boards.items()}, figures=figures).encode())

    return replace_folder(out, kind=LEADERBOARD, fill=fill) / "index.html"


def site_page(root: Path, out: Path) -> str:
    """Write the reviewer site's ``leaderboard/`` (page, figures, CSV): from ``build/leaderboard`` when ``vqalib
    leaderboard`` wrote it there (``make html``: every scorecard), else the released models of ``figures/``.

    Parameters
    ----------
    root : Path
        The checkout.
    out : Path
        The site folder being written.

    Returns
    -------
    str
        The page's path in the site, or "" when there is no leaderboard to show.
    """
    from vqalib.compendium.site_html import page

    built = root / "build" / "leaderboard"
    marker = built / "leaderboard.json"
    source = built if marker.is_file() and LEADERBOARD.is_marker(marker) else root / "figures"
    tables, figures, downloads = {}, {}, []
    for dataset in leaderboard.DATASETS:
        csv = source / f"leaderboard_{dataset}.csv"
        if not csv.is_file():
            continue
        tables[dataset] = pd.read_csv(csv, keep_default_na=False, dtype={c: str for c in ("reference", "tier", "note")})
        if source == built:  # written by write(): its formula quoting undone, the page escapes the text
            tables[dataset] = csv_formula_unquoted(tables[dataset])
        figures[dataset] = saved_figures(source, dataset)
        (out / "leaderboard").mkdir(exist_ok=True)
        for name in [csv.name] + [f"{n}{s}" for n, _ in figures[dataset] for s in (".png", ".pdf")]:
            (out / "leaderboard" / name).write_bytes((source / name).read_bytes())
        downloads.append(f'<a href="{csv.name}">{TITLES[dataset]} (CSV)</a>')
    if not tables:
        return ""
    if source == built:
        cards = json.loads(marker.read_text(encoding="utf-8"))["scorecards"]
        where = (f"The released models and {len(cards)} scorecard{'s' * (len(cards) != 1)} from <code>scores/</code> "
                 f"({html.escape(', '.join(cards)) or 'none'}), written by <code>vqalib leaderboard --scores scores "
                 "--out build/leaderboard</code> (<code>make html</code>).")
    else:
        where = ("The released models, as notebook 10 saved them in <code>figures/</code>; <code>make html</code> adds "
                 "every scorecard under <code>scores/</code>.")
    intro = f"<p>{where} Download: {' · '.join(downloads)}.</p>"
    body = page_body(tables, figures=figures, intro=intro)
    nav = [("sections/10_leaderboard.html", "Results of notebook 10")]
    (out / "leaderboard" / SCRIPT).write_text(script_text(), encoding="utf-8")
    (out / "leaderboard" / "index.html").write_text(page(title="Leaderboard", body=body, depth=1, nav=nav,
                                                         script=SCRIPT), encoding="utf-8")
    return "leaderboard/index.html"
