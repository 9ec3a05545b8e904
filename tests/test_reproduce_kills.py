"""A `vqalib reproduce` killed at any moment, or running out of disk, never damages a committed file
(`make test-full`: real runs in this checkout, which must start with a clean `git status`).

- Kill trials: one uninterrupted run (git status clean after it) measures its length T; then one run per kind of
  stop is stopped at a seeded random moment in its own quarter of (0, 4T/5), so the four cover the run's phases:
  SIGKILL to the whole process group (a crash), SIGKILL to the command alone (its workers must not live on),
  SIGINT to the group (Ctrl-C; its default action restored in the child) or SIGTERM to the command.
  After each, every process of the run must be gone within 2 minutes (else: a hang) and `git status` must be
  clean (every committed file byte-identical); a last uninterrupted run must leave `git status` clean and
  `figures/PROVENANCE.json` as committed. The outcome of every trial is written to `build/kill_trials.json`.
- Full disk: `figures/`, `notebooks/` and `build/` in turn on a tmpfs filled to the last byte (as root;
  elsewhere skipped with the reason); the run must end (named error or success) and leave every committed
  file as it was.
"""

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vqalib.core.io import project_root

pytestmark = [pytest.mark.full, pytest.mark.checkout]

ROOT = project_root()
STOPS = (("SIGKILL", "group"), ("SIGKILL", "command"), ("SIGINT", "group"), ("SIGTERM", "command"))


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout


def _changed() -> list[str]:
    """Tracked files changed or deleted, and untracked files not ignored."""
    return _git("status", "--porcelain", "--untracked-files=all").splitlines()


def _default_sigint() -> None:
    """In the child: Ctrl-C's default action, also where this test runs in the background (a shell's ``&`` sets
    SIGINT ignored, and an ignored SIGINT would turn the Ctrl-C trials into runs that finish)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start(log: Path, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "vqalib", "reproduce", "--wait"], cwd=ROOT,
                            start_new_session=True, stdout=log.open("w"), stderr=subprocess.STDOUT,
                            env={**os.environ, **(env or {})}, preexec_fn=_default_sigint)


def _group_gone(pgid: int, *, within: float = 120.0) -> bool:
    end = time.monotonic() + within
    while time.monotonic() < end:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.5)
    os.killpg(pgid, signal.SIGKILL)  # a hang: cleaned up so the next trial starts fresh, and reported
    return False


@pytest.fixture(scope="module")
def clean_checkout():
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: nothing to compare committed files with")
    changed = _changed()
    assert not changed, f"commit or stash first: these kill trials compare with git HEAD: {changed[:10]}"
    return _git("show", "HEAD:figures/PROVENANCE.json")


def test_killing_reproduce_at_random_moments_never_damages_a_committed_file(clean_checkout, tmp_path):
    log = tmp_path / "reproduce.log"
    started = time.monotonic()
    first = _start(log)
    assert first.wait(timeout=3600) == 0, log.read_text()[-3000:]
    length = time.monotonic() - started
    assert _changed() == []
    rng = random.Random(0)
    trials = []
    width = 0.8 * length / len(STOPS)  # a later run is often faster: stop it before it ends
    for trial, (name, target) in enumerate(STOPS):
        at = round(max(0.5, rng.uniform(trial * width, (trial + 1) * width)), 1)
        process = _start(log)
        try:
            process.wait(timeout=at)
            finished_first = True
        except subprocess.TimeoutExpired:
            finished_first = False
            sig = getattr(signal, name)
            os.killpg(process.pid, sig) if target == "group" else os.kill(process.pid, sig)
        code = process.wait(timeout=300)
        last_line = (log.read_text(errors="replace").strip().splitlines() or [""])[-1]
        gone = _group_gone(process.pid)
        trials.append({"trial": trial, "at_seconds": at, "signal": name, "sent_to": target,
                       "finished_before": finished_first, "exit_code": code, "all_processes_gone": gone,
                       "changed_files": _changed(), "last_line": last_line})
    record = {"run_seconds": round(length, 1), "trials": trials}
    (ROOT / "build").mkdir(exist_ok=True)
    (ROOT / "build" / "kill_trials.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    damaged = [t for t in trials if t["changed_files"] or not t["all_processes_gone"]]
    assert not damaged, json.dumps(damaged, indent=1)
    last = _start(log)
    assert last.wait(timeout=3600) == 0, log.read_text()[-3000:]
    assert _changed() == []
    assert (ROOT / "figures" / "PROVENANCE.json").read_text(encoding="utf-8") == clean_checkout


def _fill(folder: Path) -> None:
    """Use up every free byte of the file system holding ``folder``."""
    # unbuffered: a buffered file would flush its unwritten rest again on close and raise ENOSPC there
    with open(folder / ".filler", "wb", buffering=0) as out:
        try:
            while True:
                out.write(b"\0" * 65536)
        except OSError:
            pass
    try:
        with open(folder / ".filler2", "wb", buffering=0) as out:  # the last partial page
            while True:
                out.write(b"\0")
                out.flush()
    except OSError:
        pass


@pytest.mark.parametrize("folder", ["figures", "notebooks", "build"])
def test_a_full_disk_under_a_folder_leaves_committed_files_intact(clean_checkout, folder, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    place = ROOT / folder
    place.mkdir(exist_ok=True)
    saved = tmp_path / "saved"
    if folder == "build":  # scratch space: the run starts with it empty (its real content waits under the mount)
        saved.mkdir()
    else:
        shutil.copytree(place, saved, symlinks=True)
    used = sum(f.stat().st_size for f in saved.rglob("*") if f.is_file())
    size = used + 4096 * (len(list(saved.rglob("*"))) + 64)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(place)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    log = tmp_path / "reproduce.log"
    try:
        for item in saved.iterdir():
            (shutil.copytree if item.is_dir() else shutil.copy2)(item, place / item.name)
        _fill(place)
        process = _start(log, env={"VQALIB_REWRITE_FIGURES": "1"})  # tables are written even when unchanged
        code = process.wait(timeout=3600)
        gone = _group_gone(process.pid)
        for filler in (".filler", ".filler2"):
            (place / filler).unlink(missing_ok=True)
        changed = _changed()
    finally:
        subprocess.run(["umount", "-l", str(place)], check=False)
    output = log.read_text(errors="replace")
    outcome = {"folder": folder, "exit_code": code, "all_processes_gone": gone, "changed_files": changed,
               "last_line": output.strip().splitlines()[-1] if output.strip() else ""}
    with open(ROOT / "build" / "full_disk_trials.jsonl", "a", encoding="utf-8") as record:
        record.write(json.dumps(outcome) + "\n")
    assert gone, "processes of the run were left behind"
    assert changed == [], f"exit {code}; changed: {changed}\n{output[-3000:]}"
    if code != 0:  # stopped by name, not by a bare traceback
        assert "Traceback" not in output and "No space left on device" in outcome["last_line"], output[-3000:]
