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


# --- what reaches the terminal: escaped, and one line for a user's mistake -----------------------------------------

TERMINAL_ATTACK = "\x1b]0;pwned\x07\x1b[2J"  # retitle the window, clear the screen


def _raw_controls(text: str) -> list[str]:
    return [c for c in text if (ord(c) < 32 and c not in "\n\t") or 0x7f <= ord(c) <= 0x9f]


def test_a_file_name_with_escape_sequences_is_shown_escaped(tmp_path, capsys):
    folder = tmp_path / TERMINAL_ATTACK
    folder.mkdir()
    assert cli.main(["verify", "--data-dir", str(folder)]) == 1
    err = capsys.readouterr().err
    assert "does not exist" in err and "\\x1b]0;pwned\\x07\\x1b[2J" in err
    assert _raw_controls(err) == [] and "Traceback" not in err


@pytest.mark.parametrize("error", [ValueError, RuntimeError, KeyError])
def test_every_error_a_command_raises_reaches_the_terminal_escaped(monkeypatch, capsys, error):
    from vqalib.core.config import SettingError
    from vqalib.core.io import DataFormatError

    def fail(args):
        raise error(f"question id {TERMINAL_ATTACK}: bad")

    monkeypatch.setattr(cli, "_readme", fail)
    assert cli.main(["readme"]) == 1  # a bug: its traceback, escaped
    err = capsys.readouterr().err
    assert _raw_controls(err) == [] and "\\x1b[2J" in err and "Traceback" in err
    for mistake in (DataFormatError, SettingError):  # a user's mistake: one escaped line
        monkeypatch.setattr(cli, "_readme", lambda args, mistake=mistake: (_ for _ in ()).throw(
            mistake(f"answers.jsonl, line 3, field 'question_id': {TERMINAL_ATTACK}")))
        assert cli.main(["readme"]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("error: answers.jsonl, line 3") and _raw_controls(err) == []


def test_warnings_usage_errors_and_exit_messages_are_escaped(monkeypatch, capsys):
    import warnings

    def warn_then_stop(args):
        warnings.warn(f"cache entry {TERMINAL_ATTACK} discarded", stacklevel=1)
        raise SystemExit(f"stopped at {TERMINAL_ATTACK}")

    monkeypatch.setattr(cli, "_readme", warn_then_stop)
    # as outside pytest, which records warnings instead: formatted (the hook main escapes), then to stderr
    monkeypatch.setattr(warnings, "_showwarnmsg_impl", lambda message: sys.stderr.write(warnings._formatwarnmsg(message)))
    with warnings.catch_warnings(), pytest.raises(SystemExit) as stop:
        warnings.simplefilter("always")
        cli.main(["readme"])
    err = capsys.readouterr().err
    assert "cache entry \\x1b]0;pwned" in err and _raw_controls(err) == []
    assert _raw_controls(str(stop.value.code)) == [] and "stopped at \\x1b]0;pwned" in stop.value.code
    with pytest.raises(SystemExit) as usage:
        cli.main(["verify", TERMINAL_ATTACK])  # argparse quotes what it did not recognise
    err = capsys.readouterr().err
    assert usage.value.code == 2 and "unrecognized arguments: \\x1b]0;pwned" in err and _raw_controls(err) == []


def test_a_bad_setting_stops_the_command_with_one_message_and_no_traceback(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("VQALIB_MAX_LINE_BYTES", "²")  # str.isdigit() says yes, int() says no
    monkeypatch.setenv("VQALIB_CACHE_DIR", str(tmp_path / ("a" * 300)))  # Path.exists() raises ENAMETOOLONG
    monkeypatch.setenv("VQALIB_JUDGE_TIMEOUT", "1e400")
    monkeypatch.setenv("VQALIB_DATA_MIRROR", str(tmp_path / TERMINAL_ATTACK))  # no such folder
    with pytest.raises(SystemExit) as stop:  # what Python prints to stderr on its way out
        cli.main(["verify"])
    message = str(stop.value.code)
    assert message.startswith("invalid settings:") and _raw_controls(message.replace("\n", "")) == []
    assert "VQALIB_MAX_LINE_BYTES='²': expected a whole number >= 1" in message
    assert "VQALIB_CACHE_DIR='" in message and "File name too long" in message
    assert "VQALIB_JUDGE_TIMEOUT='1e400': expected a positive finite number of seconds" in message
    assert "VQALIB_DATA_MIRROR='" in message and "\\x1b]0;pwned" in message
    assert capsys.readouterr().err == ""  # nothing else, no traceback
