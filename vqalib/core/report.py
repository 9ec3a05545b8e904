"""The one place that writes tables (``figures/<stem>.csv`` + ``.md``, keyed like ``data/paper/<stem>.csv``) and sets
paper values beside ours (ARCHITECTURE.md, "Data flow"); figures are written by :mod:`vqalib.core.figure_files`.
"""

from __future__ import annotations

import fnmatch
import html
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pandas as pd

from vqalib.core import config, registry, saved_by, specs
from vqalib.core.io import project_root, shown_path
from vqalib.core.evidence import UNEXPLAINED


def figures_dir(path: str | Path | None = None) -> Path:
    """The folder tables and figures are written to (default ``<project>/figures``), created if needed.

    Parameters
    ----------
    path : str or Path, optional
    """
    out = Path(path) if path is not None else project_root() / "figures"
    out.mkdir(parents=True, exist_ok=True)
    return out


def output_dir(path: str | Path | None, notebook: str) -> Path:
    """Where a notebook writes its tables and figures, printed as its first output: ``path`` if given, else
    ``figures/`` under ``vqalib reproduce``'s full run only, else ``build/explore/<notebook>/figures``.

    Parameters
    ----------
    path : str or Path, optional
        The notebook's ``figures_dir``; the committed ``figures/`` is refused outside ``vqalib reproduce``.
    notebook : str
    """
    root, in_place = project_root(), config.get(IN_PLACE_ENV) == "1"
    out = Path(path) if path is not None else root / ("figures" if in_place else f"build/explore/{notebook}/figures")
    if out.resolve() == (root / "figures").resolve() and not in_place:
        raise ValueError(f"figures_dir={str(path)!r}: only `vqalib reproduce` writes figures/; leave it None")
    shown = shown_path(out)
    print(f"Tables and figures go to {shown}/ (" + ("the committed record: `vqalib reproduce`)." if in_place and path is None
          else "exploring: figures/ is written only by `vqalib reproduce` with the committed parameters)."))
    return figures_dir(out)


def paper_dir() -> Path:
    """Where the transcribed paper values used by the notebooks live (``data/paper``)."""
    return project_root() / "data" / "paper"


def load_paper_table(stem: str, *, value: str | list[str], directory: str | Path | None = None,
                     var_name: str = "statistic") -> pd.DataFrame:
    """Read ``data/paper/<stem>.csv`` with ``paper`` (float) and ``paper_decimals`` (digits printed after the point).

    Parameters
    ----------
    stem : str
    value : str or list of str
        The printed column(s); several make the table long, their names in ``var_name``.
    directory : str or Path, optional
        Default ``data/paper``.
    var_name : str, default "statistic"
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
    """Set each reproduced cell beside the paper's, as the registry entry ``stem`` declares (every paper table).

    Parameters
    ----------
    reproduced : DataFrame
        The entry's ``keys`` and the ``value`` column.
    stem : str
    value : str, default "value"
    paper : DataFrame, optional
        Default the entry's ``data/paper`` table.

    Returns
    -------
    DataFrame
        The paper's keys, ``relation``, ``reproduced``, ``paper``, ``diff`` (at the paper's printed precision),
        ``tolerance``, ``within_tolerance`` (``same`` cells only) and, for ``self-input`` cells, ``consistent``.
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
    """The cells outside the registry's tolerance (``same`` not within, ``self-input`` not consistent), with reasons.

    Parameters
    ----------
    comparison : DataFrame
    stem : str
    known : DataFrame, optional
        Default ``data/paper/known_differences.csv`` (an exact ``cell`` wins over a shell pattern).
    include_unjudged : bool, default False
        Also ``analogous`` and ``fitted`` cells farther from the paper than the tolerance.

    Returns
    -------
    DataFrame
        ``cell``, ``relation``, ``reproduced``, ``paper``, ``diff``, ``explanation``, ``evidence``.
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
    """The known reason of each cell of ``table`` (``data/paper/known_differences.csv``), else :data:`NOT_EXPLAINED`.

    Parameters
    ----------
    cells : Series
        Cell labels: the entry's cell keys joined by `` | ``.
    table : str
    known : DataFrame, optional
    column : str, default "explanation"
        Or ``evidence`` ("" when the file has none).
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
    """Which cells of :func:`outside` a known difference explains with committed evidence.

    Parameters
    ----------
    off : DataFrame
    """
    evidence = off["evidence"].fillna("").astype(str).str.strip()
    return off["explanation"].ne(NOT_EXPLAINED) & evidence.ne(UNEXPLAINED)


