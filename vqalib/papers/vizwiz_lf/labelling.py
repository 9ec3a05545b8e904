"""Labelling new long-form answers offline (VizWiz-LF §4 sentences and roles, §7 abstention, without GPT-4):
sentence splitting as in the release and the committed classifiers (``data/models/``)."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from vqalib.papers.vizwiz_lf import taxonomy
from vqalib.papers.vizwiz_lf.abstention import abstains
from vqalib.papers.vizwiz_lf.classifier import MODEL_PATHS, SentenceClassifier
from vqalib.papers.vizwiz_lf.classifier_features import feature_matrix
from vqalib.papers.vizwiz_lf.classifier_io import load

_ABBREVIATIONS = ("mr", "mrs", "ms", "dr", "st", "vs", "e.g", "i.e", "inc", "co", "ltd", "no", "approx", "jr", "sr")
_SPLIT = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"')\]]))\s+")  # white space after . ! ? (and a closing quote)


def split_sentences(text: str, *, splitter: str = "auto") -> list[str]:
    """Split an answer into sentences as the release does, final period dropped (§4): spaCy's sentencizer or a regex
    keeping "3.5 mm", "U.S. army" and abbreviations whole ("auto": spaCy if installed)."""
    if splitter not in ("auto", "spacy", "regex"):
        raise ValueError(f"splitter must be 'auto', 'spacy' or 'regex', not {splitter!r}")
    text = (text or "").strip()
    if not text:
        return []
    if splitter == "spacy" or (splitter == "auto" and _spacy_sentencizer() is not None):
        nlp = _spacy_sentencizer()
        if nlp is None:
            raise ImportError("splitter='spacy' needs spaCy (pip install spacy)")
        parts = [s.text for s in nlp(text).sents]
    else:
        parts, start = [], 0
        for match in _SPLIT.finditer(text):
            before = text[start:match.start()].rstrip(".!?\"')]").split()
            last = before[-1].lower() if before else ""
            initialism = re.fullmatch(r"(?:[a-z]\.)+[a-z]", last)
            if len(last) == 1 and last.isalpha() or last in _ABBREVIATIONS or initialism:
                continue  # "Dr. Smith", "U.S. army", "p. 3": not a sentence end
            parts.append(text[start:match.start()])
            start = match.end()
        parts.append(text[start:])
    out = [re.sub(r"\.+$", "", p.strip()).strip() for p in parts]
    return [p for p in out if p]


@lru_cache(maxsize=1)
def _spacy_sentencizer():
    try:
        import spacy
    except ImportError:
        return None
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    return nlp


def default_models() -> tuple[SentenceClassifier, SentenceClassifier]:
    """The committed role and information-source classifiers (``data/models/``)."""
    missing = [str(p) for p in MODEL_PATHS.values() if not p.exists()]
    if missing:
        raise FileNotFoundError(f"no saved classifier at {', '.join(missing)}; regenerate with "
                                "`vqalib classify train` (see data/models/README.md)")
    return load(MODEL_PATHS["role"]), load(MODEL_PATHS["info"])


def label_answers(frame: pd.DataFrame, *, role_model: SentenceClassifier | None = None,
                  info_model: SentenceClassifier | None = None, classifier: str | None = None, splitter: str = "auto",
                  cache_dir: Path | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Label new answers offline: ``(sentences, answers)``, answers gaining counts, labels and abstention (§4, §7).

    Parameters
    ----------
    frame : pandas.DataFrame
        ``question`` and ``answer``; every other column is carried as an id.
    role_model, info_model : SentenceClassifier, optional
        Frozen-feature classifiers; default the committed ones.
    classifier : {"frozen", "finetuned"}, optional
        Which committed classifier labels when no model is given; default the selected one.
    splitter : {"auto", "spacy", "regex"}, default "auto"
    cache_dir : Path, optional
    """
    if role_model is None and info_model is None:
        from vqalib.papers.vizwiz_lf import classifier_choice

        classifier = classifier or classifier_choice.selected()
    else:
        classifier = "frozen"  # models passed in are frozen-feature ones
    if classifier == "frozen" and (role_model is None or info_model is None):
        default_role, default_info = default_models()
        role_model, info_model = role_model or default_role, info_model or default_info
    ids = [c for c in frame.columns if c not in ("question", "answer")]
    records = []
    for answer_index, (question, answer) in enumerate(zip(frame["question"], frame["answer"])):
        for k, text in enumerate(split_sentences(answer if isinstance(answer, str) else "", splitter=splitter)):
            records.append({"answer_index": answer_index, "sentence_index": k, "sentence": text,
                            "question": question if isinstance(question, str) else ""})
    units = pd.DataFrame(records, columns=["answer_index", "sentence_index", "sentence", "question"])
    units["answer_id"] = units["answer_index"].astype(str)
    sentences = units.copy()
    decided: dict[str, tuple[tuple[str, ...], np.ndarray]] = {}  # per column: labels and their 0/1 decisions
    if classifier == "finetuned":
        from vqalib.papers.vizwiz_lf import classifier_finetune

        chosen = classifier_finetune.decide(classifier_finetune.predict_proba(units))
        n_roles = classifier_finetune.N_ROLES
        decided["roles"] = classifier_finetune.LABELS[:n_roles], chosen[:, :n_roles]
        decided["info_sources"] = classifier_finetune.LABELS[n_roles:], chosen[:, n_roles:]
    else:
        features: dict[str, np.ndarray] = {}  # per encoder: both models normally share one
        for name, model in (("roles", role_model), ("info_sources", info_model)):
            if len(units):
                if model.encoder not in features:
                    features[model.encoder] = feature_matrix(units, encoder=model.encoder, cache_dir=cache_dir)
                decided[name] = model.labels, model.decide(model.predict_proba(features[model.encoder]))
            else:
                decided[name] = model.labels, np.zeros((0, len(model.labels)), dtype=int)
    for name, (labels, chosen) in decided.items():
        sentences[name] = [tuple(label for label, y in zip(labels, row) if y) for row in chosen]
    id_values = frame[ids].reset_index(drop=True)
    sentences = pd.concat([id_values.iloc[sentences["answer_index"]].reset_index(drop=True),
                           sentences[["answer_index", "sentence_index", "sentence", "roles", "info_sources"]]], axis=1)
    answers = frame.reset_index(drop=True).copy()
    per_answer = answer_labels(sentences, by="answer_index", keys=answers.index)
    for column in per_answer.columns:
        answers[column] = per_answer[column].to_numpy()
    return sentences, answers


def answer_labels(sentences: pd.DataFrame, *, by: str, keys) -> pd.DataFrame:
    """Per answer of ``keys`` (column ``by``), its sentence count, roles, info sources and abstention (§4, §7)."""
    keys = list(keys)
    per_answer = sentences.groupby(by)
    out = pd.DataFrame({"n_sentences": per_answer.size().reindex(keys, fill_value=0).to_numpy()})
    for name, labels in (("roles", taxonomy.ROLES), ("info_sources", taxonomy.INFO_SOURCES)):
        found = per_answer[name].agg(lambda col: {label for row in col for label in row})
        out[name] = [tuple(label for label in labels if label in found.get(k, set())) for k in keys]
    out["abstains"] = abstains(out["roles"])
    return out
