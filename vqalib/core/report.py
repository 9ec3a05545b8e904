"""The one place that writes tables, and sets paper values beside ours.

ARCHITECTURE.md, "Data flow": a reproduced paper table is saved as ``figures/<paper>_<table-id>.csv`` (+ ``.md``),
keyed like its counterpart in ``data/paper/`` (copied from ``shared/paper_tables/``), with the columns ``reproduced``,
``paper``, ``diff`` and ``within_tolerance`` added. Figures are written by :mod:`vqalib.core.figure_files`.
"""

from __future__ import annotations

import fnmatch
import json
import math
from pathlib import Path

import pandas as pd

from vqalib.core import config, registry, specs
from vqalib.core.io import project_root
from vqalib.core.evidence import UNEXPLAINED


def figures_dir(path: str | Path | None = None) -> Path:
    """``path`` or ``<project>/figures``, created if needed.

    Parameters
    ----------
    path : str or Path, optional

    Returns
    -------
    Path
    """
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

    Parameters
    ----------
    stem : str
    value : str or list of str
        The printed column(s), replaced by ``paper``. With several (Table 1's mean and SD) the table is made
        long: one row per non-blank cell, the column name in ``var_name``.
    directory : str or Path, optional
        Default ``data/paper``.
    var_name : str, default "statistic"

    Returns
    -------
    DataFrame
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
    reproduced paper table; :mod:`vqalib.core.registry`).

    Parameters
    ----------
    reproduced : DataFrame
        The entry's ``keys`` and the ``value`` column.
    stem : str
    value : str, default "value"
    paper : DataFrame, optional
        Default the entry's ``data/paper`` table (:func:`load_paper_table`).

    Returns
    -------
    DataFrame
        The paper's key columns first, then ``relation`` (``same``, ``analogous``, ``fitted``, ``self-input``),
        ``reproduced`` (full precision), ``paper``, ``diff`` = reproduced rounded to the paper's printed precision
        minus paper, ``tolerance`` (the entry's rule in the units of the cell's printed column) and
        ``within_tolerance`` = |diff| <=
        tolerance, for ``same`` cells only (a cell of another relation is never counted as reproduced).
        Self-input cells get ``consistent`` instead. Cells on one side only are kept, never dropped.
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
    rules = registry.cell_rules(spec, merged)  # at the decimals of the paper's printed column
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

    Parameters
    ----------
    comparison : DataFrame
    stem : str
    known : DataFrame, optional
        Default ``data/paper/known_differences.csv`` (columns ``table``, ``cell``, ``explanation``); ``cell`` is
        the entry's cell keys joined by `` | ``, or a shell-style pattern (``* | BERTScore | * | *``) that
        explains every cell it matches; exact cells win.
    include_unjudged : bool, default False

    Returns
    -------
    DataFrame
        ``cell``, ``relation``, ``reproduced``, ``paper``, ``diff``, ``explanation`` and ``evidence`` (the cited
        cells, or "unexplained": :mod:`vqalib.core.evidence`).
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
    off["evidence"] = explain(off["cell"], table=spec.known or stem, known=known, column="evidence")
    return off[["cell", "relation", "reproduced", "paper", "diff", "explanation", "evidence"]].reset_index(drop=True)


NOT_EXPLAINED = "not explained yet"


def explain(cells: pd.Series, *, table: str, known: pd.DataFrame | None = None,
            column: str = "explanation") -> pd.Series:
    """The known reason of each cell of ``table`` (``data/paper/known_differences.csv``), else
    :data:`NOT_EXPLAINED`.

    Parameters
    ----------
    cells : Series
        Cell labels: the entry's cell keys joined by `` | ``.
    table : str
    known : DataFrame, optional
        Default :func:`load_known_differences`; an exact ``cell`` wins over a shell-style pattern.
    column : str, default "explanation"
        ``explanation``, or ``evidence`` (:mod:`vqalib.core.evidence`; "" when the file has none).

    Returns
    -------
    Series
        The column's text per cell; :data:`NOT_EXPLAINED` where no row matches.
    """
    if known is None:
        known = load_known_differences()
    rules = known[known["table"] == table]
    if column not in rules:
        return pd.Series("", index=cells.index, dtype=object)
    exact = rules.set_index("cell")[column]
    patterns = [(c, e) for c, e in zip(rules["cell"], rules[column]) if any(ch in c for ch in "*?[")]

    def one(cell: str) -> str:
        if cell in exact.index:
            return exact[cell]
        return next((e for pattern, e in patterns if fnmatch.fnmatchcase(cell, pattern)), NOT_EXPLAINED)

    return cells.map(one)


def explained_cells(off: pd.DataFrame) -> pd.Series:
    """Which cells of :func:`outside` are explained with committed evidence (README status, site).

    Parameters
    ----------
    off : DataFrame
        :func:`outside` output (``explanation``, ``evidence``).

    Returns
    -------
    Series
        True where a known difference explains the cell and its evidence is not "unexplained".
    """
    evidence = off["evidence"].fillna("").astype(str).str.strip()
    return off["explanation"].ne(NOT_EXPLAINED) & evidence.ne(UNEXPLAINED)


