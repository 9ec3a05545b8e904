"""Canonical functional roles and information sources of VizWiz-LF (§4, Tables 7–8): moved to :mod:`vqalib.papers.vizwiz_lf.taxonomy` (issue 17); this name keeps working."""

from vqalib.papers.vizwiz_lf.taxonomy import (
    ROLES,
    INFO_SOURCES,
    ROLE_ALIASES,
    INFO_ALIASES,
    PAPER_ROLE_NAMES,
    PAPER_INFO_NAMES_TABLE3,
    SOURCES,
    QUESTION_TYPES,
    ANSWERABILITY,
    canonical_label,
    paper_role_name,
    paper_info_name,
)

__all__ = ["ROLES", "INFO_SOURCES", "ROLE_ALIASES", "INFO_ALIASES", "PAPER_ROLE_NAMES", "PAPER_INFO_NAMES_TABLE3", "SOURCES", "QUESTION_TYPES", "ANSWERABILITY", "canonical_label", "paper_role_name", "paper_info_name"]
