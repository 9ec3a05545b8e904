"""The fine-tuned sentence classifier (VizWiz-LF §4, A.2.2, Tables 9-10): MiniLM's top layers, a multi-label head.

Input: the sentence paired with its question and neighbouring sentences. Training (float32) is not bit-reproducible
across machines, so its weights are committed as float16 safetensors; inference runs in float64 and rounds
probabilities, so labels agree on every CPU."""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

from vqalib.core import config
from vqalib.core.encoders import DECIMALS, model_identity
from vqalib.core.io import write_atomic
from vqalib.papers.vizwiz_lf import taxonomy
from vqalib.papers.vizwiz_lf.classifier import MODEL_DIR, UNTRUSTED_SOURCES
from vqalib.papers.vizwiz_lf.classifier_features import label_matrix

LABELS: tuple[str, ...] = (*taxonomy.ROLES, *taxonomy.INFO_SOURCES)
N_ROLES = len(taxonomy.ROLES)
FINETUNED_DIR = MODEL_DIR / "finetuned"
WEIGHTS_FILE = "vizwiz-lf_sentence_classifier.safetensors"
SETTINGS: dict = dict(top=6, epochs=4, lr=5e-5, head_lr=1e-3, batch=32, max_length=128, weight_decay=0.01,
                      warmup=0.1, dropout=0.1, n_splits=5, seed=0)


def pair_texts(units: pd.DataFrame) -> tuple[list[str], list[str]]:
    """Segment A (the sentence) and segment B (question, previous and next sentence) of each sentence unit, in order."""
    units = units.reset_index(drop=True)
    sentence = units["sentence"].tolist()
    order = units.sort_values(["answer_id", "sentence_index"], kind="stable").index.to_numpy()
    answer = units["answer_id"].to_numpy()
    previous, following = ["(start)"] * len(units), ["(end)"] * len(units)
    for a, b in zip(order[:-1], order[1:]):
        if answer[a] == answer[b]:
            previous[b], following[a] = sentence[a], sentence[b]
    context = [f"{q} [SEP] {p} [SEP] {n}" for q, p, n in zip(units["question"], previous, following)]
    return sentence, context


def _tokens(units: pd.DataFrame, *, max_length: int) -> tuple[list[list[int]], list[list[int]], np.ndarray]:
    """Token ids, segment ids and lengths of the sentence pairs."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_identity(None)[0])
    first, second = pair_texts(units)
    encoded = tokenizer(first, second, truncation="longest_first", max_length=max_length)
    ids, types = encoded["input_ids"], encoded["token_type_ids"]
    return ids, types, np.array([len(x) for x in ids])


def _base():
    """The packaged all-MiniLM-L6-v2 (transformers model, float32, eval mode)."""
    from transformers import AutoModel

    config.set_default("HF_HUB_OFFLINE", "1")
    return AutoModel.from_pretrained(model_identity(None)[0]).eval()


def _run_layers(layers, h, mask):
    """Run transformer ``layers`` over hidden states ``h`` with padding ``mask``."""
    import torch

    extended = (1.0 - mask[:, None, None, :].to(h.dtype)) * torch.finfo(h.dtype).min
    for layer in layers:
        out = layer(h, attention_mask=extended)
        h = out[0] if isinstance(out, tuple) else out
    return h


def _network(base, *, top: int, dropout: float):
    """The trainable part: copies of the base's top ``top`` layers and a linear head over [CLS] + sentence mean."""
    import torch

    class SentenceNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            n = len(base.encoder.layer)
            self.layers = torch.nn.ModuleList([copy.deepcopy(base.encoder.layer[i]) for i in range(n - top, n)])
            self.drop = torch.nn.Dropout(dropout)
            width = base.config.hidden_size
            self.out = torch.nn.Linear(2 * width, len(LABELS))

        def forward(self, h, mask, segment):
            h = _run_layers(self.layers, h, mask)
            sentence = (h * segment.unsqueeze(-1)).sum(1) / segment.sum(1, keepdim=True).clamp(min=1)
            return self.out(self.drop(torch.cat([h[:, 0], sentence], 1)))

    return SentenceNet()


