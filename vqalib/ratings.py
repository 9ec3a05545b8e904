"""Per-rating data of the VizWiz-LF human evaluation: schema, loader, labels (§6, Fig. 2; Table 18): moved to :mod:`vqalib.papers.vizwiz_lf.ratings` (issue 17); this name keeps working."""

from vqalib.papers.vizwiz_lf.ratings import (
    GROUPS,
    GROUP_NAMES,
    SOURCES,
    CATEGORIES,
    RATING_COLUMNS,
    COLUMNS,
    CORRECTNESS_GROUP,
    SIMULATED,
    MAX_LISTED_PROBLEMS,
    RELEASE,
    RatingsFileError,
    _format,
    load_ratings,
    _undecodable_cells,
    check_ratings,
    _design_problems,
    per_answer_correctness,
    is_simulated,
    Study,
    CORRECTNESS_ENABLE,
    correctness_table,
)

__all__ = ["GROUPS", "GROUP_NAMES", "SOURCES", "CATEGORIES", "RATING_COLUMNS", "COLUMNS", "CORRECTNESS_GROUP", "SIMULATED", "MAX_LISTED_PROBLEMS", "RELEASE", "RatingsFileError", "_format", "load_ratings", "_undecodable_cells", "check_ratings", "_design_problems", "per_answer_correctness", "is_simulated", "Study", "CORRECTNESS_ENABLE", "correctness_table"]
