"""AFGV question sets (Methods): GQA's balanced questions sampled with a seed (the paper's N =
20,000) and the offline accessibility sets (VizWiz-LF's 600 questions, CommVQA's distinct questions).

Depends on :mod:`vqalib.papers.vizwiz_lf.loading`: :func:`accessibility_question_sets` takes VizWiz-LF's
questions from that paper's validated loader (``load_vizwiz_lf``, imported inside the function) rather
than parsing the release a second time. CommVQA's questions are read from the registered annotations file
directly (:func:`vqalib.core.data_registry.verified_path`), as only the question texts and contexts are needed.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd


def load_gqa_questions(path: str | Path, *, n: int | None = 20_000, seed: int = 0) -> pd.DataFrame:
    """GQA balanced questions (a ``*_balanced_questions.json`` file) sampled with a seed.

    Returns question_id, question, answer, image_id, question_type (GQA's structural type).

    Parameters
    ----------
    path : str or Path
        The JSON file (an object keyed by question id; each entry needs ``question``, ``answer``, ``imageId``).
    n : int or None, default 20000
        Questions sampled (the paper's N); None, or ``n`` at least the file's size, keeps all.
    seed : int, default 0
        ``random_state`` of the sample.

    Returns
    -------
    pandas.DataFrame
        One row per question (``question_id`` as text), sorted by ``question_id`` when sampled.
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
    """The offline question sets: VizWiz-LF's 600 questions and CommVQA's distinct questions (AFGV Methods).

    VizWiz-LF's come from the expert answers of :func:`vqalib.papers.vizwiz_lf.loading.load_vizwiz_lf`;
    CommVQA's are read straight from the hash-checked ``commvqa/annotations.json`` (stripped, empty and
    repeated questions dropped, numbered from 1, the context as ``question_type``).

    Parameters
    ----------
    data_dir : Path, optional
        The data folder (default: :func:`vqalib.core.io.default_data_dir`).

    Returns
    -------
    dict of str to pandas.DataFrame
        ``{"VizWiz-LF": ..., "CommVQA": ...}``, each with ``question_id``, ``question`` and ``question_type``.
    """
    from vqalib.core import data_registry
    from vqalib.core import io
    from vqalib.papers.vizwiz_lf import loading

    answers = loading.load_vizwiz_lf(data_dir=data_dir, sources=["expert"]).answers
    vizwiz = answers[["question_id", "question", "question_type"]].reset_index(drop=True)
    raw = io.read_json(data_registry.verified_path("commvqa/annotations.json", data_dir=data_dir))
    commvqa = (pd.DataFrame([{"question": str(r.get("question", "")).strip(), "question_type": r.get("context", "")}
                             for r in raw])
               .query("question != ''").drop_duplicates("question").reset_index(drop=True))
    commvqa.insert(0, "question_id", range(1, len(commvqa) + 1))
    return {"VizWiz-LF": vizwiz, "CommVQA": commvqa}
