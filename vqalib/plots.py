"""Figures of the compendium, as matplotlib Figures (saved by :mod:`vqalib.report`).

A facade: the figures live in :mod:`vqalib.core.plots` (issue 17), one concept per module —
:mod:`~vqalib.core.plots.style` (Okabe–Ito palette, :func:`use_style`, shared bar and legend
pieces), :mod:`~vqalib.core.plots.contrast` (WCAG 2.x checks), :mod:`~vqalib.core.plots.axes`
(robust axes), and the figure functions of :mod:`~vqalib.core.plots.vizwiz_lf` (notebooks 02-05),
:mod:`~vqalib.core.plots.afgv` (notebook 06) and :mod:`~vqalib.core.plots.commvqa` (notebooks 07, 08).
Every name that existing code reads as ``plots.<name>`` is re-exported here unchanged; new code
may import from the defining module. To patch an internal in a test, patch the defining module.
"""

from __future__ import annotations

from vqalib.core.plots.afgv import tier_distribution
from vqalib.core.plots.axes import AXIS_PAD, FAR_OUT, Clip, clipped
from vqalib.core.plots.commvqa import (accuracy_heatmap, description_similarity_bars, protocol_comparison,
                                       rates_by_context)
from vqalib.core.plots.contrast import (MIN_CONTRAST, contrast_problems, contrast_ratio, relative_luminance,
                                        text_colour_on)
from vqalib.core.plots.style import (BANNER_FACE, BAR_LEGEND, CVD_MIN_DELTA_E, CVD_TYPES, HATCHES, MARKERS, PALETTE,
                                     SEQUENTIAL_CMAP, colours, use_style)
from vqalib.core.plots.vizwiz_lf import heatmap, human_eval_bars, paper_agreement, reference_shift, stacked_shares

__all__ = [
    # style
    "PALETTE", "SEQUENTIAL_CMAP", "CVD_TYPES", "CVD_MIN_DELTA_E", "HATCHES", "MARKERS", "BANNER_FACE", "BAR_LEGEND",
    "use_style", "colours",
    # contrast (WCAG 2.x)
    "MIN_CONTRAST", "relative_luminance", "contrast_ratio", "text_colour_on", "contrast_problems",
    # robust axes
    "FAR_OUT", "AXIS_PAD", "Clip", "clipped",
    # VizWiz-LF (notebooks 02-05)
    "stacked_shares", "heatmap", "paper_agreement", "reference_shift", "human_eval_bars",
    # AFGV (notebook 06)
    "tier_distribution",
    # CommVQA (notebooks 07, 08)
    "protocol_comparison", "accuracy_heatmap", "rates_by_context", "description_similarity_bars",
]
