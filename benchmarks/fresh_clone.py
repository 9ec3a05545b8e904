"""Test as a newcomer: clone this repository into a temporary folder and run the README's commands
there, timed; record the times and whether `git status` stays clean (the reproduction contract).

In the clone: `make test` (cold: creates .venv, fetches the data from the mirror, empty caches), `make
test` again (warm), `make reproduce`, then `git status --porcelain`. ``--env KEY=VALUE`` simulates
another machine, e.g. ``--env ATEN_CPU_CAPABILITY=avx2 --env OMP_NUM_THREADS=1``. The result is printed
and appended to benchmarks/results.md of this checkout.

    python benchmarks/fresh_clone.py --mirror ../shared/data [--env K=V ...] [--keep]
"""

from __future__ import annotations

import argparse
import os
import platform
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=Path, required=True, help="the data mirror (VQALIB_DATA_MIRROR)")
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE for every command in the clone")
    parser.add_argument("--keep", action="store_true", help="keep the clone (its path is printed)")
    args = parser.parse_args()
    extra = dict(item.split("=", 1) for item in args.env)
    folder = Path(tempfile.mkdtemp(prefix="vqalib-clone-"))
    clone = folder / "checkout"
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(clone)], check=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=clone, capture_output=True, text=True,
                            check=True).stdout.strip()
    env = {k: v for k, v in os.environ.items() if not k.startswith("VQALIB_")}
    env.update(extra, VQALIB_DATA_MIRROR=str(args.mirror.resolve()))
    log = folder / "log.txt"
    steps = [("make test, fresh clone (setup, data, cold caches)", ["make", "test"]),
             ("make test again (warm)", ["make", "test"]),
             ("make reproduce", ["make", "reproduce"])]
    lines = []
    for name, command in steps:
        seconds, code = timed(command, cwd=clone, env=env, log=log)
        lines.append(f"{name}: {seconds / 60:.1f} min ({seconds:.0f} s), exit {code}")
        print(lines[-1], flush=True)
    status = subprocess.run(["git", "status", "--porcelain"], cwd=clone, capture_output=True, text=True,
                            check=True).stdout.splitlines()
    lines.append("git status after make reproduce: " + ("clean" if not status else
                                                        f"{len(status)} changed: {', '.join(status[:8])}"))
    print(lines[-1])
    where = " ".join(f"{k}={v}" for k, v in extra.items()) or "default kernels and threads"
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = (f"\n## {stamp} ({platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}): "
            f"fresh clone of {commit}, {where}\n\n" + "".join(f"- {line}\n" for line in lines))
    with open(ROOT / "benchmarks" / "results.md", "a", encoding="utf-8") as out:
        out.write(text)
    if args.keep:
        print(f"clone kept at {clone} (log {log})")
    else:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
