"""The ``vqalib`` command (:mod:`vqalib.compendium.cli`): one entry point for every job, each subcommand
saying what it reads and writes."""

import subprocess
import sys
from pathlib import Path

import pytest

from vqalib.compendium import cli

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = ["fetch", "verify", "fetch-gqa", "reproduce", "check", "clean", "provenance", "readme", "claims",
            "classify", "run", "models", "runs", "site"]


def test_help_lists_every_subcommand(capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(["--help"])
    assert stop.value.code == 0
    text = capsys.readouterr().out
    for command in COMMANDS:
        assert f"\n    {command}" in text, command


@pytest.mark.parametrize("command", COMMANDS)
def test_each_subcommand_says_what_it_reads_and_writes(command, capsys):
    with pytest.raises(SystemExit):
        cli.main([command, "--help"])
    text = capsys.readouterr().out
    assert f"usage: vqalib {command}" in text and "reads: " in text and "writes: " in text


def test_python_dash_m_and_the_console_script_are_the_same_command():
    module = subprocess.run([sys.executable, "-m", "vqalib", "--help"], capture_output=True, text=True, check=True)
    script = Path(sys.executable).with_name("vqalib")
    if not script.exists():
        pytest.skip("the console script is not installed in this environment (pip install -e .)")
    console = subprocess.run([str(script), "--help"], capture_output=True, text=True, check=True)
    assert module.stdout == console.stdout and "reproduce" in module.stdout


def test_unknown_subcommand_is_an_argparse_error(capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(["nope"])
    assert stop.value.code == 2 and "invalid choice: 'nope'" in capsys.readouterr().err


def test_verify(tmp_path, data_dir, capsys):
    assert cli.main(["verify", "--data-dir", str(data_dir)]) == 0
    assert "ok  vizwiz-lf/expert.json" in capsys.readouterr().out
    assert cli.main(["verify", "--data-dir", str(tmp_path)]) == 1
    assert "does not exist" in capsys.readouterr().err


def test_fetch_gqa(monkeypatch, tmp_path, capsys):
    from vqalib.papers.afgv import gqa

    monkeypatch.setattr(gqa, "fetch_gqa_questions", lambda: tmp_path)
    assert cli.main(["fetch-gqa"]) == 0
    assert capsys.readouterr().out == f"GQA questions in {tmp_path}\n"


def test_check_compares_a_folder_with_itself(tmp_path, capsys):
    figures = ROOT / "figures"
    assert cli.main(["check", str(figures), "--against", str(figures)]) == 0
    assert "reproduces" in capsys.readouterr().out


def test_the_makefile_and_ci_use_the_command():
    """Every job in the Makefile goes through ``vqalib``; no ``python -m vqalib.<module>`` is left."""
    for path in (ROOT / "Makefile", ROOT / ".ci" / "run", ROOT / "README.md", ROOT / "runs" / "README.md"):
        text = path.read_text(encoding="utf-8")
        assert "python -m vqalib." not in text, path
    assert "$(BIN)/vqalib reproduce" in (ROOT / "Makefile").read_text(encoding="utf-8")
