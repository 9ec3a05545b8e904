"""Test as a newcomer: clone this repository into a temporary folder and run the README's commands there,
timed; record the times and whether `git status` stays clean (the reproduction contract).

In a fresh clone, in the README's order: `make reproduce` (creates .venv, fetches the data from the mirror,
cold caches), `make reproduce` again (warm, with model calls forbidden), `make test`, then `git status
--porcelain`; with ``--bench``, then `benchmarks/reproduce_bench.py` in the same clone (the model-work floor,
cold and warm `make reproduce` per notebook and per cell, on emptied caches). With ``--ci``, `.ci/run` in a
second fresh clone (what CI runs on a clean checkout: `make test` there is cold, set-up included), with its own
`ci:` lines. ``--env KEY=VALUE`` simulates another machine, e.g. ``--env ATEN_CPU_CAPABILITY=avx2 --env
OMP_NUM_THREADS=1``. The result is printed and appended to benchmarks/results.md of this checkout.

    python benchmarks/fresh_clone.py [--mirror ../shared/data] [--bench] [--ci] [--env K=V ...] [--keep]

`make bench` runs it with ``--bench --ci``: cold and warm `make reproduce`, the model-work floor, cold `make test`
and `.ci/run`'s step lines (set-up, stage, each pytest run) in one run, to compare the next change with as ratios.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import subprocess
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def timed(command: list[str], *, cwd: Path, env: dict, log: Path) -> tuple[float, int]:
    start = time.perf_counter()
    with open(log, "a", encoding="utf-8") as out:
        out.write(f"\n$ {' '.join(command)}\n")
        out.flush()
        code = subprocess.run(command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT).returncode
    return time.perf_counter() - start, code


def clone(folder: Path) -> tuple[Path, str]:
    checkout = folder / "main"  # .ci/run finds the shared data beside the checkout's parent by default
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(checkout)], check=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=checkout, capture_output=True, text=True,
                            check=True).stdout.strip()
    return checkout, commit


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def readme_order(checkout: Path, *, env: dict, log: Path, bench: bool) -> list[str]:
    steps = [("`make reproduce`, fresh clone (set-up, data, cold caches)", ["make", "reproduce"], {}),
             ("`make reproduce` again (warm; VQALIB_NO_MODEL_CALLS=1)", ["make", "reproduce"],
              {"VQALIB_NO_MODEL_CALLS": "1"}),
             ("`make test` after it", ["make", "test"], {})]
    lines = []
    for name, command, extra in steps:
        before = load()
        seconds, code = timed(command, cwd=checkout, env={**env, **extra}, log=log)
        lines.append(f"{name}: {seconds / 60:.1f} min ({seconds:.0f} s), exit {code} ({before} at its start)")
        print(lines[-1], flush=True)
    status = subprocess.run(["git", "status", "--porcelain"], cwd=checkout, capture_output=True, text=True,
                            check=True).stdout.splitlines()
    lines.append("git status after them: " + ("clean" if not status else
                                               f"{len(status)} changed: {', '.join(status[:8])}"))
    print(lines[-1], flush=True)
    if bench:
        with open(log, "a", encoding="utf-8") as out:
            out.write("\n$ reproduce_bench.py --no-from-scratch --sizes\n")
            out.flush()
            done = subprocess.run([str(checkout / ".venv" / "bin" / "python"), "benchmarks/reproduce_bench.py",
                                   "--no-from-scratch", "--sizes"], cwd=checkout, env=env, stdout=subprocess.PIPE,
                                  stderr=out, text=True)
        measured = [line for line in done.stdout.splitlines() if not line.startswith("machine:")]
        if done.returncode or not measured:
            measured = [f"failed (exit {done.returncode}); see {log}"]
        lines += [f"reproduce_bench.py in that clone ({load()} at its end): {measured[0]}", *measured[1:]]
        for line in measured:
            print(line, flush=True)
    return lines


def ci_run(checkout: Path, *, env: dict, log: Path) -> list[str]:
    before = load()
    seconds, code = timed([str(checkout / ".ci" / "run")], cwd=checkout, env=env, log=log)
    text = log.read_text(encoding="utf-8", errors="replace").splitlines()
    steps = [line for line in text if re.match(r"ci: (start|end|make .* took)", line)]
    # inside `make test` and `make test-full`: the set-up, the model-work stage, each pytest run
    inside = [line.strip(" =") for line in text
              if re.match(r"(set-up: |  model work: every step|=+ .*(passed|failed).* in )", line)]
    return [f"`.ci/run` in a second fresh clone: {seconds / 60:.1f} min ({seconds:.0f} s), exit {code} "
            f"({before} at its start); its own lines: " + "; ".join(s.removeprefix("ci: ") for s in steps),
            *(f"  {line}" for line in inside)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=Path, help="the data mirror (VQALIB_DATA_MIRROR); default: download")
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE for every command in the clone")
    parser.add_argument("--bench", action="store_true", help="also reproduce_bench.py in the clone")
    parser.add_argument("--ci", action="store_true", help="also .ci/run in a second fresh clone")
    parser.add_argument("--keep", action="store_true", help="keep the clones (their paths are printed)")
    args = parser.parse_args()
    extra = dict(item.split("=", 1) for item in args.env)
    env = {k: v for k, v in os.environ.items() if not k.startswith("VQALIB_")}
    env.update(extra, **({"VQALIB_DATA_MIRROR": str(args.mirror.resolve())} if args.mirror else {}))
    folders = [Path(tempfile.mkdtemp(prefix="vqalib-clone-"))]
    checkout, commit = clone(folders[0])
    lines = readme_order(checkout, env=env, log=folders[0] / "log.txt", bench=args.bench)
    if args.ci:
        folders.append(Path(tempfile.mkdtemp(prefix="vqalib-ci-")))
        ci_checkout, _ = clone(folders[1])
        found = ci_run(ci_checkout, env=env, log=folders[1] / "log.txt")
        lines += found
        print("\n".join(found), flush=True)
    where = " ".join(f"{k}={v}" for k, v in extra.items()) or "default kernels and threads"
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = (f"\n## {stamp} ({platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}): "
            f"fresh clone of `{commit}`, {where}, one step after another on this machine\n\n"
            + "".join(f"  - {line.strip()}\n" if line.startswith(" ") else f"- {line}\n" for line in lines))
    with open(ROOT / "benchmarks" / "results.md", "a", encoding="utf-8") as out:
        out.write(text)
    for folder in folders:
        if args.keep:
            print(f"kept {folder} (log {folder / 'log.txt'})")
        else:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
