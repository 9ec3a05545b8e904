"""Functional roles and information sources of long-form answers (VizWiz-LF §4.1, A.2.3): moved to :mod:`vqalib.papers.vizwiz_lf.roles` (issue 17); this name keeps working."""

from vqalib.papers.vizwiz_lf.roles import (
    _labels_and_names,
    answers_with_label,
    annotation_distribution,
    role_info_cooccurrence,
)

__all__ = ["_labels_and_names", "answers_with_label", "annotation_distribution", "role_info_cooccurrence"]
