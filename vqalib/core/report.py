"""The one place that writes tables and figures, and sets paper values beside ours.

DESIGN.md "Report": a reproduced paper table is saved as
``figures/<paper>_<table-id>.csv`` (+ ``.md``), keyed like its counterpart in
``data/paper/`` (copied from ``shared/paper_tables/``), with the columns ``reproduced``,
``paper``, ``diff`` and ``within_tolerance`` added. Figures are PNG + PDF in one
colour-blind-safe style, each with an alt text file beside it.
"""

from __future__ import annotations

import base64
import fnmatch
import html
import json
import math
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless: figures are written to files, notebooks show them inline
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from vqalib import registry  # noqa: E402
from vqalib.datasets import project_root  # noqa: E402
from vqalib import config


def figures_dir(path: str | Path | None = None) -> Path:
    """``path`` or ``<project>/figures``, created if needed."""
    out = Path(path) if path is not None else project_root() / "figures"
    out.mkdir(parents=True, exist_ok=True)
    return out


def paper_dir() -> Path:
    """Where the transcribed paper values used by the notebooks live (``data/paper``)."""
    return project_root() / "data" / "paper"


def load_paper_table(stem: str, *, value: str | list[str], directory: str | Path | None = None,
                     var_name: str = "statistic") -> pd.DataFrame:
    """Read ``data/paper/<stem>.csv``; adds ``paper`` (float) and ``paper_decimals``
    (digits after the point as printed, used to compare at the paper's precision).

    With several ``value`` columns (Table 1's mean and SD) the table is made long: one
    row per cell, the column name in ``var_name``.
    """
    path = Path(directory or paper_dir()) / f"{stem}.csv"
    table = pd.read_csv(path, dtype=str, keep_default_na=False)
    values = [value] if isinstance(value, str) else list(value)
    missing = [v for v in values if v not in table.columns]
    if missing:
        raise KeyError(f"{path}: no column(s) {missing}; columns are {list(table.columns)}")
    if len(values) > 1:
        ids = [c for c in table.columns if c not in values]
        table = (table.reset_index().melt(id_vars=["index", *ids], value_vars=values, var_name=var_name,
                                          value_name="_value")
                 .sort_values("index", kind="stable").drop(columns="index"))
        table = table[table["_value"].str.strip() != ""].reset_index(drop=True)
        value = "_value"
    else:
        value = values[0]
    printed = table[value].str.strip()
    table["paper"] = pd.to_numeric(printed.replace("", math.nan))
    table["paper_decimals"] = printed.map(lambda s: len(s.split(".")[1]) if "." in s else 0)
    return table.drop(columns=[value])