def load_known_differences(directory: str | Path | None = None) -> pd.DataFrame:
    """``data/paper/known_differences.csv``: why a reproduced cell differs from the paper.

    Parameters
    ----------
    directory : str or Path, optional
        Default ``data/paper``.

    Returns
    -------
    DataFrame
    """
    return pd.read_csv(Path(directory or paper_dir()) / "known_differences.csv", dtype=str)


def agreement_summary(comparison: pd.DataFrame) -> dict:
    """Counts behind "N of M cells within tolerance": only ``same`` cells are judged.

    Parameters
    ----------
    comparison : DataFrame
        :func:`compare` output.

    Returns
    -------
    dict
        ``compared``, ``within``, ``outside``, ``only_reproduced``, ``only_paper``, the count of each
        non-``same`` relation, ``fitted_within`` (fitted cells within the tolerance: reached by a fitted protocol,
        not reproduced), and ``consistent`` when the comparison has that column.
    """
    compared = comparison["within_tolerance"].notna()
    n_ok = int(comparison["within_tolerance"].eq(True).sum())
    relation = comparison["relation"].astype(str).str.split(":").str[0].str.strip() if "relation" in comparison else None
    both = comparison["reproduced"].notna() & comparison["paper"].notna()
    out = {"compared": int(compared.sum()), "within": n_ok, "outside": int(compared.sum()) - n_ok,
           "only_reproduced": int((comparison["paper"].isna() & comparison["reproduced"].notna()).sum()),
           "only_paper": int((comparison["reproduced"].isna() & comparison["paper"].notna()).sum())}
    for kind in specs.RELATIONS[1:]:
        out[kind] = int((both & relation.eq(kind)).sum()) if relation is not None else 0
    out["fitted_within"] = 0
    if relation is not None and "tolerance" in comparison:
        close = (pd.to_numeric(comparison["diff"]).abs() <= pd.to_numeric(comparison["tolerance"]) + 1e-9)
        out["fitted_within"] = int((both & relation.eq("fitted") & close).sum())
    if "consistent" in comparison:
        out["consistent"] = int(comparison["consistent"].eq(True).sum())
    return out


def _flags(column: pd.Series) -> pd.Series:
    """A boolean column as saved (True/False, or their text after a CSV round trip); missing stays NA."""
    return column.map({True: True, False: False, "True": True, "False": False}).astype("boolean")


def agreement_counts(comparison: pd.DataFrame, stem: str, *, known: pd.DataFrame | None = None) -> dict:
    """The counts behind a table's agreement (in memory or read from ``figures/``): the README status table's and
    the reviewer site's one source.

    Parameters
    ----------
    comparison : DataFrame
    stem : str
    known : DataFrame, optional
        As in :func:`outside`.

    Returns
    -------
    dict
        :func:`agreement_summary` with ``explained`` and ``unexplained`` (the ``same`` cells outside, with and
        without evidence), ``not_counted`` (cells of another relation) and ``not_run`` (rows whose status
        starts "not run").
    """
    frame = comparison.assign(within_tolerance=_flags(comparison["within_tolerance"]))
    frame = frame.assign(consistent=_flags(frame["consistent"])) if "consistent" in frame else frame
    counts = agreement_summary(frame)
    off = outside(frame, stem, known=known) if counts["compared"] else frame.iloc[:0].assign(relation="", evidence="")
    off = off[off["relation"].astype(str).str.startswith("same")]
    counts["explained"] = int(explained_cells(off).sum()) if len(off) else 0
    counts["unexplained"] = counts["outside"] - counts["explained"]
    counts["not_counted"] = sum(counts[k] for k in specs.RELATIONS[1:])
    counts["not_run"] = int(frame["status"].astype(str).str.startswith("not run").sum()) if "status" in frame else 0
    return counts


def agreement_text(comparison: pd.DataFrame, stem: str, *, known: pd.DataFrame | None = None) -> str:
    """One sentence on how a reproduced table agrees with the paper (:func:`agreement_counts`): the notebooks
    print it and the README status table is made of it.

    Parameters
    ----------
    comparison, stem, known
        As in :func:`agreement_counts`.

    Returns
    -------
    str
    """
    spec = registry.table(stem)
    counts = agreement_counts(comparison, stem, known=known)
    label = f"{spec.paper} {spec.reproduces}".strip()
    parts = []
    if counts["compared"]:
        rule = spec.tolerance.describe() if spec.tolerance else "exact"
        parts.append(f"{counts['within']} of {counts['compared']} cells within tolerance ({rule})"
                     + (f"; {counts['outside']} outside: {counts['explained']} explained with evidence, "
                        f"{counts['unexplained']} unexplained" if counts["outside"] else ""))
    for kind in specs.RELATIONS[1:]:
        if counts[kind]:
            extra = (f", {counts['consistent']} consistent ({spec.tolerance.describe() if spec.tolerance else 'exact'})"
                     if kind == "self-input" and "consistent" in counts else "")
            if kind == "fitted" and counts["fitted_within"]:
                extra = f"; {counts['fitted_within']} of them within the tolerance, reached by a fitted protocol"
            parts.append(f"{counts[kind]} {kind} cell(s), not counted as reproduced{extra}")
    if counts["not_run"]:
        parts.append(f"{counts['not_run']} cell(s) not run")
    return f"{label}: " + ("; ".join(parts) if parts else "nothing to compare") + "."


