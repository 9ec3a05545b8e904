"""The table registry: one declarative entry (:class:`Spec`) per reproduced table or figure, read from each paper's
``declarations.toml`` (the only place tolerances are written). A cell is ``same``, ``analogous`` (other method or
data), ``fitted`` (tuned towards the paper) or ``self-input`` (from the paper's numbers); only ``same`` counts."""

from __future__ import annotations

import dataclasses
import fnmatch
import math
import re

from vqalib.core.declarations import entries
from vqalib.core.metrics.catalog import metric
from vqalib.core.specs import FOLLOWS, Spec, Tolerance

METRIC_NAME = re.compile(r"\{metric:(\w+)\}")  # in a declared text: that metric variant's name in the catalog


def _named(spec: Spec) -> Spec:
    """``spec`` with each ``{metric:<id>}`` of its text fields replaced by the catalog's name of that variant."""
    texts = {f.name: METRIC_NAME.sub(lambda m: metric(m.group(1)).label or m.group(1), value)
             for f in dataclasses.fields(spec)
             if isinstance(value := getattr(spec, f.name), str) and "{metric:" in value}
    return dataclasses.replace(spec, **texts) if texts else spec


TABLES: dict[str, Spec] = {s.stem: _named(s) for s in entries() if s.kind == "table"}
FIGURES: dict[str, Spec] = {s.stem: _named(s) for s in entries() if s.kind == "figure"}


def _lookup(entries: dict[str, Spec], stem: str, what: str) -> Spec:
    if stem in entries:
        return entries[stem]
    for pattern, spec in entries.items():
        if any(ch in pattern for ch in "*?[") and fnmatch.fnmatchcase(stem, pattern):
            return spec
    raise KeyError(f"{what} {stem!r} is not in vqalib.core.registry; every file in figures/ needs an entry "
                   "(builder, relation, tolerance, model-derived columns)")


def table(stem: str) -> Spec:
    """The registry entry of the table saved as ``figures/<stem>.csv`` (a shell-pattern stem matches; else KeyError).

    Parameters
    ----------
    stem : str
    """
    return _lookup(TABLES, stem, "table")


def figure(stem: str) -> Spec:
    """The registry entry of the figure saved as ``figures/<stem>.png`` (a shell-pattern stem matches; else KeyError).

    Parameters
    ----------
    stem : str
    """
    return _lookup(FIGURES, stem, "figure")


def spec_for_file(name: str) -> Spec:
    """The entry a ``figures/`` file ``name`` belongs to (.csv, .md: table; .png, .pdf, .alt.txt: figure)."""
    for suffix, find in ((".alt.txt", figure), (".png", figure), (".pdf", figure), (".csv", table), (".md", table)):
        if name.endswith(suffix):
            return find(name[: -len(suffix)])
    raise KeyError(f"{name}: not a table or figure file")


def tolerance_rules() -> list[dict]:
    """Every declared rule, one row per table entry (provenance, README)."""
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
                     "model_derived": "" if md is None else "; ".join(_derived(m) for m in (md, *md.also)),
                     "model_derived_why": "" if md is None else " ".join(dict.fromkeys(m.why for m in (md, *md.also)))})
    return rows


def _derived(md) -> str:
    """One model-derived rule as the rules table words it."""
    return (", ".join(f"{c} ({'follows' if t == FOLLOWS else f'±{t:g}'})" for c, t in md.columns)
            + ("" if md.where is None else f" where {md.where[0]} in {list(md.where[1])}"))


def absolute_tolerance(spec: Spec, row: dict, printed_decimals: int) -> tuple[float, int]:
    """(absolute tolerance, decimals compared) of one cell (``row``) of ``spec``; ``printed_decimals`` unless the
    tolerance fixes ``decimals``."""
    rule = spec.tolerance or Tolerance()
    key = row.get(rule.column) if rule.column else None
    decimals = rule.decimals_for(key, printed_decimals)
    return rule.units_for(key) * 10.0 ** (-decimals), decimals


def band(stem: str, *, decimals: int) -> float:
    """The registry tolerance of ``stem`` in data units (the band drawn around an agreement plot's diagonal).

    Parameters
    ----------
    stem : str
    decimals : int
        Used unless the entry's tolerance fixes its own decimals.
    """
    rule = table(stem).tolerance or Tolerance()
    return rule.units * 10.0 ** (-rule.decimals_for(None, decimals))


def cell_rules(spec: Spec, rows) -> list[tuple[float, int]]:
    """(absolute tolerance, decimals compared) of each row of a paper table, judged at its printed column's decimals
    (a dropped trailing zero does not narrow it; 4 when none).

    Parameters
    ----------
    spec : Spec
    rows : pandas.DataFrame
        Rows with ``paper_decimals`` and the printed-column keys.
    """
    decimals = rows["paper_decimals"]
    if spec.printed_column:
        decimals = rows.groupby(list(spec.printed_column), dropna=False, sort=False)["paper_decimals"].transform("max")
    return [absolute_tolerance(spec, row, 4 if d is None or math.isnan(d) else int(d))
            for row, d in zip(rows.to_dict("records"), decimals)]