def compare(reproduced: pd.DataFrame, stem: str, *, value: str = "value",
            paper: pd.DataFrame | None = None) -> pd.DataFrame:
    """Set each reproduced cell beside the paper's, as the registry entry ``stem`` declares (every
    reproduced paper table; :mod:`vqalib.registry`).

    ``reproduced`` holds the entry's ``keys`` and ``value``; ``paper`` defaults to the entry's
    ``data/paper`` table (:func:`load_paper_table`). The result has the paper's key columns first,
    then ``relation`` (``same``, ``analogous``, ``fitted``, ``self-input``), ``reproduced`` (full
    precision), ``paper``, ``diff`` = reproduced rounded to the paper's printed precision minus paper,
    ``tolerance`` (the entry's rule in the cell's units) and ``within_tolerance`` = |diff| <= tolerance,
    for ``same`` cells only (a cell of another relation is never counted as reproduced). Self-input
    cells get ``consistent`` instead. Cells on one side only are kept, never dropped.
    """
    spec = registry.table(stem)
    if not spec.compared:
        raise ValueError(f"{stem}: the registry gives it no paper table to compare with")
    keys = list(spec.keys)
    if paper is None:
        paper = load_paper_table(spec.paper_table, value=spec.value if isinstance(spec.value, str) else list(spec.value))
    left = reproduced.rename(columns={value: "reproduced"})
    if spec.relation.from_column is None:
        left = left.drop(columns=["relation"], errors="ignore")
    right = paper.rename(columns={c: f"paper_{c}" for c in paper.columns if c in left.columns and c not in keys})
    # outer merges sort their keys: keep the paper's row order, then extra reproduced rows
    merged = (right.assign(_pos=range(len(right)))
              .merge(left.assign(_pos_r=range(len(left))), on=keys, how="outer", indicator=True))
    merged = merged.sort_values(["_pos", "_pos_r"], na_position="last", kind="stable").reset_index(drop=True)
    rows = merged.to_dict("records")
    relations = [spec.relation.of(r) for r in rows]
    rules = [registry.absolute_tolerance(spec, r, int(r["paper_decimals"]) if pd.notna(r["paper_decimals"]) else 4)
             for r in rows]
    rounded = [round(r["reproduced"], d) if pd.notna(r["reproduced"]) else math.nan for r, (_, d) in zip(rows, rules)]
    merged["diff"] = pd.Series(rounded, index=merged.index, dtype=float) - merged["paper"]
    both = merged["reproduced"].notna() & merged["paper"].notna()
    merged["tolerance"] = pd.Series([t for t, _ in rules], index=merged.index).where(merged["paper"].notna())
    close = merged["diff"].abs() <= merged["tolerance"] + 1e-9
    kind = pd.Series(relations, index=merged.index)
    merged["within_tolerance"] = pd.Series(pd.NA, index=merged.index, dtype="boolean")
    merged.loc[both & kind.eq("same"), "within_tolerance"] = close[both & kind.eq("same")]
    if spec.relation.from_column is None:
        merged["relation"] = kind
    extra = []
    if kind.eq("self-input").any():
        merged["consistent"] = pd.Series(pd.NA, index=merged.index, dtype="boolean")
        merged.loc[both & kind.eq("self-input"), "consistent"] = close[both & kind.eq("self-input")]
        extra = ["consistent"]
    merged = merged.drop(columns=["_merge", "paper_decimals", "_pos", "_pos_r"])
    first = [c for c in right.columns if c not in ("paper", "paper_decimals")]
    tail = ["relation", "reproduced", "paper", "diff", "tolerance", "within_tolerance", *extra]
    rest = [c for c in merged.columns if c not in first and c not in tail]
    return merged[first + rest + tail]


def outside(comparison: pd.DataFrame, stem: str, *, known: pd.DataFrame | None = None,
            include_unjudged: bool = False) -> pd.DataFrame:
    """Cells of a comparison (:func:`compare`) outside the registry's tolerance, with the known reason
    if any: ``same`` cells not within tolerance, and ``self-input`` cells not consistent; with
    ``include_unjudged``, also ``analogous`` and ``fitted`` cells farther from the paper than the
    tolerance (not judged, but their difference is explained too).

    ``known`` is ``data/paper/known_differences.csv`` (columns ``table``, ``cell``, ``explanation``);
    ``cell`` is the entry's cell keys joined by `` | ``, or a shell-style pattern
    (``* | BERTScore | * | *``) that explains every cell it matches; exact cells win.
    """
    spec = registry.table(stem)
    bad = _flags(comparison["within_tolerance"]).eq(False)
    if "consistent" in comparison:
        bad |= _flags(comparison["consistent"]).eq(False)
    if include_unjudged:
        kind = comparison["relation"].astype(str).str.split(":").str[0].str.strip()
        far = pd.to_numeric(comparison["diff"]).abs() > pd.to_numeric(comparison["tolerance"]) + 1e-9
        bad |= kind.isin(["analogous", "fitted"]) & far
    off = comparison[bad.fillna(False)].copy()
    off["cell"] = [" | ".join("" if pd.isna(v) else str(v) for v in row)
                   for row in off[list(spec.cell_keys)].itertuples(index=False)]
    off["explanation"] = explain(off["cell"], table=spec.known or stem, known=known)
    return off[["cell", "relation", "reproduced", "paper", "diff", "explanation"]].reset_index(drop=True)


NOT_EXPLAINED = "not explained yet"


def explain(cells: pd.Series, *, table: str, known: pd.DataFrame | None = None) -> pd.Series:
    """The known reason of each cell of ``table`` (``data/paper/known_differences.csv``), else
    :data:`NOT_EXPLAINED`."""
    if known is None:
        known = load_known_differences()
    rules = known[known["table"] == table]
    exact = rules.set_index("cell")["explanation"]
    patterns = [(c, e) for c, e in zip(rules["cell"], rules["explanation"]) if any(ch in c for ch in "*?[")]

    def one(cell: str) -> str:
        if cell in exact.index:
            return exact[cell]
        return next((e for pattern, e in patterns if fnmatch.fnmatchcase(cell, pattern)), NOT_EXPLAINED)

    return cells.map(one)


