"""`make bench` part: time the ratings loader (VizWiz-LF §6, Fig. 2) on large files full of errors.

``vqalib.papers.vizwiz_lf.ratings.load_ratings`` reports every problem of a file (file, line, column). A file of
10k, 25k and 100k rows is written with errors in about half of its rows — cross-row ones (a participant in two
groups, a question in two categories, an answer rated twice, ranks that are not 1, 2, 3), then, in a second file,
cell values (ratings out of range, unknown groups, non-integer and 23-digit question ids, empty ranks) — and each
is loaded once, counting the problems reported. The checks must grow linearly with the rows (they once took
112 s for 24k rows, a frame lookup per failing row). Goal: 100k rows in under 10 s on 2 cores.
Prints the lines and appends them to results.md; run alone: ``.venv/bin/python benchmarks/ratings_bench.py``.
"""

from __future__ import annotations

import csv
import os
import platform
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIZES = (10_000, 25_000, 100_000)
GOAL_SECONDS = 10.0


def design_error_rows(n: int) -> list[list[str]]:
    """``n`` rows of three-source blocks over the release's ids 1-600 with cross-row errors in about half."""
    from vqalib.papers.vizwiz_lf.ratings import CATEGORIES, GROUPS, SOURCES

    rows, block = [], 0
    while len(rows) < n:
        participant, question = f"P{block // 600:05d}", block % 600 + 1
        group = "S" if block % 7 == 3 else GROUPS[(block // 600) % 4]  # a second group for the participant
        category = CATEGORIES[(question + (block % 11 == 5)) % 4]  # a second category for the question
        sources = ["GPT-4V", "GPT-4V", "Expert"] if block % 5 == 2 else list(SOURCES)  # an answer rated twice
        ranks = ["1", "1", "3"] if block % 4 == 1 else ["1", "2", "3"]
        rows += [[participant, group, str(question), category, source, rank, "1", "2", "3", "1"]
                 for source, rank in zip(sources, ranks)]
        block += 1
    return rows[:n]


def value_error_rows(n: int) -> list[list[str]]:
    """The same rows with bad cell values in about half of them (found before the cross-row checks)."""
    rows = design_error_rows(n)
    for i, row in enumerate(rows):
        if i % 3 == 0:
            row[9] = "7"
        if i % 5 == 1:
            row[1] = "X"
        if i % 7 == 2:
            row[2] = "q12"
        if i % 11 == 5:
            row[2] = "12345678901234567890123"
        if i % 9 == 4:
            row[5] = ""
    return rows


def _time(path: Path, rows: list[list[str]]) -> tuple[float, int]:
    from vqalib.papers.vizwiz_lf.ratings import COLUMNS, RatingsFileError, load_ratings

    with open(path, "w", newline="", encoding="utf-8") as out:
        csv.writer(out).writerows([list(COLUMNS), *rows])
    start = time.perf_counter()
    try:
        load_ratings(path)
        problems = 0
    except RatingsFileError as error:
        problems = len(error.problems)
    return time.perf_counter() - start, problems


def run() -> list[str]:
    """Time the loader per size and kind of error; return the result lines."""
    from vqalib.papers.vizwiz_lf.loading import vizwiz_lf_question_ids

    vizwiz_lf_question_ids()  # read the release once, outside the timings
    load_average = os.getloadavg()[0]  # the 2 cores may be shared: say how busy they were
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        for kind, make in (("cross-row errors", design_error_rows), ("cell-value errors", value_error_rows)):
            for n in SIZES:
                seconds, problems = _time(Path(tmp) / f"ratings-{n}.csv", make(n))
                goal = f"; goal < {GOAL_SECONDS:.0f} s on 2 cores" if n == SIZES[-1] else ""
                lines.append(f"ratings loader, {n:,} rows with {kind}: {seconds:.2f} s, {problems:,} problems "
                             f"reported ({n / seconds:,.0f} rows/s{goal})")
    lines[-1] += f" (load average at start {load_average:.1f})"
    return lines


def main() -> None:
    """Run the timings alone, print them and append them to results.md."""
    lines = run()
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    with open(ROOT / "benchmarks" / "results.md", "a", encoding="utf-8") as out:
        out.write(f"\n## {stamp} ({machine}): ratings_bench.py\n\n" + "".join(f"- {line}\n" for line in lines))
    print(f"machine: {machine}")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
