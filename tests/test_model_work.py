"""The first stage of `vqalib reproduce` (vqalib.compendium.model_work): its steps run once per code, data and
settings, and a marker skips them after; that the steps cover every notebook's model work is checked by the full
notebook run (tests/test_notebooks.py), which forbids model calls after the stage."""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from vqalib.compendium import model_work


def test_the_steps_run_once_then_the_marker_skips_them(tmp_path, monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    (data / "release.json").write_text("[]")
    monkeypatch.setenv("VQALIB_CACHE_DIR", str(tmp_path / "cache"))
    ran = []
    monkeypatch.setattr(model_work, "STEPS", [model_work.Step("one", lambda *, data_dir: ran.append(("one", data_dir))),
                                              model_work.Step("two", lambda *, data_dir: ran.append(("two", data_dir)))])
    lines = []
    seconds = model_work.fill_caches(data_dir=data, echo=lines.append)
    assert ran == [("one", data), ("two", data)] and set(seconds) == {"one", "two"}
    assert len(lines) == 3 and all("model work:" in line for line in lines) and "every step done" in lines[-1]
    assert model_work.fill_caches(data_dir=data, echo=lines.append) == {} and len(ran) == 2  # served: nothing ran
    assert "done before" in lines[-1]
    (data / "release.json").write_text("[1]")  # the data changed (size and time): the steps run again
    os.utime(data / "release.json", ns=(1, 1))
    model_work.fill_caches(data_dir=data, echo=lines.append)
    assert len(ran) == 4


def test_on_workers_a_step_starts_after_the_steps_it_reads_and_a_failure_stops_the_stage(tmp_path, monkeypatch):
    monkeypatch.setenv("VQALIB_CACHE_DIR", str(tmp_path / "cache"))
    events, lock = [], threading.Lock()

    def step(name, seconds=0.0):
        def run(*, data_dir):
            with lock:
                events.append(("start", name))
            time.sleep(seconds)
            with lock:
                events.append(("end", name))
        return run

    monkeypatch.setattr(model_work, "STEPS", [
        model_work.Step("a", step("a", 0.3), seconds=1), model_work.Step("b", step("b", 0.1), seconds=5),
        model_work.Step("c", step("c"), after=("a", "b"), seconds=9), model_work.Step("d", step("d"), seconds=2)])
    with ThreadPoolExecutor(max_workers=2) as pool:
        seconds = model_work.fill_caches(data_dir=tmp_path, echo=lambda _: None, pool=pool)
    assert set(seconds) == {"a", "b", "c", "d"}
    starts = [name for what, name in events if what == "start"]
    assert set(starts[:2]) == {"b", "d"}  # the longest ready steps first, "a" when a worker is free
    assert events.index(("start", "c")) > max(events.index(("end", "a")), events.index(("end", "b")))

    def fails(*, data_dir):
        raise RuntimeError("a step failed")

    monkeypatch.setattr(model_work, "STEPS", [model_work.Step("x", fails), model_work.Step("y", step("y"), after=("x",))])
    with ThreadPoolExecutor(max_workers=2) as pool, pytest.raises(RuntimeError, match="a step failed"):
        model_work.fill_caches(data_dir=tmp_path, echo=lambda _: None, pool=pool)
    assert ("start", "y") not in events and not model_work.marker_path(data_dir=tmp_path).exists()


def test_the_steps_read_only_steps_before_them():
    names = [step.name for step in model_work.STEPS]
    assert len(set(names)) == len(names)
    for k, step in enumerate(model_work.STEPS):  # one after another in list order is a valid order
        assert set(step.after) <= set(names[:k]), step.name


def test_the_key_follows_the_model_settings(tmp_path, monkeypatch):
    monkeypatch.delenv("VQALIB_BERTSCORE_MODEL", raising=False)
    before = model_work.stage_key(data_dir=tmp_path)
    monkeypatch.setenv("VQALIB_BERTSCORE_MODEL", "roberta-large")
    assert model_work.stage_key(data_dir=tmp_path) != before
    monkeypatch.delenv("VQALIB_BERTSCORE_MODEL")
    assert model_work.stage_key(data_dir=tmp_path) == before


def test_reproduce_model_work_runs_only_the_stage(tmp_path, monkeypatch, capsys):
    """`vqalib reproduce --model-work` (`make test` runs it before its workers): the stage and nothing else."""
    from vqalib.compendium import cli, reproduce

    calls = []
    monkeypatch.setattr(reproduce, "model_work", lambda **kw: calls.append(kw) or {})
    monkeypatch.setattr(reproduce, "run", lambda **kw: calls.append("notebooks"))
    assert cli.main(["reproduce", "--model-work"]) == 0
    assert calls == [{}]