def load_known_differences(directory: str | Path | None = None) -> pd.DataFrame:
    """``data/paper/known_differences.csv``: why a reproduced cell differs from the paper."""
    return pd.read_csv(Path(directory or paper_dir()) / "known_differences.csv", dtype=str)


def agreement_summary(comparison: pd.DataFrame) -> dict:
    """Counts behind "N of M cells within tolerance": only ``same`` cells are judged."""
    compared = comparison["within_tolerance"].notna()
    n_ok = int(comparison["within_tolerance"].eq(True).sum())
    relation = comparison["relation"].astype(str).str.split(":").str[0].str.strip() if "relation" in comparison else None
    both = comparison["reproduced"].notna() & comparison["paper"].notna()
    out = {"compared": int(compared.sum()), "within": n_ok, "outside": int(compared.sum()) - n_ok,
           "only_reproduced": int((comparison["paper"].isna() & comparison["reproduced"].notna()).sum()),
           "only_paper": int((comparison["reproduced"].isna() & comparison["paper"].notna()).sum())}
    for kind in registry.RELATIONS[1:]:
        out[kind] = int((both & relation.eq(kind)).sum()) if relation is not None else 0
    if "consistent" in comparison:
        out["consistent"] = int(comparison["consistent"].eq(True).sum())
    return out


def _flags(column: pd.Series) -> pd.Series:
    """A boolean column as saved (True/False, or their text after a CSV round trip); missing stays NA."""
    return column.map({True: True, False: False, "True": True, "False": False}).astype("boolean")


def agreement_text(comparison: pd.DataFrame, stem: str, *, known: pd.DataFrame | None = None) -> str:
    """One sentence on how a reproduced table agrees with the paper, from its comparison (in memory or
    read back from ``figures/``): the notebooks print it and the README status table is made of it."""
    spec = registry.table(stem)
    frame = comparison.assign(within_tolerance=_flags(comparison["within_tolerance"]))
    if "consistent" in frame:
        frame["consistent"] = _flags(frame["consistent"])
    counts = agreement_summary(frame)
    label = f"{spec.paper} {spec.reproduces}".strip()
    parts = []
    if counts["compared"]:
        off = outside(frame, stem, known=known)
        off = off[off["relation"].astype(str).str.startswith("same")]
        explained = int((off["explanation"] != NOT_EXPLAINED).sum())
        rule = spec.tolerance.describe() if spec.tolerance else "exact"
        parts.append(f"{counts['within']} of {counts['compared']} cells within tolerance ({rule})"
                     + (f"; {counts['outside']} outside, {explained} of them explained" if counts["outside"] else ""))
    for kind in registry.RELATIONS[1:]:
        if counts[kind]:
            extra = f", {counts['consistent']} consistent" if kind == "self-input" and "consistent" in counts else ""
            parts.append(f"{counts[kind]} {kind} cell(s), not counted as reproduced{extra}")
    if "status" in frame:
        not_run = int(frame["status"].astype(str).str.startswith("not run").sum())
        if not_run:
            parts.append(f"{not_run} cell(s) not run")
    return f"{label}: " + ("; ".join(parts) if parts else "nothing to compare") + "."


def band(stem: str, *, decimals: int) -> float:
    """The registry tolerance of ``stem`` in the units of the data, for cells printed with ``decimals``
    (the band drawn around the diagonal of an agreement plot)."""
    rule = registry.table(stem).tolerance or registry.Tolerance()
    return rule.units * 10.0 ** (-rule.decimals_for(None, decimals))


def wide(comparison: pd.DataFrame, *, index: str | list[str], columns: str | list[str],
         values: str = "reproduced", decimals: int | None = None) -> pd.DataFrame:
    """A tidy comparison pivoted into the paper's layout, keeping the order of appearance."""
    index = [index] if isinstance(index, str) else list(index)
    columns = [columns] if isinstance(columns, str) else list(columns)
    table = comparison.dropna(subset=[values]).pivot(index=index, columns=columns, values=values)
    rows = list(dict.fromkeys(map(tuple, comparison[index].dropna().itertuples(index=False))))
    cols = list(dict.fromkeys(map(tuple, comparison[columns].dropna().itertuples(index=False))))
    rows = [r[0] for r in rows] if len(index) == 1 else pd.MultiIndex.from_tuples(rows, names=index)
    cols = [c[0] for c in cols] if len(columns) == 1 else pd.MultiIndex.from_tuples(cols, names=columns)
    table = table.reindex(index=rows, columns=cols)
    return table.round(decimals) if decimals is not None else table


