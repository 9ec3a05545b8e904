"""t intervals and significance marks the papers share: moved to :mod:`vqalib.core.inference` (issue 17); this name keeps working."""

from vqalib.core.inference import (
    THREE_LEVELS,
    TWO_LEVELS,
    star_mark,
    mean_ci,
)

__all__ = ["THREE_LEVELS", "TWO_LEVELS", "star_mark", "mean_ci"]
