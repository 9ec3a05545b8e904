"""A scorecard on disk: ``scorecard.json`` (the model's rows), each table as ``.csv`` and ``.md`` (beside the paper
and the released models), the figure that fits and ``index.html``; the same answers always give the same files."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pandas as pd

from vqalib.compendium.score import Scorecard, coverage_lines
from vqalib.compendium.scorecard_page import TITLES, figure_for, page_html, stylesheet
from vqalib.compendium.site_html import unit
from vqalib.core import report
from vqalib.core.escaping import csv_formula_safe, csv_formula_unquoted, markdown_frame, markdown_text
from vqalib.core.inference import p_value_text
from vqalib.core.io import NotRegularFile, open_regular, write_atomic
from vqalib.core.out_folders import OutputKind, json_marker, replace_folder

FORMAT = "vqalib-scorecard/1"  # scorecard.json's "format": the mark of a folder `vqalib score` wrote
PER_QUESTION = "per_question.csv"  # the leaderboard's measures per question, beside the tables

# table id -> (the twin's source column, key columns, the value column of our rows, of the twin's)
BESIDE = {
    "vizwiz-lf_table01_word_counts": ("column", ["category", "statistic"], "value", "reproduced"),
    "vizwiz-lf_table02_roles_by_answerability": ("source", ["role", "answerability"], "value", "reproduced"),
    "vizwiz-lf_table03_info_sources": ("source", ["info_source", "answerability"], "value", "reproduced"),
    "vizwiz-lf_table04_full_set_bootstrap": ("source", ["metric", "reference", "candidate"], "value", "reproduced"),
    "vizwiz-lf_table05_abstention": ("model", ["method", "metric"], "value", "reproduced"),
    "commvqa_table01_benchmark": ("model", ["condition", "metric"], "value", "reproduced"),
    "commvqa_table01_context_effect": ("model", ["metric"], "difference", "difference"),
}


def beside(stem: str, rows: pd.DataFrame, *, model: str, figures_dir: str | Path | None = None) -> pd.DataFrame | None:
    """The model's ``rows`` beside the released models' rows and the paper's values of the ``figures/`` twin of
    ``stem``; None when the table has no twin."""
    if stem not in BESIDE:
        return None
    twin_path = report.figures_dir(figures_dir) / f"{stem}.csv"
    if not twin_path.exists():
        return None
    source, keys, ours, theirs = BESIDE[stem]
    twin = pd.read_csv(twin_path, keep_default_na=False, na_values=[""])
    mine = rows.copy()
    if "protocol" in mine:  # the twin is the authors' protocol
        mine = mine[mine["protocol"] == "authors"]
    if source not in mine:
        mine[source] = model
    for key in keys:
        twin[key] = twin[key].fillna("").astype(str)
        mine[key] = mine[key].fillna("").astype(str)
    values = pd.concat([mine[[source, *keys]].assign(value=pd.to_numeric(mine[ours], errors="coerce")),
                        twin[[source, *keys]].assign(value=pd.to_numeric(twin[theirs], errors="coerce"))],
                       ignore_index=True)
    order = list(dict.fromkeys(values[source]))
    wide = values.pivot_table(index=keys, columns=source, values="value", sort=False, dropna=False)
    wide = wide.reindex(columns=[c for c in order if c in wide.columns])
    if "paper" in twin:
        paper = twin.assign(paper=pd.to_numeric(twin["paper"], errors="coerce")).dropna(subset=["paper"])
        if len(paper):
            paper_wide = paper.pivot_table(index=keys, columns=source, values="paper", sort=False)
            paper_wide.columns = [f"paper: {c}" for c in paper_wide.columns]
            wide = wide.join(paper_wide)
    keep = [k for k in wide.index.names]
    mine_keys = set(map(tuple, mine[keep].to_numpy())) if len(keep) > 1 else set(mine[keep[0]])
    wide = wide[[k in mine_keys for k in wide.index]]  # the model's rows, not every row of the twin
    return wide.reset_index()


def _markdown(frame: pd.DataFrame, *, decimals: int = 4) -> str:
    """A table as Markdown: floats with ``decimals`` decimals, p-values as the page prints them ("< 0.0001")."""
    shown = frame.copy()
    p_values = [k for k, c in enumerate(shown.columns)
                if unit(c, shown[c]) == "p-value" and pd.api.types.is_numeric_dtype(shown[c])]
    for column in shown.columns:
        if pd.api.types.is_float_dtype(shown[column]):
            shown[column] = shown[column].map(lambda v: "" if pd.isna(v) else f"{v:.{decimals}f}")
    shown = markdown_frame(shown.astype(object).where(shown.notna(), ""))
    for k in p_values:  # after the escaping: "< 0.0001" is no HTML tag, and stays readable in the file
        shown.iloc[:, k] = frame.iloc[:, k].map(p_value_text).to_numpy()
    return shown.to_markdown(index=False)


def _write_text(path: Path, text: str) -> None:
    write_atomic(path, text.encode("utf-8"))


def _csv(frame: pd.DataFrame) -> str:
    return csv_formula_safe(frame).to_csv(index=False)


def _read_csv(path: Path) -> pd.DataFrame:
    return csv_formula_unquoted(pd.read_csv(path, keep_default_na=False, na_values=[""]))


def _is_scorecard_json(path: Path) -> bool:
    """Whether ``path`` is a ``scorecard.json`` of vqalib: its format tag, or the keys of one written before it."""
    data = json_marker(path, max_bytes=1 << 28)
    if data is None:
        return False
    return data.get("format") == FORMAT or ("format" not in data and {"model", "dataset", "vqalib_version",
                                                                        "tables"} <= set(data))


SCORECARD = OutputKind(what="scorecard", option="vqalib score --out", marker="scorecard.json",
                       is_marker=_is_scorecard_json)  # its files: the folder's manifest (core.out_folders)


def vqalib_commit() -> str:
    """The git commit of the vqalib checkout that scores (ours; a toolkit's version is its source's), ``+dirty`` when
    the package has uncommitted changes; "unknown: <why>" outside a git checkout."""
    import subprocess

    from vqalib.core.io import project_root

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(project_root()), *args], capture_output=True, text=True,
                              check=True, timeout=30).stdout.strip()
    try:
        commit = git("rev-parse", "HEAD")
        return commit + ("+dirty" if git("status", "--porcelain", "--untracked-files=no", "--", "vqalib") else "")
    except (OSError, subprocess.SubprocessError) as err:
        return f"unknown: no git commit for {project_root()} ({type(err).__name__})"


def card_json(card: Scorecard, *, commit: str | None = None) -> dict:
    """``scorecard.json`` of ``card``, JSON-ready (NaN as null): model, dataset, vqalib's version (and ``commit``, when
    given), source, coverage, settings and rows."""
    from vqalib.core.contract import package_version
    tables = {stem: json.loads(frame.to_json(orient="records", double_precision=10))
              for stem, frame in card.tables.items()}
    sources = [{**s, "path": Path(s["path"]).name} for s in card.sources]  # no machine paths: same file everywhere
    ours = {"vqalib_version": package_version("vqalib"), **({"vqalib_commit": commit} if commit else {})}
    per_question = {} if card.per_question is None else {"per_question": {"file": PER_QUESTION,
                                                                           "rows": len(card.per_question)}}
    return {"format": FORMAT, "model": card.model, "dataset": card.dataset, **ours,
            "source": sources[0] if len(sources) == 1 else sources, "coverage": card.coverage,
            "settings": card.settings, "tables": tables, **per_question}


def write(card: Scorecard, out: str | Path, *, figures_dir: str | Path | None = None,
          commit: str | None = None) -> Path:
    """Write a scorecard folder, replacing only a scorecard (``vqalib score --out``); returns ``out/index.html``.

    Parameters
    ----------
    card : Scorecard
        The scorecard (:func:`vqalib.compendium.score.score`).
    out : str or Path
        The folder: created, or replaced whole when it is a scorecard; anything else is refused.
    figures_dir : str or Path, optional
        Where the tables' twins are (default the project's ``figures/``).
    commit : str, optional
        vqalib's commit, recorded as ``vqalib_commit`` (``vqalib score`` gives :func:`vqalib_commit`; a committed
        scorecard leaves it out, else every commit would change it).
    """
    def fill(out: Path) -> None:
        lines = coverage_lines(card)
        text = json.dumps(card_json(card, commit=commit), indent=2, ensure_ascii=False)
        _write_text(out / "scorecard.json", text + "\n")
        if card.per_question is not None:  # full precision: the leaderboard pairs it with the released scores
            _write_text(out / PER_QUESTION, card.per_question.to_csv(index=False, lineterminator="\n"))
        besides = {}
        for stem, frame in card.tables.items():
            _write_text(out / f"{stem}.csv", _csv(frame))
            side = beside(stem, frame, model=card.model, figures_dir=figures_dir)
            besides[stem] = side
            if side is not None:
                _write_text(out / f"{stem}.beside.csv", _csv(side))
            text = [f"# {markdown_text(TITLES.get(stem, stem))}", "",
                    markdown_text(f"Model: {card.model}; " + "; ".join(lines) + "."), "", _markdown(frame)]
            if side is not None:
                text += ["", "## Beside the released models and the paper", "", _markdown(side, decimals=4)]
            _write_text(out / f"{stem}.md", "\n".join(text) + "\n")
        figure = figure_for(card, out, figures_dir=figures_dir)
        (out / "assets").mkdir(exist_ok=True)
        _write_text(out / "assets" / "site.css", stylesheet())
        _write_text(out / "assets" / "code.css", "")  # the site's code colours: a scorecard shows no code
        _write_text(out / "index.html", page_html(card, besides, figure=figure, depth=0, home=home, where=where))

    from vqalib.core.io import project_root

    # in a checkout, home is its README and the footer names the folder from the root; elsewhere, no home link
    root, target = project_root(), Path(out).resolve()
    inside = target.is_relative_to(root)
    home = Path(os.path.relpath(root / "README.md", target)).as_posix() if inside else None
    where = f"{target.relative_to(root).as_posix()}/" if inside else None  # elsewhere: same bytes in any folder
    # written beside, then swapped in: no file of an earlier scorecard lingers; a non-scorecard folder is refused
    final = replace_folder(out, kind=SCORECARD, fill=fill)
    return final / "index.html"


def read_card(folder: str | Path) -> dict:
    """A scorecard folder's ``scorecard.json``, read within the limits and checked against what ``vqalib score``
    writes (:mod:`vqalib.compendium.scorecard_schema`); a problem is a ``ScorecardError`` naming folder, file and field.

    Parameters
    ----------
    folder : str or Path
        A folder written by ``vqalib score``.
    """
    from vqalib.compendium import scorecard_schema as schema

    path = Path(folder) / "scorecard.json"
    card = schema.parse_card(schema.file_bytes(path, what="a scorecard"), path)
    return schema.check_card(card, path, tag=FORMAT, per_question=PER_QUESTION)


def read_per_question(folder: str | Path, *, card: dict | None = None,
                      question_ids: set[int] | None = None) -> pd.DataFrame:
    """A scorecard's per-question scores (``per_question.csv``), each row checked: finite scores, whole ids, no
    measure twice for a question and, with ``card``, only its dataset's measures and question ids.

    Parameters
    ----------
    folder : str or Path
        A folder written by ``vqalib score``.
    card : dict, optional
        Its :func:`read_card`; None: the file alone.
    question_ids : set of int, optional
        The dataset's question ids (default read from the data for ``card``'s dataset).
    """
    from vqalib.compendium import scorecard_schema as schema

    path = Path(folder) / PER_QUESTION
    data = schema.file_bytes(path, what="per-question scores", missing="scorecard.json names per-question scores but "
                             "the file is missing")
    return schema.check_per_question(data, path, card=card, question_ids=question_ids)


def _table_file(folder: Path, name: str, *, records: list | None = None) -> pd.DataFrame:
    """A table file of a scorecard folder, bounded and regular; with ``records`` (scorecard.json's), the same columns
    and rows."""
    from vqalib.compendium import scorecard_schema as schema

    path = folder / name
    try:
        frame = csv_formula_unquoted(pd.read_csv(io.BytesIO(schema.file_bytes(path, what="a table")),
                                                 keep_default_na=False, na_values=[""]))
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        schema.fail(path, "top level", f"not a readable CSV table ({str(err).strip()[:200]})")
    if records and (list(frame.columns) != list(records[0]) or len(frame) != len(records)):
        schema.fail(path, "top level", f"{len(frame)} rows of columns {list(frame.columns)[:12]}, but scorecard.json "
                    f"holds {len(records)} rows of columns {list(records[0])[:12]}")
    return frame


def read(folder: str | Path) -> tuple[Scorecard, dict[str, pd.DataFrame | None], dict | None]:
    """A written scorecard folder read back as ``(card, besides, figure)`` (the reviewer site renders it), every file
    checked as :func:`read_card` and :func:`read_per_question` do.

    Parameters
    ----------
    folder : str or Path
        A folder written by ``vqalib score``.
    """
    from vqalib.compendium import scorecard_schema as schema

    folder = Path(folder)
    data = read_card(folder)
    sources = data["source"] if isinstance(data["source"], list) else [data["source"]]
    tables = {stem: _table_file(folder, f"{stem}.csv", records=records) for stem, records in data["tables"].items()}
    per_question = read_per_question(folder, card=data) if "per_question" in data else None
    card = Scorecard(model=data["model"], dataset=data["dataset"], sources=sources, coverage=data["coverage"],
                     tables=tables, settings=data.get("settings", {}), per_question=per_question)
    besides = {stem: _table_file(folder, f"{stem}.beside.csv")
               if os.path.lexists(folder / f"{stem}.beside.csv") else None for stem in tables}
    alt = folder / "table04_reference_shift.alt.txt"
    figure = None
    if os.path.lexists(alt):
        text = schema.file_bytes(alt, what="a figure description").decode("utf-8", errors="replace").strip()
        figure = {"png": "table04_reference_shift.png", "alt": text}
    return card, besides, figure


def _copy_regular(source: Path, target: Path) -> None:
    """Copy the regular files under ``source`` (not ``.*``, not ``index.html``) to ``target``; a link, pipe, device or
    file over the limit is named in a warning and skipped."""
    import shutil
    import stat
    import warnings

    from vqalib.compendium import scorecard_schema as schema
    from vqalib.core.io import file_kind, shown_path

    target.mkdir(parents=True, exist_ok=True)
    for entry in sorted(source.iterdir()):
        if entry.name.startswith(".") or entry.name == "index.html":
            continue
        info, most, why = entry.lstat(), schema.max_bytes(), None
        if stat.S_ISLNK(info.st_mode):
            why = f"a symbolic link (to {os.readlink(entry)})"
        elif stat.S_ISDIR(info.st_mode):
            _copy_regular(entry, target / entry.name)
        elif not stat.S_ISREG(info.st_mode):
            why = file_kind(info.st_mode)
        elif info.st_size > most:
            why = f"{info.st_size:,} bytes, over the limit of {most:,} ({schema.SIZE_SETTING})"
        else:
            try:
                with open_regular(entry, what="scorecard file", max_bytes=most) as handle, \
                        open(target / entry.name, "wb") as out:
                    shutil.copyfileobj(handle, out)
            except NotRegularFile as err:  # replaced since the check
                why = str(err).removeprefix(f"{entry}: ")
        if why:
            warnings.warn(f"{shown_path(entry)}: {why}: not copied to the site (a scorecard's files are regular files "
                          "inside its folder)", RuntimeWarning, stacklevel=2)


def scorecard_pages(scores: Path, out: Path) -> list[tuple[str, str]]:
    """Every scorecard under ``scores/`` as a page of the site: each checked as :func:`read` does (a bad one stops the
    build, named), its regular files copied (a link or special file is named in a warning and skipped).

    Parameters
    ----------
    scores : Path
        The project's ``scores/`` folder (missing: no scorecards).
    out : Path
        The site's ``scores/`` folder.

    Returns
    -------
    list of (str, str)
        ``(href from the site root, title)`` per scorecard.
    """
    from vqalib.compendium import scorecard_schema as schema

    found = []
    for folder in schema.scorecard_folders(scores) if scores.is_dir() else []:
        card, besides, figure = read(folder)
        try:
            html_text = page_html(card, besides, figure=figure, depth=2, where=f"scores/{folder.name}/")
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as err:
            schema.fail(folder / "scorecard.json", "its tables", f"not the shape vqalib score writes "
                        f"({type(err).__name__}: {str(err)[:200]})")
        _copy_regular(folder, out / folder.name)
        (out / folder.name / "index.html").write_text(html_text, encoding="utf-8")
        found.append((f"scores/{folder.name}/index.html", f"{card.model} on {card.dataset}"))
    return found
