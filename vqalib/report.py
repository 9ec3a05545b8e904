"""The one place that writes tables and figures, and sets paper values beside ours.

DESIGN.md "Report": a reproduced paper table is saved as
``figures/<paper>_<table-id>.csv`` (+ ``.md``), keyed like its counterpart in
``data/paper/`` (copied from ``shared/paper_tables/``), with the columns ``reproduced``,
``paper``, ``diff`` and ``within_tolerance`` added. Figures are PNG + PDF in one
colour-blind-safe style, each with an alt text file beside it.
"""

from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless: figures are written to files, notebooks show them inline
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from vqalib.datasets import project_root  # noqa: E402

PALETTE = "colorblind"  # seaborn's palette for deuteranopia/protanopia-safe categorical colours
SEQUENTIAL_CMAP = "viridis"  # perceptually uniform and colour-blind safe


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


def compare_with_paper(reproduced: pd.DataFrame, paper: pd.DataFrame, *, keys: list[str],
                       value: str, tolerance: float | dict[str, float],
                       tolerance_column: str | None = None) -> pd.DataFrame:
    """Set each reproduced cell beside the paper's (every reproduced table).

    ``reproduced`` holds ``keys`` and ``value``; ``paper`` comes from
    :func:`load_paper_table`. The result has the paper's key columns first, then
    ``reproduced`` (full precision), ``paper``, ``diff`` = reproduced rounded to the
    paper's printed precision minus paper, and ``within_tolerance`` = |diff| <= tolerance
    (empty where either side is missing). Cells on one side only are kept, never dropped.
    ``tolerance`` may map the values of ``tolerance_column`` to tolerances (Table 5: 0.02
    for rates, 2 for abs-% in percent).
    """
    left = reproduced.rename(columns={value: "reproduced"})
    right = paper.rename(columns={c: f"paper_{c}" for c in paper.columns if c in left.columns and c not in keys})
    # outer merges sort their keys: keep the paper's row order, then extra reproduced rows
    merged = (right.assign(_pos=range(len(right)))
              .merge(left.assign(_pos_r=range(len(left))), on=keys, how="outer", indicator=True))
    merged = merged.sort_values(["_pos", "_pos_r"], na_position="last", kind="stable").reset_index(drop=True)
    merged = merged.drop(columns=["_pos", "_pos_r"])
    decimals = merged["paper_decimals"].fillna(4).astype(int)
    rounded = [round(r, d) if pd.notna(r) else math.nan for r, d in zip(merged["reproduced"], decimals)]
    merged["diff"] = pd.Series(rounded, index=merged.index) - merged["paper"]
    both = merged["reproduced"].notna() & merged["paper"].notna()
    merged["within_tolerance"] = pd.Series(pd.NA, index=merged.index, dtype="boolean")
    if isinstance(tolerance, dict):
        tol = merged[tolerance_column].map(tolerance)
        if tol[both].isna().any():
            raise KeyError(f"no tolerance for {sorted(set(merged.loc[both & tol.isna(), tolerance_column]))}")
    else:
        tol = pd.Series(float(tolerance), index=merged.index)
    merged.loc[both, "within_tolerance"] = merged.loc[both, "diff"].abs() <= tol[both] + 1e-9
    merged = merged.drop(columns=["_merge", "paper_decimals"])
    first = [c for c in right.columns if c not in ("paper", "paper_decimals")]
    rest = [c for c in merged.columns if c not in first and c not in ("reproduced", "paper", "diff", "within_tolerance")]
    return merged[first + rest + ["reproduced", "paper", "diff", "within_tolerance"]]


