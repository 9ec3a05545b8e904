"""vqalib.core.config: every setting in one place."""

import re
from pathlib import Path

import pytest

from vqalib.core import config

ROOT = Path(__file__).resolve().parent.parent


def test_only_the_config_module_reads_the_environment():
    readers = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "vqalib").rglob("*.py")
                     if "os.environ" in p.read_text(encoding="utf-8"))
    assert readers == ["vqalib/core/config.py"]


def test_every_variable_named_in_the_package_or_readme_is_declared_and_documented():
    declared = {name for name in config.SETTINGS if name.startswith("VQALIB_")}
    in_code = set()
    for path in (ROOT / "vqalib").rglob("*.py"):
        in_code |= set(re.findall(r"\"(VQALIB_[A-Z_]+)\"", path.read_text(encoding="utf-8")))
    readme = set(re.findall(r"`(VQALIB_[A-Z_]+)`", (ROOT / "README.md").read_text(encoding="utf-8")))
    assert in_code <= declared, f"read but not declared in vqalib.core.config.SETTINGS: {sorted(in_code - declared)}"
    assert declared <= readme, f"declared but not in the README's settings table: {sorted(declared - readme)}"
    assert readme <= declared, f"in the README but not declared: {sorted(readme - declared)}"


def test_settings_are_read_when_asked_and_bad_values_are_named(monkeypatch):
    monkeypatch.delenv("VQALIB_REPRODUCE_JOBS", raising=False)
    assert config.get("VQALIB_REPRODUCE_JOBS") is None and config.get_int("VQALIB_REPRODUCE_JOBS", 2) == 2
    monkeypatch.setenv("VQALIB_REPRODUCE_JOBS", " 3 ")
    assert config.get_int("VQALIB_REPRODUCE_JOBS", 2) == 3
    monkeypatch.setenv("VQALIB_REPRODUCE_JOBS", "   ")
    assert config.get("VQALIB_REPRODUCE_JOBS") is None  # blank is unset
    for bad in ("two", "0", "-1", "1.5"):
        monkeypatch.setenv("VQALIB_REPRODUCE_JOBS", bad)
        with pytest.raises(ValueError, match=f"VQALIB_REPRODUCE_JOBS='{re.escape(bad)}': expected a whole number >= 1"):
            config.get_int("VQALIB_REPRODUCE_JOBS", 2)
    with pytest.raises(KeyError, match="not a declared setting"):
        config.get("VQALIB_NO_SUCH_THING")
    monkeypatch.setenv("VQALIB_CACHE_DIR", "/somewhere")
    assert config.get_path("VQALIB_CACHE_DIR", Path("x")) == Path("/somewhere")
    assert config.snapshot(("VQALIB_CACHE_DIR",)) == {"VQALIB_CACHE_DIR": "/somewhere"}


def test_model_calls_can_be_forbidden(monkeypatch):
    config.model_call("anything")  # allowed by default
    monkeypatch.setenv("VQALIB_NO_MODEL_CALLS", "1")
    with pytest.raises(config.ModelCallForbidden, match="a cache missed"):
        config.model_call("sentence encoder on 3 texts")
