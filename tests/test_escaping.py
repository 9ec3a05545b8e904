"""User text escaped per format (vqalib.core.escaping): Markdown one line without markup, CSV without formulas, and
a scorecard whose model name is hostile shows it as text in every file."""

import json

import pandas as pd
import pytest

from vqalib.compendium import scorecard_files
from vqalib.compendium.cli import main
from vqalib.core.escaping import csv_formula_safe, csv_formula_unquoted, markdown_frame, markdown_text, terminal_text
from vqalib.papers.vizwiz_lf.loading import load_vizwiz_lf

HOSTILE = "=HYPERLINK(\"x\")<script>alert(1)</script>\n# forged heading | cell [link](http://x) *b*"


def test_markdown_text_is_one_line_without_markup():
    text = markdown_text(HOSTILE)
    assert "\n" not in text and "<script" not in text and "&lt;script&gt;" in text
    assert "\\|" in text and "\\[link\\]" in text and "\\*b\\*" in text and "\\# forged" in text
    assert markdown_text("a\r\nb\u2028c\x00d") == "a b c d"
    assert markdown_text("plain words, 0.25") == "plain words, 0.25"


def test_markdown_frame_escapes_names_and_text_not_numbers():
    frame = pd.DataFrame({"m|x": ["a|b", None], "value": [1.5, 2.0]})
    out = markdown_frame(frame)
    assert list(out.columns) == ["m\\|x", "value"] and out.iloc[0, 0] == "a\\|b" and out["value"].tolist() == [1.5, 2.0]


def test_csv_formula_cells_are_quoted_and_read_back():
    frame = pd.DataFrame({"model": ["=cmd()", "+1", "-x", "@sum", "'kept", "plain"], "value": [-1.0, 2, 3, 4, 5, 6]})
    safe = csv_formula_safe(frame)
    assert safe["model"].tolist() == ["'=cmd()", "'+1", "'-x", "'@sum", "''kept", "plain"]
    assert safe["value"].tolist() == frame["value"].tolist()  # numbers are not text: a negative stays a number
    pd.testing.assert_frame_equal(csv_formula_unquoted(safe), frame)


@pytest.mark.full  # slow for `make test` (its 10-minute budget); CI runs it in `make test-full`
def test_a_hostile_model_name_lands_as_text_in_every_scorecard_file(tmp_path):
    released = load_vizwiz_lf().answers
    answers = tmp_path / "a.csv"
    released[released["source"] == "LLaVA"][["question_id", "answer"]].head(3).to_csv(answers, index=False)
    out = tmp_path / "card"
    assert main(["score", str(answers), "--dataset", "vizwiz-lf", "--model", HOSTILE, "--out", str(out),
                 "--no-compare", "--n-resamples", "20"]) == 0
    for md in out.glob("*.md"):
        text = md.read_text()
        assert "<script" not in text, md.name
        assert not any(line.startswith("# forged") for line in text.splitlines()), md.name
        assert sum(line.startswith("# ") for line in text.splitlines()) == 1, md.name
    assert "<script>" not in (out / "index.html").read_text()
    for csv in out.glob("*.csv"):
        for line in csv.read_text().splitlines():
            assert not any(cell.startswith(("=", '"=')) for cell in line.split(",")), csv.name
    assert json.loads((out / "scorecard.json").read_text())["model"] == HOSTILE
    card, _, _ = scorecard_files.read(out)  # read back: the name as given
    assert card.model == HOSTILE
    assert HOSTILE in set(card.tables["vizwiz-lf_table01_word_counts"].astype(str).to_numpy().ravel())


def test_terminal_text_shows_every_control_character_as_an_escape():
    hostile = "id \x1b]0;pwned\x07 \x1b[2J a\rb\x08c \x9b31m \x7f \u202egnp.exe \udcff"
    shown = terminal_text(hostile)
    assert shown == "id \\x1b]0;pwned\\x07 \\x1b[2J a\\x0db\\x08c \\x9b31m \\x7f \\u202egnp.exe \\udcff"
    assert not any(ord(c) < 32 or 0x7f <= ord(c) <= 0x9f for c in shown)
    shown.encode("utf-8")  # no lone surrogate left: printing it cannot fail
    assert terminal_text("two\nlines\tand a tab, é ✓ 漢字") == "two\nlines\tand a tab, é ✓ 漢字"  # kept as they are
    assert terminal_text(ValueError("x\x1b")) == "x\\x1b"
