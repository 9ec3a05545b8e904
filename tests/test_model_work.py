"""The first stage of `vqalib reproduce` (vqalib.compendium.model_work): its steps run once per code, data and
settings, and a marker skips them after; that the steps cover every notebook's model work is checked by the full
notebook run (tests/test_notebooks.py), which forbids model calls after the stage."""

from __future__ import annotations

import os

from vqalib.compendium import model_work


def test_the_steps_run_once_then_the_marker_skips_them(tmp_path, monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    (data / "release.json").write_text("[]")
    monkeypatch.setenv("VQALIB_CACHE_DIR", str(tmp_path / "cache"))
    ran = []
    monkeypatch.setattr(model_work, "STEPS", {"one": lambda *, data_dir: ran.append(("one", data_dir)),
                                              "two": lambda *, data_dir: ran.append(("two", data_dir))})
    lines = []
    seconds = model_work.fill_caches(data_dir=data, echo=lines.append)
    assert ran == [("one", data), ("two", data)] and set(seconds) == {"one", "two"}
    assert len(lines) == 2 and all("model work:" in line for line in lines)
    assert model_work.fill_caches(data_dir=data, echo=lines.append) == {} and len(ran) == 2  # served: nothing ran
    assert "done before" in lines[-1]
    (data / "release.json").write_text("[1]")  # the data changed (size and time): the steps run again
    os.utime(data / "release.json", ns=(1, 1))
    model_work.fill_caches(data_dir=data, echo=lines.append)
    assert len(ran) == 4


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