class _Inputs:
    """Frozen-part states of every sentence pair (computed once), batched with padding."""

    def __init__(self, units: pd.DataFrame, *, base, top: int, max_length: int, dtype, batch_size: int = 64):
        import torch

        self.ids, self.types, self.lengths = _tokens(units, max_length=max_length)
        self.dtype = dtype
        base = base.to(dtype)
        frozen = base.encoder.layer[:len(base.encoder.layer) - top]
        self.states = [None] * len(self.ids)
        with torch.inference_mode():
            for rows in self.batches(np.arange(len(self.ids)), batch_size):
                ids, types, mask = self._pad(rows)
                h = _run_layers(frozen, base.embeddings(input_ids=ids, token_type_ids=types), mask)
                for k, r in enumerate(rows):
                    self.states[r] = h[k, :self.lengths[r]].clone()

    def _pad(self, rows):
        import torch

        width = int(self.lengths[rows].max())
        ids = torch.zeros(len(rows), width, dtype=torch.long)
        types = torch.zeros(len(rows), width, dtype=torch.long)
        mask = torch.zeros(len(rows), width, dtype=torch.long)
        for k, r in enumerate(rows):
            n = self.lengths[r]
            ids[k, :n], types[k, :n], mask[k, :n] = torch.tensor(self.ids[r]), torch.tensor(self.types[r]), 1
        return ids, types, mask

    def batch(self, rows):
        """(states, mask, sentence-token indicator) of ``rows``, padded to the longest."""
        import torch

        width = int(self.lengths[rows].max())
        h = torch.zeros(len(rows), width, self.states[rows[0]].shape[-1], dtype=self.dtype)
        mask = torch.zeros(len(rows), width, dtype=torch.long)
        segment = torch.zeros(len(rows), width, dtype=self.dtype)
        for k, r in enumerate(rows):
            n = self.lengths[r]
            h[k, :n], mask[k, :n] = self.states[r], 1
            segment[k, 1:n] = torch.tensor(self.types[r][1:]) == 0  # the sentence's tokens and its [SEP]
        return h, mask, segment

    def batches(self, rows, size: int, rng: np.random.Generator | None = None) -> list[np.ndarray]:
        """Batches of similar length; shuffled (sorted within chunks of 50 batches) when ``rng`` is given."""
        rows = np.asarray(rows)
        if rng is None:
            rows = rows[np.argsort(self.lengths[rows], kind="stable")]
            return [rows[i:i + size] for i in range(0, len(rows), size)]
        rows = rows[rng.permutation(len(rows))]
        chunks = [rows[i:i + size * 50] for i in range(0, len(rows), size * 50)]
        rows = np.concatenate([c[np.argsort(self.lengths[c], kind="stable")] for c in chunks])
        out = [rows[i:i + size] for i in range(0, len(rows), size)]
        return [out[i] for i in rng.permutation(len(out))]


def _train(inputs: _Inputs, truth: np.ndarray, rows: np.ndarray, *, base, settings: dict, echo=None):
    """Train a network on ``rows`` (float32, seeded); returns it in eval mode."""
    import torch

    torch.manual_seed(settings["seed"])
    net = _network(base, top=settings["top"], dropout=settings["dropout"])
    optimiser = torch.optim.AdamW([{"params": net.layers.parameters(), "lr": settings["lr"]},
                                   {"params": net.out.parameters(), "lr": settings["head_lr"]}],
                                  weight_decay=settings["weight_decay"])
    steps = settings["epochs"] * int(np.ceil(len(rows) / settings["batch"]))
    warm = settings["warmup"] * steps
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda s: min(1.0, (s + 1) / warm) * max(0.0, (steps - s) / steps))
    loss_fn = torch.nn.BCEWithLogitsLoss()
    target = torch.from_numpy(truth.astype(np.float32))
    rng = np.random.default_rng(settings["seed"])
    start = time.perf_counter()
    for epoch in range(settings["epochs"]):
        net.train()
        total = 0.0
        for batch in inputs.batches(rows, settings["batch"], rng):
            loss = loss_fn(net(*inputs.batch(batch)), target[batch])
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            schedule.step()
            total += loss.item() * len(batch)
        if echo:
            echo(f"  epoch {epoch + 1}/{settings['epochs']}: loss {total / len(rows):.4f}, "
                 f"{time.perf_counter() - start:.0f} s")
    return net.eval()


def _probabilities(net, inputs: _Inputs, rows: np.ndarray, *, batch_size: int = 32) -> np.ndarray:
    """Unrounded float64 sigmoid outputs of ``net`` on ``rows``; batches of 32 pad less than larger ones."""
    import torch

    out = np.zeros((len(rows), len(LABELS)))
    position = {r: k for k, r in enumerate(rows)}
    with torch.inference_mode():
        for batch in inputs.batches(rows, batch_size):
            p = torch.sigmoid(net(*inputs.batch(batch))).double().numpy()
            out[[position[r] for r in batch]] = p
    return out


