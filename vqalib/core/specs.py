"""What a registry entry is (:mod:`vqalib.core.registry`): the relations of a reproduced cell to the paper's,
tolerances in units of the paper's last printed digit, model-derived columns, and :class:`Spec`."""

from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass, field

RELATIONS = ("same", "analogous", "fitted", "self-input")
WIDEST_UNITS = 2  # the widest tolerance, in units of the paper's last printed digit, that needs no reason
FOLLOWS = "follows"  # a flag or rounded value that may change only where a model-derived value of its row moved


@dataclass(frozen=True)
class Tolerance:
    """How far a reproduced cell may be from the paper's: ``units`` of the column's last printed digit (per value of
    ``column`` when ``by`` is given; ``decimals`` fixes the digit). Wider than :data:`WIDEST_UNITS` needs a ``why``."""

    units: float = 0.0
    column: str | None = None
    by: tuple[tuple[str, float], ...] = ()
    decimals: int | None = None
    decimals_by: tuple[tuple[str, int], ...] = ()  # per value of ``column``
    why: str = ""

    def __post_init__(self):
        widest = max([self.units, *dict(self.by).values()])
        if widest > WIDEST_UNITS and not self.why:
            raise ValueError(f"a tolerance of ±{widest:g} in the last printed digit is wider than ±{WIDEST_UNITS}; "
                             "say why in Tolerance(why=...)")

    def units_for(self, value: object) -> float:
        """The tolerance, in units of the last printed digit, of a cell whose row has ``value`` in ``column``."""
        return dict(self.by).get(value, self.units) if self.column else self.units

    def decimals_for(self, value: object, printed: int) -> int:
        """The decimals a cell is compared at: ``decimals_by[value]``, else ``decimals``, else ``printed`` (the
        paper value's)."""
        if self.column and value in dict(self.decimals_by):
            return dict(self.decimals_by)[value]
        return self.decimals if self.decimals is not None else printed

    def describe(self) -> str:
        """The rule in words: "±2 in the paper's last printed digit (two decimals: ±0.02)"."""
        def one(units: float, decimals: int | None) -> str:
            text = "equal at the paper's printed precision" if units == 0 else f"±{units:g} in the paper's last printed digit"
            if decimals is not None and units:
                text += f" ({decimals} decimals: ±{units * 10.0 ** -decimals:g})"
            return text
        parts = [one(self.units, self.decimals)]
        if self.column:
            values = dict.fromkeys([k for k, _ in self.by] + [k for k, _ in self.decimals_by])
            parts += [f"{k}: {one(self.units_for(k), dict(self.decimals_by).get(k, self.decimals))}" for k in values]
        if self.why:
            parts.append(f"wider than ±{WIDEST_UNITS} because {self.why}")
        return "; ".join(parts)


@dataclass(frozen=True)
class Relation:
    """The relation of each cell to the paper: ``default``, by the value (or shell pattern) of ``column``, or from a
    column the builder fills (``from_column``: ``kind: reason``); a reason is shown for each non-``same`` kind."""

    default: str = "same"
    column: str | None = None
    values: tuple[tuple[str, str], ...] = ()
    reasons: tuple[tuple[str, str], ...] = ()
    from_column: str | None = None

    def __post_init__(self):
        for kind in [self.default, *dict(self.values).values(), *dict(self.reasons)]:
            if kind not in RELATIONS:
                raise ValueError(f"relation {kind!r} is not one of {RELATIONS}")

    def of(self, row: dict) -> str:
        """The relation (one of :data:`RELATIONS`) of one row's cells to the paper."""
        if self.from_column:
            value = row.get(self.from_column)
            text = self.default if is_nan(value) or value == "" else str(value)  # a paper-only row has none
            kind = text.split(":")[0].strip()
            if kind not in RELATIONS:
                raise ValueError(f"relation {text!r} (column {self.from_column!r}) does not start with one of {RELATIONS}")
            return kind
        if self.column is not None:
            value = row.get(self.column)
            for pattern, kind in self.values:
                if value == pattern or (isinstance(value, str) and fnmatch.fnmatchcase(value, pattern)):
                    return kind
        return self.default

    def reason(self, kind: str) -> str:
        """Why cells of relation ``kind`` are not ``same`` ("" when none is declared)."""
        return dict(self.reasons).get(kind, "")


@dataclass(frozen=True)
class ModelDerived:
    """Columns computed from model outputs and the drift each may show across machines: an absolute tolerance, or
    :data:`FOLLOWS`; ``where`` restricts it to rows whose ``column`` value is in the list; ``also`` holds the rules of
    other rows (another model, another scale), each with its own ``where``."""

    columns: tuple[tuple[str, float | str], ...]
    why: str
    where: tuple[str, tuple[str, ...]] | None = None
    also: tuple[ModelDerived, ...] = ()

    def for_row(self, row: dict) -> ModelDerived | None:
        """The rule of ``row``: this one where it applies, else the first of ``also`` that does, else None."""
        return next((rule for rule in (self, *self.also) if rule.applies(row)), None)

    def tolerance(self, column: str) -> float | str | None:
        """The drift allowed in ``column``: a tolerance, :data:`FOLLOWS`, or None when not model-derived."""
        return dict(self.columns).get(column)

    def applies(self, row: dict) -> bool:
        """Whether the model-derived columns are model-derived in ``row`` (always without ``where``)."""
        if self.where is None:
            return True
        column, values = self.where
        return str(row.get(column)) in values


@dataclass(frozen=True)
class Repeats:
    """The cells a compared table shares with an earlier one, ``table`` (totals count each once); ``rename`` maps
    this table's leading key values to the other table's."""

    table: str
    rename: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = ()

    def key(self, values: tuple[str, ...]) -> tuple[str, ...]:
        """The other table's key values for a cell of this one (``values`` in the order of the cell keys)."""
        for own, other in self.rename:
            if values[:len(own)] == own:
                return other + values[len(own):]
        return values


@dataclass(frozen=True)
class Spec:
    """One reproduced table or figure: a registry entry."""

    stem: str
    notebook: str
    paper: str  # the paper's name ([paper].name of its declarations file)
    reproduces: str  # the paper's name for it ("Table 2", "Fig. 5"), or "" for an extension
    title: str
    builder: str
    kind: str = "table"  # "table" or "figure"
    paper_table: str | None = None
    value: str | tuple[str, ...] | None = None
    keys: tuple[str, ...] = ()
    printed_column: tuple[str, ...] = ()  # the keys naming one printed column of the paper's layout (its decimals)
    cells: tuple[str, ...] = ()  # the columns naming a cell in known differences and messages; default ``keys``
    relation: Relation = field(default_factory=Relation)
    tolerance: Tolerance | None = None
    known: str | None = None
    model_derived: ModelDerived | None = None
    data: tuple[str, ...] = ()  # a figure: the tables it is drawn from
    decimals: int = 4  # CSV precision
    md_decimals: int = 2  # Markdown precision
    repeats: Repeats | None = None  # cells shared with an earlier compared table

    @property
    def compared(self) -> bool:
        return self.paper_table is not None

    @property
    def cell_keys(self) -> tuple[str, ...]:
        return self.cells or self.keys


def is_nan(value) -> bool:
    """Whether ``value`` is missing: None or a float NaN (not ``pd.NA`` or a float32 NaN)."""
    return value is None or (isinstance(value, float) and math.isnan(value))
