"""The Makefile's own recipes: ``make help`` lists every documented target, its descriptions in one column."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_help_aligns_every_description():
    documented = re.findall(r"^([a-z-]+):.*## ", (ROOT / "Makefile").read_text(encoding="utf-8"), flags=re.M)
    lines = subprocess.run(["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.splitlines()
    rows = [re.fullmatch(r"  make (\S+) +(\S.*)", line) for line in lines]
    assert all(rows), f"lines not of the form '  make <target> <description>': {lines}"
    assert [row.group(1) for row in rows] == documented
    columns = {row.group(1): row.start(2) for row in rows}
    longest = max(documented, key=len)
    # two spaces, "make ", the longest name and one space
    assert set(columns.values()) == {len("  make ") + len(longest) + 1}, columns