def load_known_differences(directory: str | Path | None = None) -> pd.DataFrame:
    """``data/paper/known_differences.csv``: why a reproduced cell differs from the paper.

    Parameters
    ----------
    directory : str or Path, optional
    """
    return pd.read_csv(Path(directory or paper_dir()) / "known_differences.csv", dtype=str)


def agreement_summary(comparison: pd.DataFrame) -> dict:
    """Counts behind "N of M cells within tolerance" (only ``same`` cells are judged).

    Parameters
    ----------
    comparison : DataFrame

    Returns
    -------
    dict
        ``compared``, ``within``, ``outside``, ``only_reproduced``, ``only_paper``, each other relation,
        ``fitted_within`` and ``consistent`` (when the column exists).
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
    """The counts behind a table's agreement, in memory or read from ``figures/`` (README status table, site).

    Parameters
    ----------
    comparison : DataFrame
    stem : str
    known : DataFrame, optional

    Returns
    -------
    dict
        :func:`agreement_summary` with ``explained``, ``unexplained``, ``not_counted`` and ``not_run``.
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
    """One sentence on how a reproduced table agrees with the paper (notebooks, README status table).

    Parameters
    ----------
    comparison : DataFrame
    stem : str
    known : DataFrame, optional
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
    """A tidy comparison pivoted into the paper's layout, in order of appearance.

    Parameters
    ----------
    comparison : DataFrame
    index, columns : str or list of str
    values : str, default "reproduced"
    decimals : int, optional
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
    """The cells of a table that could not run, each saying why and how to enable it.

    Parameters
    ----------
    cells : DataFrame
        One row per cell, with the table's key columns.
    reason : str
        Prefixed with ``"not run: "`` unless it starts with ``"not run"``.
    """
    status = reason if reason.startswith("not run") else f"not run: {reason}"
    return cells.assign(status=status).reset_index(drop=True)


def not_run(reason: str, *, enable: str) -> pd.DataFrame:
    """The one-row table shown in place of results a missing resource prevents.

    Parameters
    ----------
    reason : str
    enable : str
        The ``how to enable`` column.
    """
    return pd.DataFrame([{"status": f"not run: {reason}", "how to enable": enable}])


REWRITE_ENV = "VQALIB_REWRITE_FIGURES"  # "1": write every table and figure even if only model noise moved
IN_PLACE_ENV = "VQALIB_REPRODUCE_IN_PLACE"  # "1": set by `vqalib reproduce`'s full run (committed parameters)


@dataclass(frozen=True)
class Saved:
    """What :func:`save` did: ``outcome`` is "written", "kept" or "unchanged"."""

    path: Path  # the CSV
    outcome: str

    def __repr__(self) -> str:  # no absolute path: a notebook's output must not depend on the checkout's place
        return f"Saved({self.path.name!r}, {self.outcome!r})"


