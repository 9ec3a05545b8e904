"""`make bench` part: time `vqalib score` on one model's 600 VizWiz-LF answers, cold and warm, on this machine.

The answers are LLaVA's released answers with one sentence added to each, so every text is new to the caches and to
the classifier (a released answer would be served its out-of-fold labels). Three runs of the real command:

- cold: an empty cache folder (VQALIB_CACHE_DIR), without the paired comparison (--no-compare), so every embedding,
  metric score and BERTScore of the model's pairs is computed;
- with the paired comparison, in the shared cache (as after `make reproduce`), which serves the released models'
  scores (and this model's, when an earlier benchmark run left them);
- warm: the same command again (every score from the cache).

Goals (2 cores): cold <= 60 s without a judge, warm <= 5 s. Prints the lines and appends them to results.md.
"""

from __future__ import annotations

import os
import platform
import subprocess
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VQALIB = ROOT / ".venv" / "bin" / "vqalib"


def _answers(folder: Path) -> Path:
    from vqalib.papers.vizwiz_lf.loading import load_vizwiz_lf

    answers = load_vizwiz_lf().answers
    llava = answers[answers["source"] == "LLaVA"][["question_id", "answer"]]
    path = folder / "new-model.csv"
    llava.assign(answer=llava["answer"] + " I hope this helps.").to_csv(path, index=False)
    return path


def _time(args: list[str], env: dict) -> float:
    start = time.perf_counter()
    subprocess.run([str(VQALIB), *args], check=True, env=env, cwd=ROOT, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def run() -> list[str]:
    """Run the timings; return the result lines (bench.py appends them to results.md)."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        answers = _answers(tmp)
        base = ["score", str(answers), "--dataset", "vizwiz-lf", "--model", "New model"]
        cold_env = {**os.environ, "VQALIB_CACHE_DIR": str(tmp / "cache-cold")}
        cold = _time([*base, "--no-compare", "--out", str(tmp / "a")], cold_env)
        warm = _time([*base, "--no-compare", "--out", str(tmp / "b")], cold_env)
        # the shared cache (as after `make reproduce`) serves the released models' scores; the new model's
        # answers are new to it, unless an earlier benchmark left their entries (content-addressed, harmless)
        compared = _time([*base, "--out", str(tmp / "c")], dict(os.environ))
        compared_warm = _time([*base, "--out", str(tmp / "d")], dict(os.environ))
    cores = os.cpu_count()
    return [f"`vqalib score` of 600 new VizWiz-LF answers, cold (empty caches, --no-compare): {cold:.1f} s "
            f"(goal <= 60 s, {cores} cores)",
            f"the same, warm: {warm:.1f} s (goal <= 5 s)",
            f"with the paired comparison to the 7 released sources, their scores from the shared cache: "
            f"{compared:.1f} s; warm {compared_warm:.1f} s"]


def main() -> None:
    """Run the timings alone, print them and append them to results.md."""
    lines = run()
    cores = os.cpu_count()
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    with open(ROOT / "benchmarks" / "results.md", "a", encoding="utf-8") as out:
        out.write(f"\n## {stamp} ({platform.machine()}, {cores} cores, Python {platform.python_version()}): "
                  "score_bench.py\n\n" + "".join(f"- {line}\n" for line in lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