def not_run(reason: str, *, enable: str) -> pd.DataFrame:
    """The one-row table shown in place of results a missing resource prevents."""
    return pd.DataFrame([{"status": f"not run: {reason}", "how to enable": enable}])


REWRITE_ENV = "VQALIB_REWRITE_FIGURES"  # "1": write every table and figure even if only model noise moved
_KEPT: set[str] = set()  # tables this process kept because model-derived values moved only within tolerance


def save(frame: pd.DataFrame, stem: str, *, directory: str | Path | None = None, title: str | None = None) -> Path:
    """Write ``figures/<stem>.csv`` and ``.md`` as the registry entry ``stem`` declares (title,
    precision); return the CSV path.

    Floats are written with a fixed number of decimals and ``\\n`` line endings, so two runs give
    byte-identical files. On a machine other than the one that made the figures in ``directory``
    (:func:`vqalib.contract.made_here`), a file that differs only in model-derived columns, within the
    tolerances the registry declares (another CPU's rounding), is kept: ``make reproduce`` then leaves
    ``git status`` clean, and lists what it kept (not in the notebook, whose output stays the same).
    On the machine that made them any difference is the code's, and is written. Set
    ``VQALIB_REWRITE_FIGURES=1`` to write it anyway.
    """
    from vqalib import contract
    from vqalib.datasets import write_atomic

    spec = registry.table(stem)
    out = figures_dir(directory)
    csv_path = out / f"{stem}.csv"
    text = frame.to_csv(index=False, float_format=f"%.{spec.decimals}f", lineterminator="\n")
    if csv_path.exists() and config.get(REWRITE_ENV) != "1" and not contract.made_here(out):
        moves = contract.table_moves(spec, csv_path.read_text(encoding="utf-8"), text, file=csv_path.name)
        if moves and all(m.within for m in moves):
            _KEPT.add(stem)
            largest = max((m.moved for m in moves if m.moved is not None and not math.isnan(m.moved)), default=0.0)
            note = {"file": csv_path.name, "cells": len(moves), "largest": largest}
            with open(out / contract.KEPT_LOG, "a", encoding="utf-8") as log:
                log.write(json.dumps(note) + "\n")
            return csv_path
    body = frame.to_markdown(index=False, floatfmt=f".{spec.md_decimals}f", missingval="")
    write_atomic(csv_path, text.encode("utf-8"))
    write_atomic(out / f"{stem}.md", f"# {title or spec.title}\n\n{body}\n\nSource: `{stem}.csv` (regenerated by "
                                      "`make reproduce`).\n".encode("utf-8"))
    return csv_path


def use_style() -> None:
    """The compendium's one figure style: :func:`vqalib.plots.use_style` (the notebooks call it from here)."""
    from vqalib import plots  # here, not at the top: plots must stay importable without report

    plots.use_style()


def short_alt(name: str) -> str:
    """The figure's short alt text (a name, not a description): its registry title, the paper figure it
    reproduces and, for a simulated study, that the data are simulated. The long description lives in
    ``figures/<name>.alt.txt`` and is linked to the image by ``aria-describedby`` (HTML)."""
    spec = registry.figure(name)
    text = spec.title
    if spec.reproduces and spec.reproduces not in text:
        text += f" ({spec.paper} {spec.reproduces})"
    if "SIMULATED" in name:
        text = "SIMULATED data: " + text
    return text