def outside_tolerance(comparison: pd.DataFrame, *, keys: list[str], table: str,
                      known: pd.DataFrame | None = None) -> pd.DataFrame:
    """Cells whose reproduced value is off the paper's, with the known reason if any.

    ``known`` is ``data/paper/known_differences.csv`` (columns ``table``, ``cell``,
    ``explanation``); ``cell`` is the key values joined by `` | ``, or a shell-style
    pattern (``* | BERTScore | * | *``) that explains every cell it matches; exact cells win.
    """
    off = comparison[comparison["within_tolerance"].eq(False)].copy()
    off["cell"] = [" | ".join(map(str, row)) for row in off[keys].itertuples(index=False)]
    if known is None:
        known = load_known_differences()
    rules = known[known["table"] == table]
    exact = rules.set_index("cell")["explanation"]
    patterns = [(c, e) for c, e in zip(rules["cell"], rules["explanation"]) if any(ch in c for ch in "*?[")]

    def explain(cell: str) -> str:
        if cell in exact.index:
            return exact[cell]
        return next((e for pattern, e in patterns if fnmatch.fnmatchcase(cell, pattern)), "not explained yet")

    off["explanation"] = off["cell"].map(explain)
    return off[["cell", "reproduced", "paper", "diff", "explanation"]].reset_index(drop=True)


def load_known_differences(directory: str | Path | None = None) -> pd.DataFrame:
    """``data/paper/known_differences.csv``: why a reproduced cell differs from the paper."""
    return pd.read_csv(Path(directory or paper_dir()) / "known_differences.csv", dtype=str)


def agreement_summary(comparison: pd.DataFrame) -> dict:
    """Counts behind "N of M cells within tolerance"."""
    compared = comparison["within_tolerance"].notna()
    n_ok = int(comparison["within_tolerance"].eq(True).sum())
    return {"compared": int(compared.sum()), "within": n_ok, "outside": int(compared.sum()) - n_ok,
            "only_reproduced": int((comparison["paper"].isna() & comparison["reproduced"].notna()).sum()),
            "only_paper": int((comparison["reproduced"].isna() & comparison["paper"].notna()).sum())}


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


def save_table(frame: pd.DataFrame, name: str, *, title: str, directory: str | Path | None = None,
               decimals: int = 4, md_decimals: int = 2) -> Path:
    """Write ``figures/<name>.csv`` and ``.md`` deterministically; return the CSV path.

    Floats are written with a fixed number of decimals and ``\\n`` line endings so two
    runs give byte-identical files.
    """
    out = figures_dir(directory)
    csv_path = out / f"{name}.csv"
    frame.to_csv(csv_path, index=False, float_format=f"%.{decimals}f", lineterminator="\n")
    body = frame.to_markdown(index=False, floatfmt=f".{md_decimals}f", missingval="")
    (out / f"{name}.md").write_text(f"# {title}\n\n{body}\n\nSource: `{name}.csv` (regenerated by `make reproduce`).\n",
                                    encoding="utf-8")
    return csv_path


def use_style() -> None:
    """The compendium's one figure style (seaborn whitegrid, colour-blind palette)."""
    sns.set_theme(context="notebook", style="whitegrid", palette=PALETTE)
    plt.rcParams.update({"figure.dpi": 100, "savefig.dpi": 150, "savefig.bbox": "tight",
                         "pdf.fonttype": 42, "svg.hashsalt": "vqalib"})


@dataclass
class SavedFigure:
    """What :func:`save_figure` wrote; shows its alt text when it is a cell's last value."""

    png: Path
    pdf: Path
    alt_path: Path
    alt_text: str

    def _repr_markdown_(self) -> str:
        return f"**Alt text** (`{self.alt_path.name}`): {self.alt_text}"


def save_figure(fig: plt.Figure, name: str, *, alt_text: str,
                directory: str | Path | None = None) -> SavedFigure:
    """Write ``figures/<name>.png``, ``.pdf`` and ``.alt.txt`` (alt text for screen readers)."""
    if not alt_text or len(alt_text.split()) < 10:
        raise ValueError(f"figure {name!r}: give a one-paragraph alt text describing what it shows")
    out = figures_dir(directory)
    png, pdf, alt = out / f"{name}.png", out / f"{name}.pdf", out / f"{name}.alt.txt"
    fig.savefig(png, metadata={"Software": None})
    fig.savefig(pdf, metadata={"CreationDate": None, "Creator": None, "Producer": None})
    alt.write_text(alt_text.strip() + "\n", encoding="utf-8")
    return SavedFigure(png=png, pdf=pdf, alt_path=alt, alt_text=alt_text.strip())


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
