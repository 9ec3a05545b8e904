"""Validation report: every quirk a loader meets (a dropped or repaired row) is counted and named, nothing silently."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import pandas as pd

COLUMNS = ["file", "check", "detail", "action", "count", "examples"]


@dataclass
class ValidationReport:
    """Counts of data quirks, keyed by (file, check, detail, action)."""

    counts: Counter = field(default_factory=Counter)
    examples: dict = field(default_factory=dict)
    max_examples: int = 5

    def add(self, *, file: str, check: str, detail: str, action: str, count: int = 1,
            example: str | None = None) -> None:
        """Count ``count`` occurrences of one quirk, keeping ``example`` while fewer than ``max_examples`` are kept.

        Parameters
        ----------
        file : str
        check : str
        detail : str
            What exactly was found.
        action : str
            What the loader did (e.g. dropped or repaired the row).
        count : int, default 1
        example : str, optional
            One occurrence to show (an id or a value).
        """
        key = (file, check, detail, action)
        self.counts[key] += count
        if example is not None:
            shown = self.examples.setdefault(key, [])
            if len(shown) < self.max_examples:
                shown.append(example)

    def extend(self, other: "ValidationReport") -> None:
        """Add every count and example of ``other`` (another loader's report) to this one (examples still capped).

        Parameters
        ----------
        other : ValidationReport
        """
        for key, n in other.counts.items():
            self.counts[key] += n
            shown = self.examples.setdefault(key, [])
            for ex in other.examples.get(key, []):
                if len(shown) < self.max_examples:
                    shown.append(ex)

    def total(self, *, check: str, file: str | None = None) -> int:
        """How many times ``check`` was counted (0 when never), over every detail and action.

        Parameters
        ----------
        check : str
        file : str, optional
            Count only this file's quirks; default: every file's.
        """
        return sum(n for (f, c, _, _), n in self.counts.items()
                   if c == check and (file is None or f == file))

    def to_frame(self) -> pd.DataFrame:
        """One row per (file, check, detail, action), sorted, with up to five examples."""
        rows = [
            {"file": f, "check": c, "detail": d, "action": a, "count": n,
             "examples": "; ".join(self.examples.get((f, c, d, a), []))}
            for (f, c, d, a), n in self.counts.items()
        ]
        frame = pd.DataFrame(rows, columns=COLUMNS)
        return frame.sort_values(["file", "check", "detail", "action"], kind="stable").reset_index(drop=True)
