"""CommVQA (Naik, Potts, Kreiss, 2024): loader, validation, the Table 1 benchmark under two
protocols, and the question/answer analysis (CommVQA §3–§5, Table 1, Figures 3 and 5, Appendix A.2).

A facade: the code lives in :mod:`vqalib.papers.commvqa`, one module per concept (issue 17), and
every name is re-exported here so ``from vqalib import commvqa; commvqa.load_commvqa()`` and the
registry's ``vqalib.commvqa.*`` references keep working:

- names, contexts, populations: :mod:`vqalib.papers.commvqa.names`
- loading and validation (§3): :mod:`vqalib.papers.commvqa.loading`
- Table 1 protocols (authors' and corrected): :mod:`vqalib.papers.commvqa.protocols`
- Table 1 scoring, protocol steps, context effect (§5): :mod:`vqalib.papers.commvqa.table1`
- Table 1 score cache: :mod:`vqalib.papers.commvqa.table1_cache`
- Table 1 rows of the VLM runner, cells not run: :mod:`vqalib.papers.commvqa.table1_runs`
- text analyses (§4, A.2.2): :mod:`vqalib.papers.commvqa.text`
- named entities (Figures 3 and 5, §5.1): :mod:`vqalib.papers.commvqa.entities`
- the paper's stated numbers: :mod:`vqalib.papers.commvqa.facts`

To patch an internal function (e.g. in a test), patch it in the module that defines it.
"""

from __future__ import annotations

from vqalib.datasets import DataFormatError, read_csv_text
from vqalib.papers.commvqa.entities import (ENTITY_GROUP_ORDER, ENTITY_GROUPS, NER_CACHE_VERSION, NUMERIC_ENTITIES,
                                            SPACY_MODEL, TIME_ENTITIES, _entities, _ner_pipeline, _read_entity_chunk,
                                            entity_mentions, entity_overlap, entity_rates, fig05_alt_text,
                                            fig05_groups, fig05_rates, ner_model_identity, org_person_interaction)
from vqalib.papers.commvqa.facts import Fact, compare_text_facts, load_text_facts, paper_facts, text_facts_view
from vqalib.papers.commvqa.loading import (ANNOTATION_FIELDS, CommVQA, _cross_file_checks, human_answers,
                                           load_commvqa, load_summary, match_results, parse_annotations,
                                           parse_answers_cell, parse_results, smoke_subset)
from vqalib.papers.commvqa.names import (CONDITIONS, CONTEXT_ALIASES, CONTEXT_LABELS, CONTEXTS, METRICS, MODELS,
                                         PANDAS_DEFAULT_NA, PAPER_ORDER, PROTOCOLS, RESULT_COLUMNS, SUBSETS,
                                         cache_dir, canonical_context, result_key, subsets_of)
from vqalib.papers.commvqa.protocols import (authors_candidate, authors_references, authors_subsets, bleu_variants,
                                             protocol_inputs, reference_parsing_effects, tokenize_inputs)
from vqalib.papers.commvqa.table1 import (FileStatistics, _bleu_from_pooled, _bleu_statistics, context_effect,
                                          protocol_alt_text, protocol_steps, resample_weights, score_protocol,
                                          table1_rows)
from vqalib.papers.commvqa.table1_cache import (_PROTOCOL_FRAMES, PROTOCOL_CACHE_VERSION, ProtocolScores,
                                                load_protocol_scores, protocol_cache_key, save_protocol_scores)
from vqalib.papers.commvqa.table1_runs import (RUN_CONDITIONS, RUN_MODELS, assemble_table1, benchmark_runs,
                                               not_run_rows, run_results)
from vqalib.papers.commvqa.text import (HEDGES, INTERROGATIVES, POLAR_FIRST_WORDS, YES_NO, answer_kind, answer_length,
                                        context_counts, hedge_counts, interrogative_tests, is_polar,
                                        paper_interrogative_cells, polar_answers, top_trigrams)
from vqalib.core.validation import ValidationReport

__all__ = [
    # names (names.py)
    "CONDITIONS", "CONTEXT_ALIASES", "CONTEXT_LABELS", "CONTEXTS", "METRICS", "MODELS", "PANDAS_DEFAULT_NA",
    "PAPER_ORDER", "PROTOCOLS", "RESULT_COLUMNS", "SUBSETS", "cache_dir", "canonical_context", "result_key",
    "subsets_of",
    # loading and validation (loading.py); the strict readers and report type it uses
    "ANNOTATION_FIELDS", "CommVQA", "DataFormatError", "ValidationReport", "_cross_file_checks", "human_answers",
    "load_commvqa", "match_results", "parse_annotations", "parse_answers_cell", "parse_results", "read_csv_text",
    "load_summary", "smoke_subset",
    # Table 1 (protocols.py, table1.py, table1_cache.py, table1_runs.py)
    "authors_candidate", "authors_references", "authors_subsets", "bleu_variants", "protocol_inputs",
    "reference_parsing_effects", "tokenize_inputs",
    "FileStatistics", "_bleu_from_pooled", "_bleu_statistics", "context_effect", "protocol_steps",
    "resample_weights", "score_protocol", "table1_rows", "protocol_alt_text",
    "_PROTOCOL_FRAMES", "PROTOCOL_CACHE_VERSION", "ProtocolScores", "load_protocol_scores", "protocol_cache_key",
    "save_protocol_scores",
    "RUN_CONDITIONS", "RUN_MODELS", "not_run_rows", "run_results", "assemble_table1", "benchmark_runs",
    # text analyses (text.py)
    "HEDGES", "INTERROGATIVES", "POLAR_FIRST_WORDS", "YES_NO", "answer_kind", "answer_length", "context_counts",
    "hedge_counts", "interrogative_tests", "is_polar", "paper_interrogative_cells", "polar_answers", "top_trigrams",
    # named entities (entities.py)
    "ENTITY_GROUP_ORDER", "ENTITY_GROUPS", "NER_CACHE_VERSION", "NUMERIC_ENTITIES", "SPACY_MODEL", "TIME_ENTITIES",
    "_entities", "_ner_pipeline", "_read_entity_chunk", "entity_mentions", "entity_overlap", "entity_rates",
    "ner_model_identity", "org_person_interaction", "fig05_alt_text", "fig05_groups", "fig05_rates",
    # the paper's stated numbers (facts.py)
    "Fact", "compare_text_facts", "load_text_facts", "paper_facts", "text_facts_view",
]