def wide(comparison: pd.DataFrame, *, index: str | list[str], columns: str | list[str],
         values: str = "reproduced", decimals: int | None = None) -> pd.DataFrame:
    """A tidy comparison pivoted into the paper's layout, keeping the order of appearance.

    Parameters
    ----------
    comparison : DataFrame
    index, columns : str or list of str
        The key columns that become the rows and the columns.
    values : str, default "reproduced"
    decimals : int, optional
        Round to this many decimals; default no rounding.

    Returns
    -------
    DataFrame
    """
    index = [index] if isinstance(index, str) else list(index)
    columns = [columns] if isinstance(columns, str) else list(columns)
    table = comparison.dropna(subset=[values]).pivot(index=index, columns=columns, values=values)
    rows = list(dict.fromkeys(map(tuple, comparison[index].dropna().itertuples(index=False))))
    cols = list(dict.fromkeys(map(tuple, comparison[columns].dropna().itertuples(index=False))))
    rows = [r[0] for r in rows] if len(index) == 1 else pd.MultiIndex.from_tuples(rows, names=index)
    cols = [c[0] for c in cols] if len(columns) == 1 else pd.MultiIndex.from_tuples(cols, names=columns)
    table = table.reindex(index=rows, columns=cols)
    return table.round(decimals) if decimals is not None else table


def not_run_rows(cells: pd.DataFrame, *, reason: str) -> pd.DataFrame:
    """The cells of a table that could not run, each saying why and how to enable it (every "not run" row).

    Parameters
    ----------
    cells : DataFrame
        One row per cell, with the table's key columns (may be empty; its columns are kept).
    reason : str
        Why the cells have no value and what would enable them; ``"not run: "`` is put before it unless it starts
        with ``"not run"``.

    Returns
    -------
    DataFrame
        ``cells`` with a ``status`` column, on a fresh index.
    """
    status = reason if reason.startswith("not run") else f"not run: {reason}"
    return cells.assign(status=status).reset_index(drop=True)


def not_run(reason: str, *, enable: str) -> pd.DataFrame:
    """The one-row table shown in place of results a missing resource prevents.

    Parameters
    ----------
    reason : str
        Why, after ``"not run: "`` in the ``status`` column.
    enable : str
        The ``how to enable`` column.

    Returns
    -------
    DataFrame
    """
    return pd.DataFrame([{"status": f"not run: {reason}", "how to enable": enable}])


REWRITE_ENV = "VQALIB_REWRITE_FIGURES"  # "1": write every table and figure even if only model noise moved
_KEPT: set[str] = set()  # tables this process kept because model-derived values moved only within tolerance


def save(frame: pd.DataFrame, stem: str, *, directory: str | Path | None = None, title: str | None = None) -> Path:
    """Write ``figures/<stem>.csv`` and ``.md`` as the registry entry ``stem`` declares (title,
    precision); return the CSV path.

    Floats are written with a fixed number of decimals and ``\\n`` line endings, so two runs give
    byte-identical files. On a machine other than the one that made the figures in ``directory``
    (:func:`vqalib.core.contract.made_here`), a file that differs only in model-derived columns, within the
    tolerances the registry declares (another CPU's rounding), is kept: ``make reproduce`` then leaves
    ``git status`` clean, and lists what it kept (not in the notebook, whose output stays the same).
    On the machine that made them any difference is the code's, and is written. Set
    ``VQALIB_REWRITE_FIGURES=1`` to write it anyway.

    Parameters
    ----------
    frame : DataFrame
        The table, written without its index.
    stem : str
    directory : str or Path, optional
        Default ``<project>/figures`` (:func:`figures_dir`).
    title : str, optional
        The Markdown file's heading; default the entry's title.

    Returns
    -------
    Path
    """
    from vqalib.core import contract
    from vqalib.core.io import write_atomic

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


def fill_not_run(table: pd.DataFrame, computed: pd.DataFrame, *, keys: list[str]) -> pd.DataFrame:
    """Replace "not run" rows of ``table`` by ``computed`` rows with the same keys (model runs arriving).

    Parameters
    ----------
    table : DataFrame
    computed : DataFrame
        New rows; every row of ``table`` with the same ``keys`` is dropped (whatever its status).
    keys : list of str

    Returns
    -------
    DataFrame
        The rows of ``table`` that were kept, then ``computed``, on a fresh index; ``table`` itself when
        ``computed`` is empty.
    """
    if computed.empty:
        return table
    done = set(map(tuple, computed[keys].itertuples(index=False)))
    kept = table[[tuple(k) not in done for k in table[keys].itertuples(index=False)]]
    return pd.concat([kept, computed], ignore_index=True)