@dataclass
class SavedFigure:
    """What :func:`save_figure` wrote. As a cell's value it shows the saved PNG inline, with the short
    alt on the image and the long description as its caption: ``text/html`` for JupyterLab, nbconvert
    and notebook viewers, ``image/png`` (alt in its metadata) for viewers that show images only. Both
    embed the bytes of the file in ``figures/``, so the notebook shows exactly the committed figure and
    a rerun writes identical outputs."""

    png: Path
    pdf: Path
    alt_path: Path
    alt_text: str

    @property
    def name(self) -> str:
        return self.png.stem

    def _repr_mimebundle_(self, include=None, exclude=None):
        data = base64.b64encode(self.png.read_bytes()).decode("ascii")
        alt = short_alt(self.name)
        described = f"{self.name}-description"
        body = (f'<figure class="vqalib-figure" data-figure="{html.escape(self.name, quote=True)}">'
                f'<img src="data:image/png;base64,{data}" alt="{html.escape(alt, quote=True)}" '
                f'aria-describedby="{described}" style="max-width:100%;height:auto">'
                f'<figcaption><strong>Figure <code>{html.escape(self.name)}</code></strong> (long description, '
                f'also in <code>figures/{html.escape(self.alt_path.name)}</code>): '
                f'<span id="{described}">{html.escape(self.alt_text)}</span></figcaption></figure>')
        return ({"text/html": body, "image/png": data, "text/plain": repr(self)},
                {"image/png": {"alt": alt}})

    def __repr__(self) -> str:  # no absolute paths: a notebook's output must not depend on where the checkout is
        return f"SavedFigure({self.png.stem!r})"


def save_figure(fig: plt.Figure, name: str, *, alt_text: str,
                directory: str | Path | None = None) -> SavedFigure:
    """Write ``figures/<name>.png``, ``.pdf`` and ``.alt.txt`` (the long description for screen readers)
    after checking every text of ``fig`` reaches WCAG's 4.5:1 contrast (:func:`vqalib.plots.contrast_problems`),
    and close ``fig`` (so a notebook shows the figure once, from the returned :class:`SavedFigure`).

    A figure drawn from a table that :func:`save` kept (model noise within tolerance) is kept too,
    so its image matches the committed numbers."""
    from vqalib import plots

    if not alt_text or len(alt_text.split()) < 10:
        raise ValueError(f"figure {name!r}: give a one-paragraph alt text describing what it shows")
    spec = registry.figure(name)
    problems = plots.contrast_problems(fig)
    if problems:  # text a low-vision reader cannot read is a bug of the figure, not a style choice
        raise ValueError(f"figure {name!r}: text below {plots.MIN_CONTRAST}:1 contrast: " + "; ".join(problems))
    out = figures_dir(directory)
    png, pdf, alt = out / f"{name}.png", out / f"{name}.pdf", out / f"{name}.alt.txt"
    kept = any(fnmatch.fnmatchcase(stem, pattern) for stem in _KEPT for pattern in spec.data)
    if not (kept and png.exists() and pdf.exists() and alt.exists()):
        fig.savefig(png, metadata={"Software": None})
        fig.savefig(pdf, metadata={"CreationDate": None, "Creator": None, "Producer": None})
        alt.write_text(alt_text.strip() + "\n", encoding="utf-8")
    plt.close(fig)
    return SavedFigure(png=png, pdf=pdf, alt_path=alt, alt_text=alt.read_text(encoding="utf-8").strip())


def remove_figure(name: str, *, directory: str | Path | None = None) -> list[Path]:
    """Delete ``figures/<name>.png``, ``.pdf`` and ``.alt.txt`` if present (a figure that is "not run"
    this time must not leave an earlier run's image behind); return what was deleted."""
    out = figures_dir(directory)
    removed = [p for p in (out / f"{name}.png", out / f"{name}.pdf", out / f"{name}.alt.txt") if p.exists()]
    for p in removed:
        p.unlink()
    return removed


def fill_not_run(table: pd.DataFrame, computed: pd.DataFrame, *, keys: list[str]) -> pd.DataFrame:
    """Replace "not run" rows of ``table`` by ``computed`` rows with the same keys (model runs arriving)."""
    if computed.empty:
        return table
    done = set(map(tuple, computed[keys].itertuples(index=False)))
    kept = table[[tuple(k) not in done for k in table[keys].itertuples(index=False)]]
    return pd.concat([kept, computed], ignore_index=True)


# --- the README status table, generated from the registry and figures/ ----------------------

def _read_figure_table(figures: Path, stem: str) -> pd.DataFrame:
    return pd.read_csv(Path(figures) / f"{stem}.csv")


