"""`make bench`: the model-work floor, cold and warm `make reproduce` per notebook and per cell (wall and CPU
seconds, peak memory) with the ratio cold / floor, and the embedding service's throughput at 1k / 5k / 20k texts
with its speed-up over one text per pass.

Floor: the first stage of ``vqalib reproduce`` (``vqalib.compendium.model_work``) on empty caches, its steps one
after another in one process with every core, with the time inside each model call summed (forward passes, metric
pairs, NER, CommVQA's METEOR): what no schedule can skip. ``vqalib reproduce`` itself runs the steps on one worker
per core (the cold line gives that stage's time too).

Cold: every cache emptied (a fresh ``VQALIB_CACHE_DIR``), set-up and data excluded (``.venv`` and
``data/raw`` exist); the committed fitted artefacts (``data/models/``: the classifiers and their
cross-validation results) are read, as a fresh clone reads them. From scratch: cold, and the committed
cross-validation results refitted too (``VQALIB_REFIT=1``). Warm: the cold run again, with
``VQALIB_NO_MODEL_CALLS=1``, so it fails if any model forward pass or fit is not served from the
caches. After each, ``git status`` of ``figures/`` and
``notebooks/`` must be clean (the figures byte-identical to the committed ones). Run from the checkout:

    python benchmarks/reproduce_bench.py [--skip-reproduce] [--no-from-scratch] [--sizes 1000 5000 20000]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

EMBED_SCRIPT = """
import json, resource, sys, time
import pandas as pd
from vqalib.core import encoders
from vqalib.papers.commvqa.loading import load_commvqa
from vqalib.papers.vizwiz_lf.loading import load_vizwiz_lf
n, one_by_one, cache = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
viz = load_vizwiz_lf()
comm = load_commvqa()
texts = list(dict.fromkeys([*viz.sentences["sentence"].astype(str), *comm.answers["answer"].astype(str),
                            *comm.results["generated_answer"].dropna().astype(str),
                            *comm.annotations["question"].astype(str)]))
if len(texts) < n:
    raise SystemExit(f"only {len(texts)} distinct texts in the releases, fewer than {n}")
