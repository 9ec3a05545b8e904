"""Roles and information sources of a new model's VizWiz-LF answers, cross-fitted (§4, Tables 2, 3, 5): an answer equal
to a released one (training data) gets that question's out-of-fold labels, any other the final classifiers'."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd


SENTENCE_COLUMNS = ["source", "question_id", "sentence_index", "sentence", "roles", "info_sources", "labelled_by"]


def released_matches(answers: pd.DataFrame, released: pd.DataFrame) -> pd.Series:
    """Per new answer, the first released source with the same text for the same question, or None (§4)."""
    index: dict[tuple[int, str], str] = {}
    for source, qid, text in zip(released["source"], released["question_id"], released["answer"]):
        if isinstance(text, str):
            index.setdefault((int(qid), text.strip()), source)
    return pd.Series([index.get((int(q), a.strip())) if isinstance(a, str) else None
                      for q, a in zip(answers["question_id"], answers["answer"])], index=answers.index, dtype=object)


def out_of_fold_sentences(matches: pd.DataFrame, *, sentences: pd.DataFrame, answers: pd.DataFrame,
                          cache_dir: Path | None = None, cv: dict | None = None) -> pd.DataFrame:
    """Matched answers' release sentences with their out-of-fold roles and information sources (§4); ``cv``: the
    release's ``selected_cv`` results when the caller already holds them."""
    from vqalib.papers.vizwiz_lf.classifier_choice import selected_cv

    keys = set(zip(matches["released_source"], matches["question_id"].astype(int)))
    results = cv if cv is not None else selected_cv(sentences, answers, cache_dir=cache_dir)
    predicted = {}
    for kind, column in (("role", "roles"), ("info", "info_sources")):
        p = results[kind].predictions
        p = p[[(s, int(q)) in keys for s, q in zip(p["source"], p["question_id"])]]
        predicted[column] = p.set_index(["source", "question_id", "sentence_index"])["predicted"]
    frame = predicted["roles"].rename("roles").to_frame().join(predicted["info_sources"].rename("info_sources"))
    frame = frame.reset_index().rename(columns={"source": "released_source"})
    text = sentences.set_index(["source", "question_id", "sentence_index"])["sentence"]
    frame["sentence"] = [text.get((s, q, k)) for s, q, k in
                         zip(frame["released_source"], frame["question_id"], frame["sentence_index"])]
    return frame


LABELS_CACHE_VERSION = 1


def _labels_key(frame: pd.DataFrame, *, splitter: str) -> str:
    """SHA-256 of everything the labels depend on: the committed classifiers' bytes, the splitter, the texts."""
    import importlib.util

    from vqalib.papers.vizwiz_lf.classifier import MODEL_PATHS
    from vqalib.papers.vizwiz_lf.classifier_finetune import FINETUNED_DIR, WEIGHTS_FILE

    spacy = importlib.util.find_spec("spacy") is not None  # "auto" splits with spaCy when it is installed
    digest = hashlib.sha256(f"v{LABELS_CACHE_VERSION}|{splitter}|spacy={spacy}".encode())
    for name in sorted(MODEL_PATHS):
        digest.update(Path(MODEL_PATHS[name]).read_bytes())
    if (FINETUNED_DIR / WEIGHTS_FILE).is_file():
        digest.update((FINETUNED_DIR / WEIGHTS_FILE).read_bytes())
    digest.update(json.dumps([[int(q), str(t), str(a)] for q, t, a in
                              zip(frame["question_id"], frame["question"], frame["answer"])]).encode("utf-8"))
    return digest.hexdigest()


def classifier_labels(frame: pd.DataFrame, *, splitter: str = "auto", cache_dir: Path | None = None) -> pd.DataFrame:
    """The committed classifiers' sentence labels of new answers, cached by content (§4)."""
    from vqalib.core.caches import discard, read_entry, write_entry
    from vqalib.core.io import cache_root
    from vqalib.papers.vizwiz_lf.labelling import label_answers

    path = cache_root("vizwiz-lf", "labels") / f"{_labels_key(frame, splitter=splitter)}.json"
    payload = read_entry(path, kind="label cache")
    if payload is not None:
        try:
            rows = json.loads(payload.decode("utf-8"))
            cached = pd.DataFrame(rows, columns=["question_id", "answer_index", "sentence_index", "sentence", "roles",
                                                 "info_sources"])
            for column in ("roles", "info_sources"):
                cached[column] = cached[column].map(tuple)
            return cached
        except (ValueError, TypeError) as err:  # sealed but not our rows: recomputed and replaced
            discard(path, kind="label cache", why=f"not label rows ({err})")
    sentences, _ = label_answers(frame, splitter=splitter, cache_dir=cache_dir)
    columns = ["question_id", "answer_index", "sentence_index", "sentence", "roles", "info_sources"]
    records = [[int(r[0]), int(r[1]), int(r[2]), str(r[3]), list(r[4]), list(r[5])]
               for r in sentences[columns].itertuples(index=False)]
    write_entry(path, json.dumps(records, ensure_ascii=False).encode("utf-8"), kind="label cache")
    return sentences[columns]


def label_model_answers(answers: pd.DataFrame, *, model: str, released_answers: pd.DataFrame,
                        released_sentences: pd.DataFrame, cross_fit: bool = True, splitter: str = "auto",
                        cache_dir: Path | None = None, cv: dict | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(sentences, answers)`` of a model's labelled answers, each with ``labelled_by``: roles, information sources,
    abstention (scorecard and leaderboard input of Tables 2-5).

    Parameters
    ----------
    answers : pandas.DataFrame
        One row per answer in the release's layout (``question_id``, ``question``, ``answer``, ...).
    model : str
        The name the labelled rows carry.
    released_answers, released_sentences : pandas.DataFrame
        The release (the classifier's training data).
    cross_fit : bool, default True
        Out-of-fold labels for an answer equal to a released one (the classifier never labels its training text).
    splitter : str, default "auto"
    cache_dir : Path, optional
    cv : dict, optional
        The release's ``classifier_choice.selected_cv`` results, when labelling several models' answers (read once).
    """
    from vqalib.papers.vizwiz_lf.labelling import answer_labels

    frame = answers.reset_index(drop=True).copy()
    frame["released_source"] = released_matches(frame, released_answers) if cross_fit else None
    matched = frame[frame["released_source"].notna()]
    parts = []
    if len(matched):
        oof = out_of_fold_sentences(matched[["question_id", "released_source"]], sentences=released_sentences,
                                    answers=released_answers, cache_dir=cache_dir, cv=cv)
        oof = matched[["question_id", "released_source"]].merge(oof, on=["question_id", "released_source"])
        parts.append(oof.assign(source=model, labelled_by="out-of-fold (" + oof["released_source"] + ")"))
    fresh = frame[frame["released_source"].isna()]
    if len(fresh):
        sentences = classifier_labels(fresh[["question_id", "question", "answer"]], splitter=splitter,
                                      cache_dir=cache_dir)
        parts.append(sentences.assign(source=model, labelled_by="classifier"))
    labelled = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=SENTENCE_COLUMNS)
    labelled = labelled.sort_values(["question_id", "sentence_index"], kind="stable")[SENTENCE_COLUMNS]
    labelled = labelled.reset_index(drop=True)
    per_answer = answer_labels(labelled, by="question_id", keys=frame["question_id"])
    for column in per_answer.columns:
        frame[column] = per_answer[column].to_numpy()
    frame["labelled_by"] = ["out-of-fold (" + s + ")" if isinstance(s, str) else "classifier"
                            for s in frame["released_source"]]
    return labelled, frame.drop(columns="released_source")
