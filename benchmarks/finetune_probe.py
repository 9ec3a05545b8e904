"""Probe (VizWiz-LF Tables 9-10): does fine-tuning the packaged all-MiniLM-L6-v2 beat the committed classifier?

One multi-label head for roles and information sources over [CLS] + the mean of the sentence's tokens, the
sentence as segment A and its context (question, previous and next sentence; ``--context``) as segment B; the
bottom layers frozen and run once, the top ``--top`` layers and the head trained with AdamW (BCE, warm-up then
linear decay); GPT-4V not trained on but scored; thresholds 0.5 (a sentence with no role gets its most probable
one). Folds are the classifier's own (`question_folds`, seed 0). Prints weighted F1 per fold, all sources and
without GPT-4V; nothing is written. An exploration, not the project's classifier; results in
benchmarks/results.md.

    .venv/bin/python benchmarks/finetune_probe.py --folds 0 --top 4 --epochs 4 --lr 5e-5
"""
import argparse
import time

import numpy as np
import torch
from sklearn.metrics import f1_score
from transformers import AutoModel, AutoTokenizer

from vqalib.core.encoders import packaged_minilm_path
from vqalib.papers.vizwiz_lf.classifier import UNTRUSTED_SOURCES, question_folds
from vqalib.papers.vizwiz_lf.classifier_features import label_matrix, sentence_units
from vqalib.papers.vizwiz_lf.loading import load_vizwiz_lf

p = argparse.ArgumentParser()
p.add_argument("--top", type=int, default=2)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--folds", default="0")
p.add_argument("--limit", type=int, default=0)
p.add_argument("--threads", type=int, default=2)
p.add_argument("--lr", type=float, default=1e-4)
p.add_argument("--batch", type=int, default=32)
p.add_argument("--maxlen", type=int, default=128)
p.add_argument("--context", default="qpn", help="q: question, p: previous, n: next, a: whole answer")
args = p.parse_args()
torch.set_num_threads(args.threads)
torch.manual_seed(0)

data = load_vizwiz_lf()
units = sentence_units(data.sentences, data.answers).reset_index(drop=True)
roles = label_matrix(units, kind="role")
info = label_matrix(units, kind="info")
Y = np.hstack([roles, info]).astype(np.float32)
nr = roles.shape[1]
folds = question_folds(units, n_splits=5, seed=0)
trusted = ~units["source"].isin(UNTRUSTED_SOURCES).to_numpy()

# neighbours
order = units.sort_values(["answer_id", "sentence_index"], kind="stable").index.to_numpy()
prev = [""] * len(units)
nxt = [""] * len(units)
ans = units["answer_id"].to_numpy()
for a, b in zip(order[:-1], order[1:]):
    if ans[a] == ans[b]:
        prev[b] = units.at[a, "sentence"]
        nxt[a] = units.at[b, "sentence"]
whole = units.groupby("answer_id")["sentence"].transform(lambda s: " ".join(s)).tolist()
second = []
for i in range(len(units)):
    parts = []
    if "q" in args.context:
        parts.append(units.at[i, "question"])
    if "p" in args.context:
        parts.append(prev[i] or "(start)")
    if "n" in args.context:
        parts.append(nxt[i] or "(end)")
    if "a" in args.context:
        parts.append(whole[i])
    second.append(" [SEP] ".join(parts))

path = packaged_minilm_path()
tok = AutoTokenizer.from_pretrained(path)
enc = tok(units["sentence"].tolist(), second, truncation="longest_first", max_length=args.maxlen)
ids, types = enc["input_ids"], enc["token_type_ids"]
lengths = np.array([len(x) for x in ids])
print("tokens mean", lengths.mean(), "max", lengths.max(), flush=True)

base = AutoModel.from_pretrained(path).eval()
n_layers = len(base.encoder.layer)
frozen = n_layers - args.top


def batches(rows, size, shuffle, rng=None):
    rows = np.asarray(rows)
    if shuffle:
        rows = rows[rng.permutation(len(rows))]
        # bucket by length within chunks of 50 batches
        chunks = [rows[i:i + size * 50] for i in range(0, len(rows), size * 50)]
        rows = np.concatenate([c[np.argsort(lengths[c], kind="stable")] for c in chunks])
        bs = [rows[i:i + size] for i in range(0, len(rows), size)]
        return [bs[i] for i in rng.permutation(len(bs))]
    rows = rows[np.argsort(lengths[rows], kind="stable")]
    return [rows[i:i + size] for i in range(0, len(rows), size)]


def pad(rows):
    L = lengths[rows].max()
    input_ids = torch.zeros(len(rows), L, dtype=torch.long)
    tt = torch.zeros(len(rows), L, dtype=torch.long)
    mask = torch.zeros(len(rows), L, dtype=torch.long)
    for k, r in enumerate(rows):
        n = lengths[r]
        input_ids[k, :n] = torch.tensor(ids[r])
        tt[k, :n] = torch.tensor(types[r])
        mask[k, :n] = 1
    return input_ids, tt, mask


