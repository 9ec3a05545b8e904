"""Word counts of questions and answers (VizWiz-LF Table 1, §3): moved to :mod:`vqalib.papers.vizwiz_lf.wordcounts` (issue 17); this name keeps working."""

from vqalib.papers.vizwiz_lf.wordcounts import (
    TABLE1_COLUMNS,
    count_words,
    _summary,
    word_count_table,
    long_format,
    paper_layout,
    pair_agreement,
)

__all__ = ["TABLE1_COLUMNS", "count_words", "_summary", "word_count_table", "long_format", "paper_layout", "pair_agreement"]
