"""CommVQA Table 1 timings, called from ``benchmarks/bench.py``.

``run()`` scores the four released result files (IDEFICS and BLIP-2, baseline and
contextual; 1,215 questions each) under both protocols, each with its own PTB tokenizer
pass and METEOR JVM as ``vqalib.papers.commvqa.table1.score_protocol`` does by default, and returns
one line per measurement naming the machine. Goal: both protocols together under 90 s on 2 cores.
Run alone: ``.venv/bin/python benchmarks/commvqa_bench.py``.
"""

from __future__ import annotations

import os
import platform
import time

GOAL_SECONDS = 90.0


def run() -> list[str]:
    """Time loading + validation and Table 1 under the authors' and the corrected protocol."""
    from vqalib.papers.commvqa import loading, names, table1

    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    load_average = os.getloadavg()[0]  # the 2 cores may be shared: say how busy they were
    start = time.perf_counter()
    data = loading.load_commvqa()
    load = time.perf_counter() - start
    seconds = {}
    for protocol in names.PROTOCOLS:
        start = time.perf_counter()
        table1.score_protocol(data.results, protocol=protocol, n_resamples=1000, seed=0, progress=False)
        seconds[protocol] = time.perf_counter() - start
    total = sum(seconds.values())
    n_rows = data.results.groupby("file").size()
    return [
        f"CommVQA load + validate (annotations + 4 result files): {load:.2f} s ({machine})",
        f"CommVQA Table 1, authors' protocol (4 files x {n_rows.iloc[0]} rows, 3 x 80% subsets, 5 metrics): "
        f"{seconds['authors']:.1f} s",
        f"CommVQA Table 1, corrected protocol (all rows + 1000 bootstrap resamples): {seconds['corrected']:.1f} s",
        f"CommVQA Table 1, both protocols: {total:.1f} s (goal < {GOAL_SECONDS:.0f} s on 2 cores; "
        f"load average at start {load_average:.1f}) ({machine})",
    ]


if __name__ == "__main__":
    print("\n".join(run()))
