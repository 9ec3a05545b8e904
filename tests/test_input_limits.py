"""Bounded reading of answers files (vqalib.core.input_limits): a zip bomb, a deeply nested line, a 50 MB line and a
million rows of unknown ids each stop quickly with a named error (the bounds in seconds are the ones the hostile
files must end within: they guard against a hang, they do not measure speed)."""

import json
import time
import zipfile

import pytest

from vqalib.compendium.cli import main
from vqalib.core import input_limits
from vqalib.core.answer_files import read_answers
from vqalib.core.io import DataFormatError
from vqalib.papers.vizwiz_lf.loading import load_vizwiz_lf


def _score(path, tmp_path, capsys):
    """``vqalib score`` on ``path``: (exit status, stderr, seconds); no scorecard may be written."""
    start = time.monotonic()
    status = main(["score", str(path), "--dataset", "vizwiz-lf", "--model", "m", "--out", str(tmp_path / "card"),
                   "--no-compare", "--n-resamples", "20"])
    seconds = time.monotonic() - start
    assert not (tmp_path / "card").exists()
    return status, capsys.readouterr().err, seconds


def _bomb(path, *, inflated):
    """An .xlsx-shaped zip whose sheet inflates to ``inflated`` bytes (a few hundred times its packed size)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<?xml version='1.0'?><Types/>")
        with archive.open("xl/worksheets/sheet1.xml", "w", force_zip64=True) as sheet:
            chunk = b"<c>0</c>" * (1 << 17)
            for _ in range(inflated // len(chunk)):
                sheet.write(chunk)
    return path


def test_an_xlsx_zip_bomb_is_refused_before_it_is_opened(tmp_path, capsys):
    bomb = _bomb(tmp_path / "MyModel_VizWizLF.xlsx", inflated=300 << 20)  # over 256 MiB declared
    assert bomb.stat().st_size < 1 << 21
    status, err, seconds = _score(bomb, tmp_path, capsys)
    assert status == 1 and seconds < 10
    assert "MyModel_VizWizLF.xlsx: the workbook declares 314,572,8" in err and "VQALIB_MAX_XLSX_BYTES" in err


def test_an_xlsx_that_inflates_too_many_times_is_refused(tmp_path, monkeypatch):
    bomb = _bomb(tmp_path / "b.xlsx", inflated=16 << 20)  # under the size limit, over the ratio
    with pytest.raises(DataFormatError, match=r"b\.xlsx: the workbook inflates [\d,]+ times .* VQALIB_MAX_XLSX_RATIO"):
        read_answers(bomb)
    monkeypatch.setenv("VQALIB_MAX_XLSX_BYTES", str(1 << 20))
    with pytest.raises(DataFormatError, match="over the limit of 1,048,576"):
        read_answers(bomb)


@pytest.mark.parametrize("where", ["line", "answer"])
def test_deep_nesting_is_named_with_its_line(where, tmp_path, capsys):
    deep = "[" * 100_000 + "]" * 100_000
    first = '{"question_id": 1, "answer": "a cup"}\n'
    text = first + deep + "\n" if where == "line" else '{"question_id": 1, "answer": ' + deep + "}\n"
    path = tmp_path / "nested.jsonl"
    path.write_text(text)
    status, err, seconds = _score(path, tmp_path, capsys)
    line = 2 if where == "line" else 1
    assert status == 1 and seconds < 10
    assert f"nested.jsonl: line {line}: JSON nested 100,00" in err and "over the limit of 64" in err
    assert "VQALIB_MAX_JSON_DEPTH" in err and "Traceback" not in err


def test_deep_nesting_in_a_json_document_names_the_line(tmp_path):
    path = tmp_path / "MyModel_VizWizLF.json"
    path.write_text('[{"question_id": 1, "prediction": "x"},\n{"question_id": 2, "prediction": ' + "[" * 500
                    + "]" * 500 + "}]\n")
    with pytest.raises(DataFormatError, match=r"VizWizLF\.json: line 2: JSON nested 50[12] levels deep"):
        read_answers(path)
    shallow = tmp_path / "ok.json"
    shallow.write_text(json.dumps([{"question_id": 1, "prediction": "a [bracketed] {answer}" * 100}]))
    assert read_answers(shallow)[0]["answer"].str.len().iloc[0] == 2200  # brackets inside strings do not count


def test_a_50_mb_line_is_named_as_too_long(tmp_path, capsys):
    path = tmp_path / "long.jsonl"
    path.write_text(json.dumps({"question_id": 1, "answer": "a" * 50_000_000}) + "\n")
    status, err, seconds = _score(path, tmp_path, capsys)
    assert status == 1 and seconds < 10
    assert "long.jsonl: line 1: the line is too long: 50,000,032 bytes, over the limit of 16,777,216" in err
    assert "VQALIB_MAX_LINE_BYTES" in err and "columns/keys" not in err


@pytest.mark.full  # writes and reads a million-row file (about 10 s): make test-full
def test_a_million_rows_of_unknown_ids_stop_early(tmp_path, capsys):
    released = load_vizwiz_lf().answers
    known = released[released["source"] == "LLaVA"]
    path = tmp_path / "million.jsonl"
    lines = [json.dumps({"question_id": int(q), "answer": a}) for q, a in zip(known["question_id"], known["answer"])]
    lines += [f'{{"question_id": {10_000_000 + k}, "answer": "a cup"}}' for k in range(1_000_000 - len(lines))]
    path.write_text("\n".join(lines) + "\n")
    status, err, seconds = _score(path, tmp_path, capsys)
    assert status == 1 and seconds < 30
    assert "million.jsonl: 999,400 of 1,000,000 rows (99.9%) name ids vizwiz-lf lacks, e.g. 10000000, 10000001" in err
    assert "VQALIB_MAX_UNKNOWN_SHARE" in err


def test_the_limits_are_settings(monkeypatch):
    monkeypatch.setenv("VQALIB_MAX_JSON_DEPTH", "2")
    assert input_limits.nesting_problem(b"[[1]]") is None and "over the limit of 2" in input_limits.nesting_problem(b"[[[1]]]")
    assert input_limits.nesting_problem(b'["[[[[["]') is None
    monkeypatch.setenv("VQALIB_MAX_UNKNOWN_SHARE", "1")
    assert input_limits.unknown_share() == 1.0
    monkeypatch.setenv("VQALIB_MAX_UNKNOWN_SHARE", "2")
    with pytest.raises(ValueError, match="VQALIB_MAX_UNKNOWN_SHARE='2': expected a number greater than 0 and at most 1"):
        input_limits.unknown_share()