texts = texts[:n]
encoders.embed(["warm-up: load the model"], cache_dir=cache + "/warm-up", progress=False)
start = time.perf_counter()
encoders.embed(texts, cache_dir=cache, progress=False, **({"batch_size": 1} if one_by_one else {}))
cold = time.perf_counter() - start
start = time.perf_counter()
encoders.embed(texts, cache_dir=cache, progress=False)
cached = time.perf_counter() - start
print(json.dumps({"n": n, "cold": cold, "cached": cached,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


FLOOR_SCRIPT = """
import functools, json, sys, time
from vqalib.core import encoders
from vqalib.core.metrics import cache as metric_cache, meteor
from vqalib.papers.commvqa import entities
spent, depth = {}, [0]
def timed(owner, name, label):
    inner = getattr(owner, name)
    @functools.wraps(inner)
    def wrapper(*args, **kwargs):
        depth[0] += 1
        start = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            depth[0] -= 1
            if depth[0] == 0:  # the outermost model call only (METEOR inside a metric call is counted once)
                spent[label] = spent.get(label, 0.0) + time.perf_counter() - start
    setattr(owner, name, wrapper)
timed(encoders, "_encode", "sentence embeddings")
timed(metric_cache, "_score_texts", "metric pairs (PTB tokenizer, ROUGE-L, both METEORs, BERTScore)")
timed(entities, "_entities", "named entities (spaCy)")
timed(meteor.MeteorSession, "statistics", "CommVQA Table 1 METEOR pairs")
from vqalib.compendium import model_work
start = time.perf_counter()
steps = model_work.fill_caches(echo=lambda line: None)
print(json.dumps({"stage": time.perf_counter() - start, "steps": steps, "floor": spent}))
"""


def floor() -> dict:
    """The model work that cannot be skipped, timed inside the first stage of `vqalib reproduce` on empty caches:
    each distinct text's forward pass, the metric pairs (BERTScore, METEOR in one JVM per call), the NER pass and
    CommVQA Table 1's METEOR pairs; the committed cross-validation results are read, as a fresh clone reads them."""
    with tempfile.TemporaryDirectory(prefix="vqalib-floor-") as cache:
        out = subprocess.run([sys.executable, "-c", FLOOR_SCRIPT], cwd=ROOT, env={**os.environ, "VQALIB_CACHE_DIR": cache},
                             check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def git_dirty() -> list[str]:
    out = subprocess.run(["git", "status", "--porcelain", "figures", "notebooks"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    return [line for line in out.splitlines() if line.strip()]


def reproduce(cache: Path, *, forbid_model_calls: bool = False, refit: bool = False) -> tuple[float, dict, float | None]:
    env = {**os.environ, "VQALIB_CACHE_DIR": str(cache),
           **({"VQALIB_NO_MODEL_CALLS": "1"} if forbid_model_calls else {}), **({"VQALIB_REFIT": "1"} if refit else {})}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "vqalib", "reproduce"], cwd=ROOT, env=env, check=True,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    seconds = time.perf_counter() - start
    times = json.loads((ROOT / "build" / "reproduce_times.json").read_text(encoding="utf-8"))
    stage = re.search(r"model work: every step done in ([\d.]+) s", done.stdout)
    return seconds, {name: times[name] for name in sorted(times) if (ROOT / "notebooks" / f"{name}.ipynb").exists()}, \
        (float(stage.group(1)) if stage else None)


class _Echoed(list):
    """A list of result lines that prints each line as it is added."""

    def append(self, line: str) -> None:
        print(line, file=sys.stderr, flush=True)
        super().append(line)

    def __iadd__(self, lines):
        for line in lines:
            self.append(line)
        return self


def reproduce_lines(*, from_scratch: bool = True) -> list[str]:
    """Cold (every cache emptied; the committed fitted artefacts of data/models/ read, as a fresh clone
    reads them), then warm, then, with ``from_scratch``, cold again with the committed cross-validation
    results ignored (``VQALIB_REFIT=1``): every model call of the compendium made."""
    measured = floor()
    work = sum(measured["floor"].values())
    lines = _Echoed()  # each line printed as it is measured: a later failure does not lose it
    lines += [f"model-work floor: {work:.0f} s (" + ", ".join(f"{k} {v:.0f} s" for k, v in measured["floor"].items())
             + f"); the first stage of `vqalib reproduce` around it, its steps one after another in one process: "
             f"{measured['stage']:.0f} s ("
             + ", ".join(f"{k} {v:.0f} s" for k, v in measured["steps"].items()) + ")"]
    runs = [("cold (caches emptied)", {}), ("warm (VQALIB_NO_MODEL_CALLS=1: any model call would fail the run)",
                                        {"forbid_model_calls": True})]
    if from_scratch:
        runs.append(("from scratch (caches emptied and VQALIB_REFIT=1: the committed cross-validation results of "
                     "data/models/cv/ refitted too)", {"refit": True}))
    with tempfile.TemporaryDirectory(prefix="vqalib-cache-") as cache, \
            tempfile.TemporaryDirectory(prefix="vqalib-cache-") as scratch:
        for label, options in runs:
            seconds, times, stage = reproduce(Path(scratch if options.get("refit") else cache), **options)
            dirty = git_dirty()
            if label.startswith("cold"):  # the schedule of a fresh clone's first `make reproduce` (vqalib.compendium.reproduce)
                (ROOT / "benchmarks" / "reproduce_times.json").write_text(json.dumps(
                    {k: {key: v.get(key) for key in ("seconds", "cpu_seconds", "cells", "cells_cpu")}
                     for k, v in sorted(times.items())}, indent=1) + "\n", encoding="utf-8")
            per = ", ".join(f"{name} {t['seconds']:.0f} s wall / {t.get('cpu_seconds', 0):.0f} s CPU / {t['peak_mb']:.0f} MB"
                            for name, t in sorted(times.items()))
            ratio = f"; {seconds / work:.2f} x the floor" if label.startswith("cold") and work else ""
            if stage is not None:  # the first stage ran (cold): its steps on one worker per core
                ratio += f"; its first stage (the model work, on one worker per core) {stage:.0f} s"
            lines.append(f"`make reproduce` {label}: {seconds:.0f} s wall{ratio} ({per}); figures and notebooks "
                         + ("byte-identical to the committed ones" if not dirty else f"CHANGED: {dirty}"))
            lines.append("  its slowest cells (wall / CPU s): " + "; ".join(
                f"{name} " + ", ".join(f"cell {i + 1} {c:.1f}/{cpu[i] if i < len(cpu) else float('nan'):.1f}"
                                       for i, c in sorted(enumerate(t.get("cells") or []), key=lambda x: -x[1])[:3])
                for name, t in sorted(times.items()) for cpu in [t.get("cells_cpu") or []]))
    return lines


def _embed(n: int, *, one_by_one: bool) -> dict:
    with tempfile.TemporaryDirectory(prefix="vqalib-embed-") as cache:
        out = subprocess.run([sys.executable, "-c", EMBED_SCRIPT, str(n), str(int(one_by_one)), cache], cwd=ROOT,
                             check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def embed_lines(sizes: list[int]) -> list[str]:
    if not sizes:  # `--sizes` with none: the embedding service is not measured
        return []
    lines, runs = [], {n: _embed(n, one_by_one=False) for n in sizes}
    for n, r in runs.items():
        lines.append(f"embedding service, {n} distinct texts: {r['cold']:.1f} s cold ({n / r['cold']:.0f} texts/s, "
                     f"length-bucketed batches), {r['cached']:.2f} s cached, peak RSS {r['peak_mb']:.0f} MB")
    n = sizes[0]
    one = _embed(n, one_by_one=True)
    lines.append(f"embedding service, {n} texts one per pass (batch size 1): {one['cold']:.1f} s; batching is "
                 f"{one['cold'] / runs[n]['cold']:.1f}x faster, with identical values (float64, rounded: "
                 "vqalib.core.encoders)")
    return lines


def run(*, sizes: list[int] = (1000, 5000, 20000), skip_reproduce: bool = False,
        from_scratch: bool = True) -> list[str]:
    return [*([] if skip_reproduce else reproduce_lines(from_scratch=from_scratch)), *embed_lines(list(sizes))]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-reproduce", action="store_true")
    parser.add_argument("--sizes", type=int, nargs="*", default=[1000, 5000, 20000])
    parser.add_argument("--no-from-scratch", action="store_true", help="skip the cold run with VQALIB_REFIT=1")
    args = parser.parse_args()
    import platform
    from datetime import datetime, timezone

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    lines = run(sizes=args.sizes, skip_reproduce=args.skip_reproduce, from_scratch=not args.no_from_scratch)
    lines.append(f"code at `{commit or 'unknown'}`; load average (1, 5, 15 min) {load_before} at the start, "
                 + " ".join(f"{x:.2f}" for x in os.getloadavg()) + " at the end (this run's own work included)")
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    print(f"machine: {machine}\n" + "\n".join(lines))
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    with open(ROOT / "benchmarks" / "results.md", "a", encoding="utf-8") as out:
        out.write(f"\n## {stamp} ({machine}): reproduce_bench.py\n\n" + "".join(f"- {line}\n" for line in lines))
