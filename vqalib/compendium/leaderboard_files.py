"""The leaderboard folder of ``vqalib leaderboard --out``: per dataset the table and its pairs as CSV and Markdown, and
one page readable without script (a table per dataset and measure, the tier rule stated; ARCHITECTURE "Folders a
command writes")."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pandas as pd

from vqalib.compendium import leaderboard
from vqalib.core.escaping import markdown_text
from vqalib.core.io import write_atomic
from vqalib.core.out_folders import OutputKind, json_marker, replace_folder

FORMAT = "vqalib-leaderboard/1"
_WRITES = re.compile(r"(leaderboard\.json|index\.html|(leaderboard|pairs)_[\w-]+\.(csv|md))")
LEADERBOARD = OutputKind(what="leaderboard", option="vqalib leaderboard --out", marker="leaderboard.json",
                         is_marker=lambda p: (json_marker(p, max_bytes=1 << 20) or {}).get("format") == FORMAT,
                         written=lambda name: bool(_WRITES.fullmatch(name)))
TITLES = {"vizwiz-lf": "VizWiz-LF", "commvqa": "CommVQA"}


def _markdown(frame: pd.DataFrame, title: str) -> str:
    body = frame.to_markdown(index=False, floatfmt=".4f", missingval="")
    return f"# {markdown_text(title)}\n\n{markdown_text(leaderboard.RULE)}\n\n{body}\n"


def _cell(value) -> str:
    return "" if pd.isna(value) else f"{value:.4f}" if isinstance(value, float) else str(value)


def page_section(dataset: str, table: pd.DataFrame) -> str:
    """One dataset's section of the page: a captioned table per measure, rows in rank order (no script needed).

    Parameters
    ----------
    dataset : str
    table : pandas.DataFrame
        :func:`vqalib.compendium.leaderboard.leaderboard`'s ``table``.
    """
    parts = [f'<section aria-labelledby="lb-{dataset}"><h2 id="lb-{dataset}">{html.escape(TITLES[dataset])}</h2>']
    heads = ["Tier", "Model", "Estimate", "95% interval", "Questions", "Kind", "Where it came from", "Note"]
    for (metric, reference), part in table.groupby(["metric", "reference"], sort=False):
        name = f"{metric} ({reference})" if isinstance(reference, str) and reference else metric
        rows = "".join(
            "<tr>" + f'<td>{html.escape(_cell(r.tier))}</td><th scope="row">{html.escape(r.model)}</th>'
            + f"<td>{_cell(r.value)}</td><td>{_cell(r.ci_low)} to {_cell(r.ci_high)}</td><td>{int(r.n)}</td>"
            + "".join(f"<td>{html.escape(_cell(v))}</td>" for v in (r.kind, r.origin, r.note)) + "</tr>"
            for r in part.itertuples(index=False))
        header = "".join(f'<th scope="col">{h}</th>' for h in heads)
        parts.append(f'<div class="table-wrap" role="region" tabindex="0" aria-label="{html.escape(name)}">'
                     f"<table><caption>{html.escape(TITLES[dataset])}: {html.escape(name)}, best first</caption>"
                     f"<thead><tr>{header}</tr></thead><tbody>{rows}</tbody></table></div>")
    return "".join(parts) + "</section>"


def page_html(tables: dict[str, pd.DataFrame], *, css: str = "") -> str:
    """The leaderboard page: the tier rule, then each dataset's tables (``vqalib leaderboard``, the reviewer site).

    Parameters
    ----------
    tables : dict of str to pandas.DataFrame
        Dataset -> leaderboard table.
    css : str
        A stylesheet link's href, or "" for none.
    """
    link = f'<link rel="stylesheet" href="{html.escape(css)}">' if css else ""
    sections = "".join(page_section(d, t) for d, t in tables.items())
    return ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>Leaderboard · vqalib</title>{link}</head><body><main><h1>Leaderboard</h1>"
            f'<p>{html.escape(leaderboard.RULE)}</p><p>{html.escape(leaderboard.LAVE_NOTE)}.</p>{sections}'
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
    boards = {d: leaderboard.leaderboard(d, scores_dir=scores_dir, n_resamples=n_resamples, seed=seed)
              for d in leaderboard.DATASETS}

    def fill(folder: Path) -> None:
        for dataset, board in boards.items():
            for name, frame in (("leaderboard", board["table"]), ("pairs", board["pairs"])):
                write_atomic(folder / f"{name}_{dataset}.csv", frame.to_csv(index=False, lineterminator="\n").encode())
                write_atomic(folder / f"{name}_{dataset}.md", _markdown(frame, f"{TITLES[dataset]} {name}").encode())
        scorecards = sorted({m for b in boards.values() for m, k in zip(b["table"]["model"], b["table"]["kind"])
                             if k == "scorecard"})
        write_atomic(folder / "leaderboard.json", json.dumps({"format": FORMAT, "rule": leaderboard.RULE,
                                                             "scorecards": scorecards}, indent=2).encode() + b"\n")
        write_atomic(folder / "index.html", page_html({d: b["table"] for d, b in boards.items()}).encode())

    return replace_folder(out, kind=LEADERBOARD, fill=fill) / "index.html"
