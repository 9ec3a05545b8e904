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


@pytest.mark.parametrize("name, value, message", [
    ("VQALIB_IMAGE_TIMEOUT", "abc", "positive finite number"),
    ("VQALIB_IMAGE_TIMEOUT", "0", "positive finite number"),
    ("VQALIB_IMAGE_TIMEOUT", "-1", "positive finite number"),
    ("VQALIB_IMAGE_TIMEOUT", "nan", "positive finite number"),
    ("VQALIB_NO_MODEL_CALLS", "yes", "set it to 1"),
    ("VQALIB_REPRODUCE_JOBS", "-3", "whole number >= 1"),
    ("VQALIB_JUDGE_PROMPT", "other", "one of vizwiz-lf, lave-reference"),
    ("VQALIB_DATA_MIRROR", "/nowhere/at/all", "no such folder"),
    ("VQALIB_WORD_VECTORS", "/nowhere/vectors.kv", "no such local path"),
])
def test_a_bad_setting_is_named_with_its_value_and_what_is_allowed(monkeypatch, name, value, message):
    monkeypatch.setenv(name, value)
    found = config.problems()
    assert len(found) == 1 and found[0].startswith(f"{name}={value!r}") and message in found[0]
    with pytest.raises(SystemExit, match=name):
        config.check()


def test_a_file_where_a_folder_is_expected_is_refused(monkeypatch, tmp_path):
    file = tmp_path / "cache"
    file.write_text("x")
    monkeypatch.setenv("VQALIB_CACHE_DIR", str(file))
    monkeypatch.setenv("VQALIB_IMAGE_CACHE", str(tmp_path / "new-folder"))  # a folder that can be made is fine
    assert [p.split("=")[0] for p in config.problems()] == ["VQALIB_CACHE_DIR"]


# --- hostile values: every kind names the variable and the accepted form, and nothing else is raised ---------------

HOSTILE_NUMBERS = ["²", "١٢", "1_000", "10" + "0" * 400, "-5", "0", "2147483648", "nan", "inf", "-inf", "1e400",
                   "0x10", "1e-400", "１"]


@pytest.mark.parametrize("value", HOSTILE_NUMBERS)
def test_a_hostile_whole_number_is_named_by_problems_and_by_get_int(monkeypatch, value):
    monkeypatch.setenv("VQALIB_MAX_LINE_BYTES", value)
    [found] = config.problems()
    assert found.startswith(f"VQALIB_MAX_LINE_BYTES={value!r}: expected a whole number >= 1 and at most 2147483647")
    with pytest.raises(config.SettingError, match=r"^VQALIB_MAX_LINE_BYTES='.*': expected a whole number >= 1"):
        config.get_int("VQALIB_MAX_LINE_BYTES", 5)
    monkeypatch.setenv("VQALIB_MAX_LINE_BYTES", "2147483647")  # the largest accepted
    assert config.problems() == [] and config.get_int("VQALIB_MAX_LINE_BYTES", 5) == 2147483647


@pytest.mark.parametrize("value", [*HOSTILE_NUMBERS, "1000001"])
def test_hostile_seconds_and_shares_are_named_by_problems_and_by_their_readers(monkeypatch, value):
    monkeypatch.setenv("VQALIB_IMAGE_TIMEOUT", value)
    monkeypatch.setenv("VQALIB_MAX_UNKNOWN_SHARE", value)
    found = config.problems()
    assert [p.split("=")[0] for p in found] == ["VQALIB_MAX_UNKNOWN_SHARE", "VQALIB_IMAGE_TIMEOUT"] or \
        [p.split("=")[0] for p in found] == ["VQALIB_IMAGE_TIMEOUT", "VQALIB_MAX_UNKNOWN_SHARE"]
    assert any(p.startswith(f"VQALIB_IMAGE_TIMEOUT={value!r}: expected a positive finite number of seconds, at most "
                            "1000000") for p in found)
    assert any(p.startswith(f"VQALIB_MAX_UNKNOWN_SHARE={value!r}: expected a number greater than 0") for p in found)
    with pytest.raises(config.SettingError, match="^VQALIB_IMAGE_TIMEOUT='.*': expected a positive finite number"):
        config.get_seconds("VQALIB_IMAGE_TIMEOUT", 30.0)
    with pytest.raises(config.SettingError, match="^VQALIB_MAX_UNKNOWN_SHARE='.*': expected a number greater than 0"):
        config.get_share("VQALIB_MAX_UNKNOWN_SHARE", 0.5)


def test_good_seconds_and_shares_are_read(monkeypatch):
    monkeypatch.setenv("VQALIB_IMAGE_TIMEOUT", "2.5e1")
    monkeypatch.setenv("VQALIB_MAX_UNKNOWN_SHARE", ".25")
    assert config.problems() == []
    assert config.get_seconds("VQALIB_IMAGE_TIMEOUT", 30.0) == 25.0 and config.get_share("VQALIB_MAX_UNKNOWN_SHARE", 0.5) == 0.25


@pytest.mark.parametrize("name", ["VQALIB_CACHE_DIR", "VQALIB_DATA_MIRROR", "VQALIB_INSPECT_PYTHON",
                                  "VQALIB_BERTSCORE_MODEL"])
def test_hostile_paths_are_named_by_problems_and_by_get_path(monkeypatch, tmp_path, name):
    file = tmp_path / "file"
    file.write_text("x")
    hostile = {"a name longer than the file system's": str(tmp_path / ("a" * 300)),
               "a deep path": str(tmp_path / "/".join(["b" * 200] * 30)),
               "through a file": str(file / "x"),
               "a home that is not there": "~no-such-user-of-vqalib/x"}
    form = config.KINDS[config.SETTINGS[name].kind]
    for what, value in hostile.items():
        monkeypatch.setenv(name, value)
        [found] = config.problems()
        assert found.startswith(f"{name}={value!r}: ") and f"expected {form}" in found, what
        with pytest.raises(config.SettingError, match=f"^{name}="):
            config._refuse(name, value)
        if name != "VQALIB_BERTSCORE_MODEL":  # a model is a name or a path: read with config.get
            with pytest.raises(config.SettingError, match=f"^{name}="):
                config.get_path(name, tmp_path)
    assert "NUL byte" in config._problem(config.SETTINGS[name], "/a\x00b")  # the environment cannot hold one; a caller can


def test_a_folder_setting_that_can_be_made_is_read_as_written(monkeypatch, tmp_path):
    monkeypatch.setenv("VQALIB_CACHE_DIR", str(tmp_path / "new" / "cache"))
    assert config.problems() == [] and config.get_path("VQALIB_CACHE_DIR", Path("x")) == tmp_path / "new" / "cache"


def test_every_kind_answers_every_hostile_value_without_raising():
    values = [*HOSTILE_NUMBERS, "a" * 5000, "/" + "c" * 300, "\x1b[2J", "\u202e", "\udcff", "\x00", "~nobody-here/x"]
    for setting in config.SETTINGS.values():
        for value in values:
            why = config._problem(setting, value)
            assert why is None or isinstance(why, str)