def run_layers(layers, h, mask):
    ext = (1.0 - mask[:, None, None, :].to(h.dtype)) * torch.finfo(h.dtype).min
    for layer in layers:
        out = layer(h, attention_mask=ext)
        h = out[0] if isinstance(out, tuple) else out
    return h


# frozen part once
t0 = time.perf_counter()
frozen_h = [None] * len(units)
rows_all = np.arange(len(units)) if not args.limit else np.random.default_rng(0).choice(len(units), args.limit, replace=False)
with torch.inference_mode():
    for rows in batches(rows_all, 64, False):
        input_ids, tt, mask = pad(rows)
        h = base.embeddings(input_ids=input_ids, token_type_ids=tt)
        h = run_layers(base.encoder.layer[:frozen], h, mask)
        for k, r in enumerate(rows):
            frozen_h[r] = h[k, :lengths[r]].clone()
print(f"frozen pass {time.perf_counter() - t0:.1f} s", flush=True)


class Head(torch.nn.Module):
    def __init__(self):
        super().__init__()
        import copy
        self.layers = torch.nn.ModuleList([copy.deepcopy(base.encoder.layer[i]) for i in range(frozen, n_layers)])
        self.drop = torch.nn.Dropout(0.1)
        self.out = torch.nn.Linear(384 * 2, Y.shape[1])

    def forward(self, rows):
        L = lengths[rows].max()
        h = torch.zeros(len(rows), L, 384)
        mask = torch.zeros(len(rows), L, dtype=torch.long)
        seg = torch.zeros(len(rows), L)
        for k, r in enumerate(rows):
            n = lengths[r]
            h[k, :n] = frozen_h[r]
            mask[k, :n] = 1
            seg[k, 1:n] = torch.tensor(types[r][1:], dtype=torch.float32) == 0  # sentence tokens (+ its SEP)
        h = run_layers(self.layers, h, mask)
        sent = (h * seg.unsqueeze(-1)).sum(1) / seg.sum(1, keepdim=True).clamp(min=1)
        cls = h[:, 0]
        return self.out(self.drop(torch.cat([cls, sent], 1)))


def decide(p):
    out = (p >= 0.5).astype(int)
    r = out[:, :nr]
    none = r.sum(1) == 0
    r[none, p[none, :nr].argmax(1)] = 1
    return out


def report(label, rows):
    """Weighted F1 (all sources, without GPT-4V) and per-label F1 of the out-of-fold predictions of ``rows``."""
    pred = decide(oof[rows])
    tr = trusted[rows]
    for name, cols in (("roles", slice(0, nr)), ("info", slice(nr, None))):
        a = f1_score(Y[rows][:, cols], pred[:, cols], average="weighted", zero_division=0)
        b = f1_score(Y[rows][tr][:, cols], pred[tr][:, cols], average="weighted", zero_division=0)
        per = f1_score(Y[rows][:, cols], pred[:, cols], average=None, zero_division=0)
        print(f"{label} {name}: all {a:.3f} trusted {b:.3f} per {np.round(per, 2)}", flush=True)


oof = np.full(Y.shape, np.nan)
for f in [int(x) for x in args.folds.split(",")]:
    train, test = folds[f]
    if args.limit:
        keep = set(rows_all.tolist())
        train = np.array([r for r in train if r in keep])
        test = np.array([r for r in test if r in keep])
    train = train[trusted[train]]
    torch.manual_seed(0)
    model = Head()
    opt = torch.optim.AdamW([{"params": model.layers.parameters(), "lr": args.lr},
                             {"params": model.out.parameters(), "lr": 1e-3}], weight_decay=0.01)
    steps = args.epochs * int(np.ceil(len(train) / args.batch))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / (0.1 * steps)) * max(0.0, (steps - s) / steps))
    lossf = torch.nn.BCEWithLogitsLoss()
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    for epoch in range(args.epochs):
        model.train()
        total = 0.0
        for rows in batches(train, args.batch, True, rng):
            loss = lossf(model(rows), torch.from_numpy(Y[rows]))
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += loss.item() * len(rows)
        print(f"fold {f} epoch {epoch} loss {total / len(train):.4f} {time.perf_counter() - t0:.0f} s", flush=True)
    model.eval()
    with torch.inference_mode():
        for rows in batches(test, 128, False):
            oof[rows] = torch.sigmoid(model(rows)).numpy()
    report(f"fold {f}", test)

done = ~np.isnan(oof).any(axis=1)
if len(args.folds.split(",")) > 1:  # pooled over the folds run (all five: the cross-validated score)
    report(f"pooled ({int(done.sum())} sentences)", done)
