"""Sentence-embedding analyses of CommVQA: can the context be told from the question alone: moved to :mod:`vqalib.papers.commvqa.context` (issue 17); this name keeps working."""

from vqalib.papers.commvqa.context import (
    SENTENCE_MODEL_ENV,
    sentence_model,
    embed,
    questions_for_classifier,
    _classifier,
    context_classifier,
    pairwise_accuracy,
    pairwise_matrix,
    similarity_pairs,
    description_similarity,
    similarity_summary,
    stars,
    similarity_tests,
    fig02_alt_text,
    fig04_alt_text,
)

__all__ = ["SENTENCE_MODEL_ENV", "sentence_model", "embed", "questions_for_classifier", "_classifier", "context_classifier", "pairwise_accuracy", "pairwise_matrix", "similarity_pairs", "description_similarity", "similarity_summary", "stars", "similarity_tests", "fig02_alt_text", "fig04_alt_text"]