def _rouge_meteor_paper_in_full_ci(figures: Path) -> dict:
    """VizWiz-LF Table 4: how many of the paper's ROUGE/METEOR cells lie inside our full-set 95% CI."""
    full = _read_figure_table(figures, "vizwiz-lf_table04_full_set_bootstrap")
    cells = full[full["metric"].isin(["ROUGE", "METEOR"]) & full["paper"].notna()]
    return {"inside": int(cells["paper_in_ci"].astype(str).eq("True").sum()), "n": len(cells)}


def _abstention_agreement(figures: Path) -> dict:
    """VizWiz-LF Table 5 via the offline classifier: sources whose abstention agrees with the labels."""
    table = _read_figure_table(figures, "vizwiz-lf_table05_abstention_offline_classifier").set_index("source")
    return {"criterion": registry.ABSTENTION_CRITERION,
            "n_reached": int((table["agreement"] >= registry.ABSTENTION_CRITERION).sum()), "n": len(table),
            "expert": table.at["Expert", "agreement"], "expert_low": table.at["Expert", "agreement_ci_low"],
            "expert_high": table.at["Expert", "agreement_ci_high"], "gpt4v": table.at["GPT-4V", "agreement"]}


def _tier_order(figures: Path) -> dict:
    """AFGV Table 2 layout: question sets whose mean FK grade is ordered simplified < baseline < complex."""
    table = _read_figure_table(figures, "afgv_table02_readability_by_tier")
    grades = table.pivot(index="question_set", columns="tier", values="mean_fk")
    ordered = (grades["simplified"] < grades["baseline"]) & (grades["baseline"] < grades["complex"])
    return {"ordered": int(ordered.sum()), "n": len(ordered)}


SUMMARIES = {"rouge_meteor_paper_in_full_ci": _rouge_meteor_paper_in_full_ci,
             "abstention_agreement": _abstention_agreement, "tier_order": _tier_order}


def headline_text(headline: registry.Headline, *, figures: Path) -> str:
    """A README headline with its numbers read from ``figures/``."""
    if headline.summary:
        return headline.text.format(**SUMMARIES[headline.summary](figures))
    table = _read_figure_table(figures, headline.table)
    rows = table
    for column, value in headline.where:
        rows = rows[rows[column].astype(str) == value]
    if len(rows) != 1:
        raise ValueError(f"headline {headline.text!r}: {len(rows)} rows of {headline.table} match {headline.where}")
    return headline.text.format(**rows.iloc[0].to_dict())


def _sentence(text: str) -> str:
    return text[0].upper() + text[1:] + ("" if text.endswith(".") else ".")


def status_markdown(*, figures: Path | None = None) -> str:
    """The README table "What each notebook reproduces", every number in it read from ``figures/``."""
    figures = Path(figures) if figures is not None else project_root() / "figures"
    lines = ["| notebook | reproduces | status |", "|---|---|---|"]
    for row in registry.STATUS:
        parts = [agreement_text(_read_figure_table(figures, stem), stem) for stem in row.tables]
        parts += [_sentence(headline_text(h, figures=figures)) for h in row.headlines]
        if row.note:
            parts.append(_sentence(row.note))
        lines.append(f"| `{row.notebook}` | {row.reproduces} | {' '.join(parts)} |")
    return "\n".join(lines) + "\n"


STATUS_BEGIN = "<!-- status: generated by `python -m vqalib.contract readme` from vqalib.registry and figures/ -->"
STATUS_END = "<!-- status: end -->"


def update_readme_status(readme: Path | None = None, *, figures: Path | None = None) -> bool:
    """Rewrite the generated status table of README.md between its markers; return whether it changed."""
    from vqalib.datasets import write_atomic

    readme = Path(readme) if readme is not None else project_root() / "README.md"
    text = readme.read_text(encoding="utf-8")
    if STATUS_BEGIN not in text or STATUS_END not in text:
        raise ValueError(f"{readme}: no generated status block ({STATUS_BEGIN!r} ... {STATUS_END!r})")
    head, rest = text.split(STATUS_BEGIN, 1)
    _, tail = rest.split(STATUS_END, 1)
    new = f"{head}{STATUS_BEGIN}\n{status_markdown(figures=figures)}{STATUS_END}{tail}"
    if new != text:
        write_atomic(readme, new.encode("utf-8"))
    return new != text
