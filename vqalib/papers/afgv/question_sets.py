"""AFGV question sets (Methods): GQA's balanced questions sampled with a seed (the paper's N = 20,000), the offline
accessibility sets (VizWiz-LF's 600 questions, CommVQA's distinct ones) and each set's rewritten tier items.
VizWiz-LF's questions come from :mod:`vqalib.papers.vizwiz_lf.loading`, its validated loader."""

from __future__ import annotations

import functools
from pathlib import Path

import pandas as pd

QUESTION_SETS = ("VizWiz-LF", "CommVQA")


def load_gqa_questions(path: str | Path, *, n: int | None = 20_000, seed: int = 0) -> pd.DataFrame:
    """GQA balanced questions (a ``*_balanced_questions.json`` file) sampled with a seed, ids as text (AFGV Methods).

    Parameters
    ----------
    path : str or Path
        The JSON file (keyed by question id; entries need ``question``, ``answer``, ``imageId``).
    n : int or None, default 20000
        Questions sampled (the paper's N); None keeps all.
    seed : int, default 0
    """
    from vqalib.core.io import DataFormatError, read_json

    raw = read_json(Path(path))
    if not isinstance(raw, dict):
        raise DataFormatError(f"{path}: expected an object keyed by question id")
    rows = []
    for qid, entry in raw.items():
        for field in ("question", "answer", "imageId"):
            if field not in entry:
                raise DataFormatError(f"{path}: question {qid!r} lacks field {field!r}")
        rows.append({"question_id": str(qid), "question": entry["question"], "answer": entry["answer"],
                     "image_id": entry["imageId"],
                     "question_type": (entry.get("types") or {}).get("structural", "")})
    frame = pd.DataFrame(rows)
    if n is not None and n < len(frame):
        frame = frame.sample(n=n, random_state=seed).sort_values("question_id")
    return frame.reset_index(drop=True)


def accessibility_question_sets(*, data_dir: Path | None = None) -> dict[str, pd.DataFrame]:
    """The offline question sets by name: VizWiz-LF's 600 questions and CommVQA's distinct questions (AFGV Methods).

    Parameters
    ----------
    data_dir : Path, optional
        The data folder (default: :func:`vqalib.core.io.default_data_dir`).
    """
    from vqalib.core import upstream
    from vqalib.core import io
    from vqalib.papers.vizwiz_lf import loading

    answers = loading.load_vizwiz_lf(data_dir=data_dir, sources=["expert"]).answers
    vizwiz = answers[["question_id", "question", "question_type"]].reset_index(drop=True)
    raw = io.read_json(upstream.verified_path("commvqa/annotations.json", data_dir=data_dir))
    commvqa = (pd.DataFrame([{"question": str(r.get("question", "")).strip(), "question_type": r.get("context", "")}
                             for r in raw])
               .query("question != ''").drop_duplicates("question").reset_index(drop=True))
    commvqa.insert(0, "question_id", range(1, len(commvqa) + 1))
    return {"VizWiz-LF": vizwiz, "CommVQA": commvqa}


def tier_items(*, question_set: str = "VizWiz-LF", data_dir: Path | None = None, word_vectors: str | None = None,
               topn: int = 20) -> pd.DataFrame:
    """The placed rewrites of a question set by ``item_id`` (``<question_id>/<tier>``), VizWiz-LF's with ``reference``.

    Parameters
    ----------
    question_set : {"VizWiz-LF", "CommVQA"}
    data_dir : Path, optional
    word_vectors : str, optional
        The rewrite's word vectors (default: the packaged ones).
    topn : int, default 20
        Neighbours considered per target word.
    """
    if question_set not in QUESTION_SETS:
        raise ValueError(f"question_set must be one of {QUESTION_SETS}, not {question_set!r}")
    return _tier_items(question_set, None if data_dir is None else str(data_dir), word_vectors, topn).copy()


@functools.cache
def _tier_items(question_set: str, data_dir: str | None, word_vectors: str | None, topn: int) -> pd.DataFrame:
    from vqalib.papers.afgv.rewrite import RewriteConfig, rewrite_question_sets
    from vqalib.papers.afgv.tiers import PLACED
    from vqalib.papers.afgv.vectors import load_word_vectors

    folder = None if data_dir is None else Path(data_dir)
    questions = accessibility_question_sets(data_dir=folder)[question_set]
    rewrites = rewrite_question_sets({question_set: questions}, vectors=load_word_vectors(word_vectors),
                                     config=RewriteConfig(topn=topn))[question_set]
    rows = rewrites[rewrites["status"].isin(PLACED)].copy()
    rows["question_id"] = rows["question_id"].astype(str)
    rows["tier"] = rows["tier"].astype(str)
    types = questions.assign(question_id=questions["question_id"].astype(str))
    rows = rows.drop(columns=[c for c in ("question_type",) if c in rows]).merge(
        types[["question_id", "question_type"]], on="question_id", how="left")
    rows["reference"] = None
    if question_set == "VizWiz-LF":
        from vqalib.papers.vizwiz_lf.loading import load_vizwiz_lf

        expert = load_vizwiz_lf(data_dir=folder, sources=["expert"]).answers
        rows["reference"] = rows["question_id"].map(dict(zip(expert["question_id"].astype(str), expert["crowd_majority"])))
    rows["item_id"] = rows["question_id"] + "/" + rows["tier"]
    return rows[["item_id", "question_id", "tier", "question", "question_set", "question_type", "intent_similarity",
                 "reference"]].reset_index(drop=True)