def save(frame: pd.DataFrame, stem: str, *, directory: str | Path | None = None, title: str | None = None) -> Saved:
    """Write ``figures/<stem>.csv`` and ``.md`` as the registry entry ``stem`` declares (title, precision).

    Parameters
    ----------
    frame : DataFrame
    stem : str
    directory : str or Path, optional
    title : str, optional
        The Markdown heading; default the entry's title.

    Returns
    -------
    Saved
        "unchanged" when both files hold these bytes; "kept" on a machine other than the one that made ``directory``
        when only model-derived values moved within tolerance (so ``git status`` stays clean); else "written".
        ``VQALIB_REWRITE_FIGURES=1`` always writes.
    """
    from vqalib.core import contract
    from vqalib.core.io import write_atomic

    spec = registry.table(stem)
    out = figures_dir(directory)
    csv_path, md_path = out / f"{stem}.csv", out / f"{stem}.md"
    text = frame.to_csv(index=False, float_format=f"%.{spec.decimals}f", lineterminator="\n")
    body = frame.to_markdown(index=False, floatfmt=f".{spec.md_decimals}f", missingval="")
    md = (f"# {title or spec.title}\n\n{body}\n\nSource: `{stem}.csv` (regenerated by "
          "`make reproduce`).\n").encode("utf-8")
    outcome, note = "written", {}
    if csv_path.exists() and config.get(REWRITE_ENV) != "1":
        before = csv_path.read_text(encoding="utf-8")
        if before == text and md_path.exists() and md_path.read_bytes() == md:
            outcome = "unchanged"
        elif not contract.made_here(out):
            moves = contract.table_moves(spec, before, text, file=csv_path.name)
            if moves and all(m.within for m in moves):
                outcome = "kept"
                note = {"cells": len(moves), "largest": max((m.moved for m in moves if m.moved is not None
                                                             and not math.isnan(m.moved)), default=0.0)}
    if outcome == "written":
        write_atomic(csv_path, text.encode("utf-8"))
        write_atomic(md_path, md)
    saved_by.log(csv_path, outcome, **note)
    return Saved(csv_path, outcome)


@dataclass(eq=False)
class Checked:
    """A compared table as :func:`check` saved it; a notebook shows its agreement sentence, then the cells outside."""

    stem: str
    compared: pd.DataFrame  # :func:`compare`'s comparison, as saved
    saved: Saved
    agreement: str  # :func:`agreement_text`
    outside: pd.DataFrame  # :func:`outside`

    def _repr_html_(self) -> str:  # text cells left-aligned (pandas' HTML right-aligns them); a fixed id: same bytes
        off, left = self.outside, [{"selector": s, "props": "text-align: left"} for s in ("td", "th")]
        text = {c: left for c in off.columns if not pd.api.types.is_numeric_dtype(off[c])}
        numbers = [c for c in off.columns if c not in text]
        styled = off.style.set_uuid(self.stem).set_table_styles(text).format("{:.6g}", subset=numbers, na_rep="")
        return f"<p>{html.escape(self.agreement)}</p>" + (styled.to_html() if len(off) else "")

    def __repr__(self) -> str:
        return self.agreement + (f"\n{self.outside!r}" if len(self.outside) else "")


def check(table: pd.DataFrame, stem: str, *, value: str = "value", paper: pd.DataFrame | None = None,
          then: Callable[[pd.DataFrame], pd.DataFrame] | None = None, directory: str | Path | None = None,
          include_unjudged: bool = False) -> Checked:
    """Compare with the paper, save, and say how well it agrees and which cells are outside (each compared table).

    Parameters
    ----------
    table : DataFrame
        The reproduced table, or a comparison already made (with ``within_tolerance``).
    stem : str
    value : str, default "value"
    paper : DataFrame, optional
    then : callable, optional
        Applied to the comparison before it is saved (a paper's added columns).
    directory : str or Path, optional
    include_unjudged : bool, default False

    Returns
    -------
    Checked
    """
    compared = table if "within_tolerance" in table else compare(table, stem, value=value, paper=paper)
    compared = then(compared) if then is not None else compared
    saved = save(compared, stem, directory=directory)
    return Checked(stem, compared, saved, agreement_text(compared, stem),
                   outside(compared, stem, include_unjudged=include_unjudged))


def fill_not_run(table: pd.DataFrame, computed: pd.DataFrame, *, keys: list[str]) -> pd.DataFrame:
    """Replace the rows of ``table`` by ``computed`` rows with the same keys (model runs arriving).

    Parameters
    ----------
    table : DataFrame
    computed : DataFrame
    keys : list of str
    """
    if computed.empty:
        return table
    done = set(map(tuple, computed[keys].itertuples(index=False)))
    kept = table[[tuple(k) not in done for k in table[keys].itertuples(index=False)]]
    return pd.concat([kept, computed], ignore_index=True)
