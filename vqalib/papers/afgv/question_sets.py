"""AFGV question sets (Methods): GQA's balanced questions sampled with a seed (the paper's N =
20,000) and the offline accessibility sets (VizWiz-LF's 600 questions, CommVQA's distinct questions).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd


def load_gqa_questions(path: str | Path, *, n: int | None = 20_000, seed: int = 0) -> pd.DataFrame:
    """GQA balanced questions (a ``*_balanced_questions.json`` file) sampled with a seed.

    Returns question_id, question, answer, image_id, question_type (GQA's structural type).
    """
    from vqalib.datasets import DataFormatError, read_json

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
    """The offline question sets: VizWiz-LF's 600 questions and CommVQA's distinct questions."""
    from vqalib import datasets

    answers = datasets.load_vizwiz_lf(data_dir=data_dir, sources=["expert"]).answers
    vizwiz = answers[["question_id", "question", "question_type"]].reset_index(drop=True)
    raw = datasets.read_json(datasets.verified_path("commvqa/annotations.json", data_dir=data_dir))
    commvqa = (pd.DataFrame([{"question": str(r.get("question", "")).strip(), "question_type": r.get("context", "")}
                             for r in raw])
               .query("question != ''").drop_duplicates("question").reset_index(drop=True))
    commvqa.insert(0, "question_id", range(1, len(commvqa) + 1))
    return {"VizWiz-LF": vizwiz, "CommVQA": commvqa}
