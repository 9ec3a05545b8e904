"""BERTScore F1 with a configurable backbone, deterministic across machines. Citation: Zhang et al. (2020),
"BERTScore: Evaluating Text Generation with BERT", ICLR. Exact variant: ``bert-score`` F1, no IDF, no rescaling,
backbone in float64, each F1 rounded to :data:`vqalib.core.encoders.DECIMALS`."""

from __future__ import annotations

import collections
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vqalib.core import config
from vqalib.core.encoders import DECIMALS, packaged_minilm_path

BERTSCORE_MODEL_ENV = "VQALIB_BERTSCORE_MODEL"
BERTSCORE_LAYERS_ENV = "VQALIB_BERTSCORE_LAYERS"
PAPER_BERTSCORE_MODEL = "roberta-large"  # bert-score's default for English; needs the model hub


@dataclass(frozen=True)
class Backbone:
    """A BERTScore backbone: what bert-score loads, which layer, and the name tables show."""

    model_type: str
    num_layers: int | None
    label: str


def bertscore_backbone(model: str | None = None, *, num_layers: int | None = None) -> Backbone:
    """The BERTScore backbone: a named model (``roberta-large`` online), else the packaged all-MiniLM-L6-v2,
    matched at layer 4 of 6 by default (bert-score has no default layer for it).

    Parameters
    ----------
    model : str, optional
        Hub name or local folder; default ``$VQALIB_BERTSCORE_MODEL``, else the packaged MiniLM.
    num_layers : int, optional
        Layer whose embeddings are matched; default ``$VQALIB_BERTSCORE_LAYERS`` (4 for the MiniLM).
    """
    model = model or config.get(BERTSCORE_MODEL_ENV)
    num_layers = num_layers or (config.get_int(BERTSCORE_LAYERS_ENV, 0) or None)
    if model:
        label = model if num_layers is None else f"{model} (layer {num_layers})"
        backbone = Backbone(model_type=model, num_layers=num_layers, label=label)
    else:
        layers = num_layers or 4
        backbone = Backbone(model_type=packaged_minilm_path(), num_layers=layers,
                            label=f"all-MiniLM-L6-v2 (layer {layers}, offline)")
    if (Path(backbone.model_type).expanduser() / "config.json").is_file():  # local: checked now, before any work
        check_layers(backbone)
    return backbone


def layer_count(model_type: str) -> int:
    """The hidden layers of backbone ``model_type``: a local folder's ``config.json`` (read as data, no model loaded),
    else transformers' ``AutoConfig`` (the hub's config).

    Parameters
    ----------
    model_type : str
        A local folder or hub name (:attr:`Backbone.model_type`).
    """
    from vqalib.core.io import read_json

    local = Path(model_type).expanduser() / "config.json"
    found = read_json(local) if local.is_file() else None
    if isinstance(found, dict) and type(found.get("num_hidden_layers")) is int:
        return found["num_hidden_layers"]
    from transformers import AutoConfig

    return int(AutoConfig.from_pretrained(model_type).num_hidden_layers)


def check_layers(backbone: Backbone) -> None:
    """Refuse a layer the backbone does not have, naming ``VQALIB_BERTSCORE_LAYERS`` (or ``num_layers``) and the range
    (a :class:`vqalib.core.config.SettingError`; bert-score would stop on an assertion).

    Parameters
    ----------
    backbone : Backbone
    """
    if backbone.num_layers is None:
        return
    count = layer_count(backbone.model_type)
    if not 1 <= backbone.num_layers <= count:
        name = BERTSCORE_LAYERS_ENV if config.get(BERTSCORE_LAYERS_ENV) == str(backbone.num_layers) else "num_layers"
        error = config.SettingError if name == BERTSCORE_LAYERS_ENV else ValueError
        raise error(f"{name}={str(backbone.num_layers)!r}: expected a whole number from 1 to {count}, the layers of "
                    f"the BERTScore backbone {backbone.label.split(' (')[0]}")


def bertscore_f1(references: list[str], candidates: list[str], *, backbone: Backbone,
                 batch_size: int = 64) -> np.ndarray:
    """BERTScore F1 per aligned pair, float64 and rounded, so scores are the same on every CPU and batch split;
    bert-score's own steps, but texts batched by token count, not word count (which padded 63% more tokens)."""
    if not references:
        return np.array([], dtype=float)
    check_layers(backbone)  # a hub backbone's layer count is known once its config is read
    import torch
    from bert_score import BERTScorer
    from bert_score.utils import get_bert_embedding, greedy_cos_idf, sent_encode
    from torch.nn.utils.rnn import pad_sequence

    scorer = BERTScorer(model_type=backbone.model_type, num_layers=backbone.num_layers,
                        use_fast_tokenizer=True, lang="en")
    model, tokenizer = scorer._model.double(), scorer._tokenizer
    idf = {tokenizer.sep_token_id: 0.0, tokenizer.cls_token_id: 0.0}  # bert-score's weights without IDF
    weights = collections.defaultdict(lambda: 1.0, idf)
    # by token count (little padding); alphabetical among equal counts, so batches do not depend on set order
    texts = sorted(set(references) | set(candidates))
    texts.sort(key=lambda text: len(sent_encode(tokenizer, text)))
    stats: dict[str, tuple] = {}
    with torch.no_grad():
        for start in range(0, len(texts), batch_size):
            batch = texts[start:start + batch_size]
            embeddings, masks, padded_idf = get_bert_embedding(batch, model, tokenizer, weights, device=scorer.device)
            for i, text in enumerate(batch):
                n = int(masks[i].sum().item())
                stats[text] = (embeddings[i, :n].cpu(), padded_idf[i, :n].cpu())

        def padded(batch: list[str]) -> tuple:
            emb, weight = zip(*(stats[t] for t in batch))
            lengths = torch.tensor([len(e) for e in emb])
            mask = torch.arange(int(lengths.max())).expand(len(batch), -1) < lengths.unsqueeze(1)
            return pad_sequence(emb, batch_first=True, padding_value=2.0), mask, pad_sequence(weight, batch_first=True)

        f1 = [greedy_cos_idf(*padded(references[i:i + batch_size]), *padded(candidates[i:i + batch_size]),
                             False)[2] for i in range(0, len(references), batch_size)]
    return np.round(torch.cat(f1).numpy().astype(float), DECIMALS)
