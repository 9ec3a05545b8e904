"""The reviewer site's browser audit (``site-check/check.mjs``): each page's time limit grows with its size, a
time-out is reported as such, and ``vqalib site check --timeout`` / ``make check-site SITE_TIMEOUT=`` reach it.
These tests run no browser; ``site-check/selftest.mjs`` (run here under ``full``) does."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from vqalib.compendium import cli
from vqalib.compendium import site as site_module

ROOT = Path(__file__).resolve().parent.parent
CHECK = ROOT / "site-check" / "check.mjs"
needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="Node is not installed")


def _node_eval(script: str) -> object:
    """Run an ES module snippet that imports check.mjs's helpers; returns what it prints as JSON."""
    code = f"import * as check from {json.dumps(CHECK.as_uri())};\n{script}"
    done = subprocess.run(["node", "--input-type=module", "-e", code], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


@needs_node
def test_page_time_limit_is_a_base_plus_a_term_per_1000_elements_scaled_by_pages_per_core():
    limits = _node_eval("""
const L = (elements, baseSec, per1000Sec, concurrency, cpus) =>
  check.pageTimeLimit({ elements, baseSec, per1000Sec, concurrency, cpus });
console.log(JSON.stringify([
  L(600, 60, 5, 2, 2), L(29062, 60, 5, 2, 2), L(29062, 120, 5, 2, 2), L(29062, 60, 5, 4, 2),
  L(29062, 60, 5, 2, 16), L(29062, 45, 0, 8, 1), L(0, 60, 5, 2, 2),
  check.countElements('<!doctype html><html><body><p>a < b</p><br/><!-- c --></body></html>'),
]));""")
    assert limits == [63, 206, 266, 351, 206, 45, 60, 4]


@needs_node
def test_a_time_out_says_it_is_no_finding_with_the_limit_the_page_size_and_the_option():
    message = _node_eval("""console.log(JSON.stringify(check.timeoutMessage({
  limit: { sec: 206, baseSec: 60, per1000Sec: 5, elements: 29062, htmlBytes: 615577, share: 1 },
  stage: 'axe 320', loadavg: 5.8, cpus: 2 })));""")
    for part in ("time-out, not an accessibility finding", "limit of 206 s", "29062 elements", "601 KiB",
                 '"axe 320"', "load average 5.8 on 2 CPUs", "--timeout 266", "SITE_TIMEOUT=266"):
        assert part in message, part


@needs_node
def test_check_mjs_help_states_the_time_limit_rule():
    text = subprocess.run(["node", str(CHECK), "--help"], capture_output=True, text=True, check=True).stdout
    assert "limit = ceil(timeout + timeout-per-1000 * elements / 1000 * max(1, concurrency / CPUs))" in text
    assert "--timeout-per-1000 SEC" in text and "not\n  an accessibility finding" in text


@pytest.fixture
def commands(monkeypatch, tmp_path):
    """The commands ``vqalib site check`` would run, with the build and the audit replaced by stand-ins."""
    ran = []
    monkeypatch.setattr(site_module, "build", lambda: tmp_path / "html")
    monkeypatch.setattr(site_module.subprocess, "run",
                        lambda command, check: ran.append(command) or subprocess.CompletedProcess(command, 0))
    return ran


def test_site_check_passes_timeout_through_to_check_mjs(commands, tmp_path):
    assert cli.main(["site", "check", "--out", str(tmp_path / "out"), "--timeout", "150"]) == 0
    (command,) = commands
    assert command[:2] == ["node", str(CHECK)]
    at = command.index("--timeout")
    assert float(command[at + 1]) == 150 and command[command.index("--site") + 1] == str(tmp_path / "html")
    assert "--screenshot=index.html" in command


def test_site_check_without_timeout_leaves_check_mjs_its_default(commands, tmp_path):
    assert cli.main(["site", "check", "--out", str(tmp_path / "out")]) == 0
    assert "--timeout" not in commands[0]


@pytest.mark.parametrize("value", ["0", "-5", "nan", "inf", "soon"])
def test_site_check_refuses_a_timeout_that_is_not_positive_seconds(value, capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(["site", "check", "--timeout", value])
    assert stop.value.code == 2 and "expected a number of seconds > 0" in capsys.readouterr().err


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_check_site_passes_site_timeout():
    lines = subprocess.run(["make", "-n", "check-site", "SITE_TIMEOUT=90"], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout.splitlines()
    assert any(line.rstrip().endswith("vqalib site check --timeout 90") for line in lines)
    plain = subprocess.run(["make", "-n", "check-site"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.splitlines()
    assert any(line.rstrip().endswith("vqalib site check") for line in plain)


@pytest.mark.full
@needs_node
def test_site_check_selftest_passes():
    """The checker on hand-made good and broken pages in real Chromium (a hanging page among them)."""
    chrome = Path(os.environ.get("CHROME_PATH", "/usr/bin/chromium"))
    if not (ROOT / "site-check" / "node_modules" / "puppeteer-core").is_dir() or not chrome.is_file():
        pytest.skip("needs `npm ci --prefix site-check` and Debian's chromium")
    done = subprocess.run(["node", str(ROOT / "site-check" / "selftest.mjs")], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
