"""A SIMULATED human evaluation with the design of VizWiz-LF §6 (Fig. 2), to demonstrate the analysis: moved to :mod:`vqalib.papers.vizwiz_lf.simulation` (issue 17); this name keeps working."""

from vqalib.papers.vizwiz_lf.simulation import (
    PARTICIPANT_PREFIX,
    DEFAULT_LOCATION,
    DEFAULT_THRESHOLDS,
    _DEFAULT_EFFECTS,
    default_effects,
    design_questions,
    simulate_ratings,
    simulated_study,
    rejection_rates,
    scaled_effects,
    effects_wide,
    design_rejection_rates,
    rejection_rate_summary,
    rejection_rates_wide,
)

__all__ = ["PARTICIPANT_PREFIX", "DEFAULT_LOCATION", "DEFAULT_THRESHOLDS", "_DEFAULT_EFFECTS", "default_effects", "design_questions", "simulate_ratings", "simulated_study", "rejection_rates", "scaled_effects", "effects_wide", "design_rejection_rates", "rejection_rate_summary", "rejection_rates_wide"]
