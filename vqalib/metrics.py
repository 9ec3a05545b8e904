"""Reference-based metrics for long-form answers (VizWiz-LF §5, Table 4; Table 18 hook): a facade.

The code lives in one small module per metric under :mod:`vqalib.core.metrics` (each naming its
citation and exact variant) and in the paper's modules :mod:`vqalib.papers.vizwiz_lf.table4` (evaluation
pairs, settings, no-answer rules, scoring, bootstrap summaries, Table 18, LAVE) and
:mod:`vqalib.papers.vizwiz_lf.table4_report` (notebook 03's assembly of the tables). This module
re-exports their names so ``from vqalib import metrics`` keeps working unchanged:

- ROUGE: ``pycocoevalcap`` ROUGE-L (LCS F-measure, beta = 1.2), on PTB-tokenized text
  (:mod:`vqalib.core.metrics.rouge`, :mod:`vqalib.core.metrics.tokenize`);
- METEOR: ``pycocoevalcap`` METEOR 1.5 (Java, ``-l en -norm``), segment scores, on PTB-tokenized text
  (:mod:`vqalib.core.metrics.meteor`; NLTK's variant in :mod:`vqalib.core.metrics.meteor_nltk`);
- BERTScore: ``bert-score`` F1, no IDF, no baseline rescaling (the paper's values, about
  0.8-0.9, are unrescaled); backbone by configuration (:func:`bertscore_backbone`;
  :mod:`vqalib.core.metrics.bertscore`);
- Lex-Overlap (Unigram): not defined in the paper; :data:`LEXICAL_OVERLAP_DEFINITIONS`
  lists the plausible definitions and notebook 03 shows which comes closest
  (:mod:`vqalib.core.metrics.lexical_overlap`).

Scores are cached on disk as ``.npz`` arrays read with ``allow_pickle=False`` (a cache file is
data, never code), keyed by a SHA-256 of the metric, its implementation (library versions,
backbone, :data:`SCORE_CACHE_VERSION`) and the texts, so a second ``make reproduce`` does not
recompute them (:func:`cached_scores`, :mod:`vqalib.core.metrics.cache`; to replace the scoring function in
a test, patch ``vqalib.core.metrics.cache._score_texts``, where :func:`cached_scores` looks it up).
"""

from __future__ import annotations

from vqalib.core.metrics.bertscore import (BERTSCORE_LAYERS_ENV, BERTSCORE_MODEL_ENV, PAPER_BERTSCORE_MODEL,
                                           Backbone, bertscore_backbone, bertscore_f1)
from vqalib.core.metrics.cache import (SCORE_CACHE_VERSION, _score_texts, cached_scores, default_cache_dir,
                                       score_cache_key)
from vqalib.core.metrics.lexical_overlap import (DEFAULT_LEXICAL_OVERLAP, LEXICAL_OVERLAP_DEFINITIONS,
                                                 LEXICAL_OVERLAPS, lexical_overlap)
from vqalib.core.metrics.meteor import MeteorSession, meteor, meteor_additive
from vqalib.core.metrics.meteor_nltk import meteor_nltk
from vqalib.core.metrics.rouge import rouge_l
from vqalib.core.metrics.tokenize import ptb_tokenize
from vqalib.papers.vizwiz_lf.table4 import (IMPLEMENTATIONS, METRIC_NAMES, NO_ANSWER_RULES, SETTINGS,
                                            answer_sentences_text, compare_lexical_definitions, evaluation_pairs,
                                            human_correlation, not_run_rows, paper_in_ci, paper_sample, score_pairs,
                                            score_with_judge, significance_stars, summarize, table4_rows)
from vqalib.papers.vizwiz_lf.table4_report import (PAPER_IN_CI_COLUMNS, TABLE18_ENABLE, compare_with_paper,
                                                   implementations, no_answer_sensitivity, no_answer_sentence_counts,
                                                   paper_cells_in_ci, paper_in_ci_text, reference_gains,
                                                   reference_shift_alt_text, sample_table4, sensitivity_wide,
                                                   table18, table4_wide)

__all__ = [
    # vqalib.core.metrics
    "BERTSCORE_LAYERS_ENV", "BERTSCORE_MODEL_ENV", "PAPER_BERTSCORE_MODEL", "Backbone", "bertscore_backbone",
    "bertscore_f1", "SCORE_CACHE_VERSION", "_score_texts", "cached_scores", "default_cache_dir", "score_cache_key",
    "DEFAULT_LEXICAL_OVERLAP", "LEXICAL_OVERLAP_DEFINITIONS", "LEXICAL_OVERLAPS", "lexical_overlap",
    "MeteorSession", "meteor", "meteor_additive", "meteor_nltk", "rouge_l", "ptb_tokenize",
    # vqalib.papers.vizwiz_lf.table4
    "IMPLEMENTATIONS", "METRIC_NAMES", "NO_ANSWER_RULES", "SETTINGS", "answer_sentences_text",
    "compare_lexical_definitions", "evaluation_pairs", "human_correlation", "not_run_rows", "paper_in_ci",
    "paper_sample", "score_pairs", "score_with_judge", "significance_stars", "summarize", "table4_rows",
    # vqalib.papers.vizwiz_lf.table4_report
    "PAPER_IN_CI_COLUMNS", "TABLE18_ENABLE", "compare_with_paper", "implementations", "no_answer_sensitivity",
    "no_answer_sentence_counts", "paper_cells_in_ci", "paper_in_ci_text", "reference_gains",
    "reference_shift_alt_text", "sample_table4", "sensitivity_wide", "table18", "table4_wide",
]
