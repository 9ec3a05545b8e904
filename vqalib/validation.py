"""Validation report: every quirk a loader meets is counted here, nothing silently: moved to :mod:`vqalib.core.validation` (issue 17); this name keeps working."""

from vqalib.core.validation import (
    COLUMNS,
    ValidationReport,
)

__all__ = ["COLUMNS", "ValidationReport"]
