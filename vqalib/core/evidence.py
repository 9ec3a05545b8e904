"""Evidence for a known difference: the committed table cells that demonstrate its cause. An ``evidence`` cell is
:data:`UNEXPLAINED` or references joined by `` ; ``, each ``<figures/ or data/paper/ file>.csv | col=value & ... |
column`` (a value may be a shell pattern, an empty one matches a blank cell); a reference resolves when its filter
selects at least one row and the column has a value in each."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

UNEXPLAINED = "unexplained"
ALLOWED_FOLDERS = ("figures/", "data/paper/")


@dataclass(frozen=True)
class Reference:
    """One cited cell range: ``path`` (relative to the project), ``where`` (column, value) pairs, ``column``."""

    path: str
    where: tuple[tuple[str, str], ...]
    column: str

    def __str__(self) -> str:
        return f"{self.path} | {' & '.join(f'{k}={v}' for k, v in self.where)} | {self.column}"


def parse(text: str) -> list[Reference]:
    """The references of one ``evidence`` cell (none for :data:`UNEXPLAINED`); a malformed one is a ValueError.

    Parameters
    ----------
    text : str
        The cell, references separated by `` ; ``.
    """
    text = (text or "").strip()
    if text == UNEXPLAINED:
        return []
    out = []
    for part in (p.strip() for p in text.split(" ; ")):
        pieces = [p.strip() for p in part.split(" | ")]
        if len(pieces) != 3 or not pieces[0].startswith(ALLOWED_FOLDERS) or not pieces[0].endswith(".csv"):
            raise ValueError(f"evidence {part!r}: expected '<figures/ or data/paper/ file>.csv | col=value & ... | column'")
        where = []
        for clause in (c.strip() for c in pieces[1].split(" & ") if c.strip()):
            if "=" not in clause:
                raise ValueError(f"evidence {part!r}: filter {clause!r} is not column=value")
            key, value = clause.split("=", 1)
            where.append((key.strip(), value.strip()))
        out.append(Reference(pieces[0], tuple(where), pieces[2]))
    return out


def _matches(values: pd.Series, pattern: str) -> pd.Series:
    text = values.fillna("").astype(str)
    if pattern == "":
        return text.eq("")
    if any(ch in pattern for ch in "*?["):
        return text.map(lambda v: fnmatch.fnmatchcase(v, pattern))
    return text.eq(pattern)


def resolve(reference: Reference, *, root: Path, table: pd.DataFrame | None = None) -> pd.DataFrame:
    """The rows a reference cites (its filter's columns and the cited column), else a ValueError saying what is wrong.

    Parameters
    ----------
    reference : Reference
    root : Path
        The project folder the path is relative to.
    table : pandas.DataFrame, optional
        The file already read (all columns as text, blanks as "").
    """
    if table is None:
        path = Path(root) / reference.path
        if not path.is_file():
            raise ValueError(f"evidence {reference}: no file {reference.path}")
        table = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [c for c, _ in reference.where if c not in table.columns]
    if reference.column not in table.columns:
        missing.append(reference.column)
    if missing:
        raise ValueError(f"evidence {reference}: {reference.path} has no column(s) {missing}")
    keep = pd.Series(True, index=table.index)
    for column, value in reference.where:
        keep &= _matches(table[column], value)
    rows = table[keep]
    if rows.empty:
        raise ValueError(f"evidence {reference}: no row of {reference.path} matches")
    if rows[reference.column].str.strip().eq("").any():
        raise ValueError(f"evidence {reference}: column {reference.column!r} is blank in a selected row")
    return rows[[c for c, _ in reference.where] + [reference.column]]


def check(known: pd.DataFrame, *, root: Path) -> pd.DataFrame:
    """Every evidence reference of the ``known`` differences (``table``, ``cell``, ``evidence``) resolved against the
    project folder ``root``: one row (``table``, ``cell``, ``problem``) per problem."""
    problems = []
    for row in known.to_dict("records"):
        text = str(row.get("evidence") or "").strip()
        if not text:
            problems.append({**_cell(row), "problem": "no evidence (cite a cell, or write 'unexplained')"})
            continue
        try:
            for reference in parse(text):
                resolve(reference, root=root)
        except ValueError as error:
            problems.append({**_cell(row), "problem": str(error)})
    return pd.DataFrame(problems, columns=["table", "cell", "problem"])


def _cell(row: dict) -> dict:
    return {"table": row.get("table"), "cell": row.get("cell")}
