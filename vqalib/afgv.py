"""AFGV: reading-level controlled question rewrites and tier statistics (AFGV paper, "Accessible VQA
Evaluation Using Reading-Level Controlled GQA"): word vectors, readability, rewrites, the tier rule,
intent similarity, Tables 1 and 2, and GQA's questions.

A facade: the code lives in :mod:`vqalib.papers.afgv`, one module per concept (issue 17), and every
name is re-exported here so ``from vqalib import afgv; afgv.rewrite_questions(...)``, the registry's
``vqalib.afgv.*`` references and ``python -m vqalib.afgv fetch-gqa`` (``make data-gqa``) keep working:

- word vectors and neighbours: :mod:`vqalib.papers.afgv.vectors`
- readability measures (Table 2): :mod:`vqalib.papers.afgv.readability`
- the tier rule (Readability Analysis): :mod:`vqalib.papers.afgv.tiers`
- the rewrite pipeline (Methods, Fig. 1): :mod:`vqalib.papers.afgv.rewrite`
- intent and answer similarity: :mod:`vqalib.papers.afgv.intent`
- tier accuracy and Table 1 statistics: :mod:`vqalib.papers.afgv.accuracy`
- question sets (GQA, VizWiz-LF, CommVQA): :mod:`vqalib.papers.afgv.question_sets`
- fetching GQA and the command line: :mod:`vqalib.papers.afgv.gqa`
- model predictions per tier: :mod:`vqalib.papers.afgv.predictions`
- notebook 06's Table 1 and 2 summaries: :mod:`vqalib.papers.afgv.tables`

``VQALIB_WORD_VECTORS`` (see :func:`load_word_vectors`) chooses the word vectors. To patch an
internal function (e.g. in a test), patch it in the module that defines it.
"""

from __future__ import annotations

import sys

from vqalib.papers.afgv.accuracy import (Z95, implied_n, intent_deltas, min_ci_separation, normalize_answer,
                                         table1_from_accuracies, tier_accuracy, wald_ci, z_vs_baseline)
from vqalib.papers.afgv.gqa import GQA_QUESTIONS_URL, fetch_gqa_questions, main
from vqalib.papers.afgv.intent import (answer_similarity, embed_texts, intent_filter_by_set, intent_filter_table,
                                       intent_similarity)
from vqalib.papers.afgv.predictions import PREDICTIONS_ENABLE, attach_rewrites, prediction_tables, predictions_from_runs
from vqalib.papers.afgv.question_sets import accessibility_question_sets, load_gqa_questions
from vqalib.papers.afgv.readability import _fk_from_counts, _nltk_cmudict_dir, fk_grade, syllables, textstat_module
from vqalib.papers.afgv.rewrite import (_PUNCTUATION, RewriteConfig, _porter, _replace, _stem, corpus_frequencies,
                                        keep_candidate, rewrite_question_sets, rewrite_questions, stopwords,
                                        substitution_target, tokens)
from vqalib.papers.afgv.tables import (IMPLIED_N_COLUMNS, TABLE2_COLUMNS, example_rewrites, examples_wide,
                                       fk_by_tier_alt_text, implied_n_table, paper_accuracies, readability_by_set,
                                       readability_table, table1_long, table2_columns, tier_ordering)
from vqalib.papers.afgv.tiers import (FK_NOT_MOVED, LEFT_OUT, PLACED, TIER_DIRECTION, TIERS, _baseline_rows,
                                      _question_index, _question_keys, moves_fk, out_of_order, place_in_tiers)
from vqalib.papers.afgv.vectors import (_NATIVE_GENSIM_SUFFIXES, COSINE_DECIMALS, WORD_VECTORS_ENV, _word2vec_file,
                                        load_word_vectors, nearest_neighbours)

__all__ = [
    # word vectors (vectors.py)
    "COSINE_DECIMALS", "WORD_VECTORS_ENV", "_NATIVE_GENSIM_SUFFIXES", "_word2vec_file", "load_word_vectors",
    "nearest_neighbours",
    # readability (readability.py)
    "_fk_from_counts", "_nltk_cmudict_dir", "fk_grade", "syllables", "textstat_module",
    # the tier rule (tiers.py)
    "FK_NOT_MOVED", "LEFT_OUT", "PLACED", "TIER_DIRECTION", "TIERS", "_baseline_rows", "_question_index",
    "_question_keys", "moves_fk", "out_of_order", "place_in_tiers",
    # the rewrite pipeline (rewrite.py)
    "_PUNCTUATION", "RewriteConfig", "_porter", "_replace", "_stem", "corpus_frequencies", "keep_candidate",
    "rewrite_question_sets", "rewrite_questions", "stopwords", "substitution_target", "tokens",
    # intent and answer similarity (intent.py)
    "answer_similarity", "embed_texts", "intent_filter_by_set", "intent_filter_table", "intent_similarity",
    # Table 1 statistics (accuracy.py)
    "Z95", "implied_n", "intent_deltas", "min_ci_separation", "normalize_answer", "table1_from_accuracies",
    "tier_accuracy", "wald_ci", "z_vs_baseline",
    # question sets (question_sets.py) and GQA (gqa.py)
    "accessibility_question_sets", "load_gqa_questions", "GQA_QUESTIONS_URL", "fetch_gqa_questions", "main",
    # predictions (predictions.py)
    "PREDICTIONS_ENABLE", "attach_rewrites", "prediction_tables", "predictions_from_runs",
    # notebook 06's tables (tables.py)
    "IMPLIED_N_COLUMNS", "TABLE2_COLUMNS", "example_rewrites", "examples_wide", "fk_by_tier_alt_text",
    "implied_n_table", "paper_accuracies", "readability_by_set", "readability_table", "table1_long",
    "table2_columns", "tier_ordering",
]

if __name__ == "__main__":
    sys.exit(main())