def decide(probabilities: np.ndarray) -> np.ndarray:
    """0/1 labels from :data:`LABELS` probabilities: 0.5 per label, at least one role per sentence."""
    out = (np.asarray(probabilities) >= 0.5).astype(int)
    roles = out[:, :N_ROLES]
    empty = roles.sum(axis=1) == 0
    roles[empty, np.asarray(probabilities)[empty, :N_ROLES].argmax(axis=1)] = 1
    return out


def truth_matrix(units: pd.DataFrame) -> np.ndarray:
    """The released roles and information sources of ``units`` as one 0/1 matrix in :data:`LABELS` order."""
    return np.hstack([label_matrix(units, kind="role"), label_matrix(units, kind="info")])


# --- the committed model: save, load, predict ---------------------------------------------------

def _training_inputs(units: pd.DataFrame, *, settings: dict, what: str):
    """The base model (float32) and the frozen-part states of ``units`` for training (a declared model call)."""
    import torch

    config.model_call(f"fine-tuning all-MiniLM-L6-v2 on {what}")
    base = _base()
    return base, _Inputs(units, base=base, top=settings["top"], max_length=settings["max_length"], dtype=torch.float32)


def fit(units: pd.DataFrame, *, settings: dict = SETTINGS, echo=print):
    """Train the final network (float32, eval mode) on every trusted release sentence: the committed model."""
    units = units.reset_index(drop=True)
    trusted = np.flatnonzero(~units["source"].isin(UNTRUSTED_SOURCES).to_numpy())
    base, inputs = _training_inputs(units, settings=settings, what=f"{len(trusted)} sentences")
    echo(f"final model: training on {len(trusted)} sentences")
    return _train(inputs, truth_matrix(units), trusted, base=base, settings=settings, echo=echo)


def save(net, path: Path, *, metadata: dict) -> Path:
    """Write the trained layers and head as float16 safetensors with ``metadata`` (JSON) in the header; returns
    ``path``."""
    from safetensors.torch import save as to_bytes

    tensors = {name: value.detach().to("cpu").half().contiguous() for name, value in net.state_dict().items()}
    return write_atomic(Path(path), to_bytes(tensors, metadata={"vqalib": json.dumps(metadata, sort_keys=True)}))


def read_metadata(path: Path = FINETUNED_DIR / WEIGHTS_FILE) -> dict:
    """The settings, times and scores :func:`save` wrote into a weights file's header (no tensor is read); a file whose
    bytes are not those recorded at training is refused first (``classifier_io.verify_recorded``)."""
    from safetensors import safe_open

    from vqalib.papers.vizwiz_lf.classifier_io import verify_recorded

    verify_recorded(Path(path))
    with safe_open(str(path), framework="np") as handle:  # the header only: no torch import (about 2 s)
        return json.loads((handle.metadata() or {}).get("vqalib", "{}"))


def load(path: Path = FINETUNED_DIR / WEIGHTS_FILE):
    """``(network, metadata)`` of a file written by :func:`save`, the network in float64 and eval mode for inference."""
    metadata = read_metadata(path)  # first: a changed committed file is refused before torch is imported
    import torch
    from safetensors.torch import load as from_bytes

    data = Path(path).read_bytes()
    settings = metadata.get("settings", SETTINGS)
    net = _network(_base(), top=settings["top"], dropout=settings["dropout"])
    state = {name: value.to(torch.float64) for name, value in from_bytes(data).items()}
    net.load_state_dict(state)
    return net.to(torch.float64).eval(), metadata


def predict_proba(units: pd.DataFrame, *, model=None) -> np.ndarray:
    """Probabilities of :data:`LABELS` from the committed model (or ``model``, :func:`load`'s result), float64 and
    rounded: the same on every CPU."""
    import torch

    units = units.reset_index(drop=True)
    if not len(units):
        return np.zeros((0, len(LABELS)))
    net, metadata = model if model is not None else load()
    settings = metadata.get("settings", SETTINGS)
    config.model_call(f"fine-tuned sentence classifier on {len(units)} sentences")
    inputs = _Inputs(units, base=_base(), top=settings["top"], max_length=settings["max_length"],
                     dtype=torch.float64)
    return np.round(_probabilities(net, inputs, np.arange(len(units))), DECIMALS)


