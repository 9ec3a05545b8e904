"""The table registry: one declarative entry per reproduced table or figure (ARCHITECTURE.md, "The table registry").

Each :class:`Spec` says what a file in ``figures/`` is and how it is judged:

- ``builder``: the ``vqalib`` function that computes it; ``notebook``: where it is made and narrated;
- ``paper_table``, ``value``, ``keys``: its counterpart in ``data/paper/`` and how cells are matched;
- ``relation`` of each cell to the paper: ``same`` (the same quantity), ``analogous`` (a related
  quantity by another method or on other data), ``fitted`` (a choice was tuned towards the paper,
  e.g. the Lex-Overlap definition), ``self-input`` (recomputed from the paper's own numbers).
  Only ``same`` cells are judged ``within_tolerance``, so only they count as reproduced;
- ``tolerance``: in units of the paper's last printed digit (1 unit of "0.35" is 0.01);
- ``known``: the id of its rows in ``data/paper/known_differences.csv``;
- ``model_derived``: the columns whose values come from a model (embeddings, classifiers, BERTScore,
  NER) and the drift allowed across machines. The package makes these values identical on every
  CPU and thread count it was checked on (float64 and rounding, :mod:`vqalib.core.encoders`); the
  declared tolerance is the contract for machines it was not, and the tiered check
  (:mod:`vqalib.core.contract`) compares every other column exactly.

Notebooks compare, save and narrate through :mod:`vqalib.core.report` with a stem from here; tests iterate
over :data:`TABLES`; the README status table is generated from it (``vqalib readme``).
No tolerance is written anywhere else.

The entries are data, one ``declarations.toml`` per paper folder read by :mod:`vqalib.core.declarations` (core
imports no paper code); the classes are in :mod:`vqalib.core.specs`; this module joins them and looks entries up.
"""

from __future__ import annotations

import fnmatch
import math

from vqalib.core.declarations import entries
from vqalib.core.specs import FOLLOWS, Spec, Tolerance

TABLES: dict[str, Spec] = {s.stem: s for s in entries() if s.kind == "table"}
FIGURES: dict[str, Spec] = {s.stem: s for s in entries() if s.kind == "figure"}


def _lookup(entries: dict[str, Spec], stem: str, what: str) -> Spec:
    if stem in entries:
        return entries[stem]
    for pattern, spec in entries.items():
        if any(ch in pattern for ch in "*?[") and fnmatch.fnmatchcase(stem, pattern):
            return spec
    raise KeyError(f"{what} {stem!r} is not in vqalib.core.registry; every file in figures/ needs an entry "
                   "(builder, relation, tolerance, model-derived columns)")


def table(stem: str) -> Spec:
    """The registry entry of the table saved as ``figures/<stem>.csv``.

    Parameters
    ----------
    stem : str
        The file name without suffix; an entry whose stem is a shell pattern (``*``, ``?``, ``[``) matches too.

    Returns
    -------
    Spec
        The entry; a stem with none is a KeyError.
    """
    return _lookup(TABLES, stem, "table")


def figure(stem: str) -> Spec:
    """The registry entry of the figure saved as ``figures/<stem>.png``.

    Parameters
    ----------
    stem : str
        The file name without suffix; an entry whose stem is a shell pattern (``*``, ``?``, ``[``) matches too.

    Returns
    -------
    Spec
        The entry; a stem with none is a KeyError.
    """
    return _lookup(FIGURES, stem, "figure")


def spec_for_file(name: str) -> Spec:
    """The entry a file of ``figures/`` belongs to (``x.csv``, ``x.md``: table; ``x.png``, ``.pdf``,
    ``.alt.txt``: figure).

    Parameters
    ----------
    name : str
        A file name in ``figures/`` (no folder).

    Returns
    -------
    Spec
        Its entry; another suffix, or a stem without an entry, is a KeyError.
    """
    for suffix, find in ((".alt.txt", figure), (".png", figure), (".pdf", figure), (".csv", table), (".md", table)):
        if name.endswith(suffix):
            return find(name[: -len(suffix)])
    raise KeyError(f"{name}: not a table or figure file")


def tolerance_rules() -> list[dict]:
    """Every declared rule, one row per entry (provenance, README)."""
    rows = []
    for spec in entries():
        if spec.kind != "table":
            continue
        md = spec.model_derived
        rows.append({"stem": spec.stem, "notebook": spec.notebook, "reproduces": f"{spec.paper} {spec.reproduces}".strip(),
                     "paper_table": spec.paper_table or "",
                     "tolerance": spec.tolerance.describe() if spec.tolerance else "",
                     "relation": spec.relation.default if not spec.relation.from_column else f"from column {spec.relation.from_column}",
                     "relation_overrides": "; ".join(f"{k} -> {v}" for k, v in spec.relation.values),
                     "model_derived": "" if md is None else ", ".join(
                         f"{c} ({'follows' if t == FOLLOWS else f'±{t:g}'})" for c, t in md.columns)
                     + ("" if md is None or md.where is None else f" where {md.where[0]} in {list(md.where[1])}"),
                     "model_derived_why": "" if md is None else md.why})
    return rows


def absolute_tolerance(spec: Spec, row: dict, printed_decimals: int) -> tuple[float, int]:
    """(absolute tolerance, decimals compared) of one cell of ``spec``'s comparison.

    Parameters
    ----------
    spec : Spec
        The table's entry; without a ``tolerance`` the default (0 units) applies.
    row : dict
        The cell's row, read for the tolerance's ``column`` when it has one.
    printed_decimals : int
        Decimals the paper printed for this cell, used unless the tolerance fixes ``decimals``.

    Returns
    -------
    (float, int)
        Units times 10 to the minus decimals, and the decimals.
    """
    rule = spec.tolerance or Tolerance()
    key = row.get(rule.column) if rule.column else None
    decimals = rule.decimals_for(key, printed_decimals)
    return rule.units_for(key) * 10.0 ** (-decimals), decimals


def band(stem: str, *, decimals: int) -> float:
    """The registry tolerance of ``stem`` in the units of the data, for cells printed with ``decimals``
    (the band drawn around the diagonal of an agreement plot).

    Parameters
    ----------
    stem : str
    decimals : int
        Used unless the entry's tolerance fixes its own decimals.

    Returns
    -------
    float
    """
    rule = table(stem).tolerance or Tolerance()
    return rule.units * 10.0 ** (-rule.decimals_for(None, decimals))


def cell_rules(spec: Spec, rows) -> list[tuple[float, int]]:
    """(absolute tolerance, decimals compared) of each row of a paper table under ``spec``'s rule: a value with a
    dropped trailing zero ("0.2" in a two-decimal column) is judged at the decimals of its printed column
    (``spec.printed_column``), a row without printed decimals at 4.

    Parameters
    ----------
    spec : Spec
        The table's entry.
    rows : pandas.DataFrame
        Rows with ``paper_decimals`` and the printed-column keys (:func:`vqalib.core.report.load_paper_table`).

    Returns
    -------
    list of (float, int)
        One :func:`absolute_tolerance` per row, in order.
    """
    decimals = rows["paper_decimals"]
    if spec.printed_column:
        decimals = rows.groupby(list(spec.printed_column), dropna=False, sort=False)["paper_decimals"].transform("max")
    return [absolute_tolerance(spec, row, 4 if d is None or math.isnan(d) else int(d))
            for row, d in zip(rows.to_dict("records"), decimals)]
