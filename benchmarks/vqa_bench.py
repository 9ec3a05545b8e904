"""Answer-generation runner throughput: tiny test model on CPU, plain engine vs Ray local mode.

Reports records per second and the runner's own overhead per question (time beyond model
generation: image loading, prompt and record building, JSON encoding, append + flush +
fsync). Goal: under 5 ms per question beyond model time. For Ray, the one-off cluster and
replica start-up is reported apart and the per-question cost is the steady-state gap between
question starts on the replica minus its model time. Called by ``benchmarks/bench.py``; ``python benchmarks/vqa_bench.py``
prints the lines alone.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the tiny model is built from configs; never reach the hub
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # tiny_models: the tests' tiny random models

N_PLAIN = 60
N_RAY, RAY_WARMUP = 60, 5
GOAL_MS = 5.0


def _items(n: int, image: Path):
    import pandas as pd

    from vqalib.runner import questions

    return questions.table_items(pd.DataFrame({"question_id": [str(i) for i in range(n)],
                                         "question": [f"what is object {i}?" for i in range(n)],
                                         "image": [str(image)] * n}))


def run() -> list[str]:
    """Lines for benchmarks/results.md: plain (fsync and flush-only) and Ray local-mode throughput."""
    import numpy as np
    import pandas as pd
    import torch
    from PIL import Image

    import tiny_models  # registers tiny-blip
    from vqalib.runner import engines, handoff, models

    torch.set_num_threads(1)  # 2 shared cores: intra-op threads only contend
    lines = []
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        image = scratch / "red.png"
        Image.new("RGB", (40, 30), (200, 10, 10)).save(image)
        vlm = models.build_model("tiny-blip", device="cpu")
        engines.run_generation(_items(3, image), model=vlm, strategy="vanilla", dataset="bench",
                           out=scratch / "warmup.jsonl", progress=False)  # first generate() pays one-off costs
        for fsync in (True, False):
            summary = engines.run_generation(_items(N_PLAIN, image), model=vlm, strategy="vanilla", dataset="bench",
                                         out=scratch / f"plain_{fsync}.jsonl", progress=False, fsync=fsync)
            overhead = summary.overhead_ms_per_item
            lines.append(f"vqa runner, plain engine, tiny-blip CPU, {N_PLAIN} questions, "
                         f"{'append+flush+fsync' if fsync else 'append+flush (--no-fsync)'}: "
                         f"{summary.records / summary.seconds:.1f} records/s, model "
                         f"{1000 * summary.model_seconds / summary.written_items:.1f} ms/question, runner overhead "
                         f"{overhead:.2f} ms/question (goal < {GOAL_MS:.0f} ms: {'met' if overhead < GOAL_MS else 'NOT met'})")
        try:
            import ray
        except ImportError:
            lines.append("vqa runner, Ray engine: not run (ray is not installed; pip install 'ray[data]')")
            return lines
        for name in ("VQALIB_MODEL_PLUGINS", "PYTHONPATH"):  # the Ray replicas register tiny-blip too
            os.environ[name] = tiny_models.plugin_env()[name]
        start = time.perf_counter()
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        init = time.perf_counter() - start
        try:
            out = scratch / "ray.jsonl"
            start = time.perf_counter()
            engines.run_generation(_items(N_RAY, image), model="tiny-blip", strategy="vanilla", dataset="bench", out=out,
                               engine="ray", progress=False, replicas=1)
            total = time.perf_counter() - start
        finally:
            ray.shutdown()
        # steady state from the replica's own clock: gaps between question starts, past the warm-up questions
        table = handoff.load_run(out, finals_only=True).iloc[RAY_WARMUP:]
        stamps = pd.to_datetime(table["started_at"])
        starts = np.sort((stamps - stamps.min()).dt.total_seconds().to_numpy())
        gap = 1000 * float(np.diff(starts).mean())
        model = 1000 * float(table["model_seconds"].iloc[:-1].mean())
        overhead = gap - model
        lines.append(f"vqa runner, Ray Data local mode (1 CPU replica, 8 questions per call), tiny-blip, {N_RAY} questions: cluster start "
                     f"{init:.1f} s, run {total:.1f} s (replica start-up included); steady state "
                     f"{1000 / gap:.1f} records/s, {gap:.1f} ms/question of which model {model:.1f} ms, runner + Ray "
                     f"overhead {overhead:.2f} ms/question (goal < {GOAL_MS:.0f} ms: "
                     f"{'met' if overhead < GOAL_MS else 'NOT met'})")
    return lines


if __name__ == "__main__":
    for line in run():
        print(line)
