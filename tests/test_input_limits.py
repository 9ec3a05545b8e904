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


def _declared_as(path, member, size):
    """Rewrite the size the zip directory declares for ``member`` (its data unchanged): a crafted log, built small."""
    import struct

    data = bytearray(path.read_bytes())
    at = data.find(b"PK\x01\x02")
    while at >= 0:
        length = struct.unpack_from("<H", data, at + 28)[0]
        if data[at + 46:at + 46 + length].decode() == member:
            struct.pack_into("<I", data, at + 24, size)
        at = data.find(b"PK\x01\x02", at + 4)
    path.write_bytes(bytes(data))
    return path


def _eval_log(path, *, header_bytes=2):
    """An Inspect-shaped .eval zip whose header.json holds ``header_bytes`` of highly compressible JSON."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("_journal/start.json", "{}")
        with archive.open("header.json", "w") as header:
            header.write(b"{" + b" " * (header_bytes - 2) + b"}")
    return path


def test_an_eval_log_declaring_a_1_gib_header_is_refused_before_inspect_reads_it(tmp_path, capsys):
    log = _declared_as(_eval_log(tmp_path / "2026-01-01_vizwiz-lf-vanilla_x.eval"), "header.json", 1 << 30)
    assert log.stat().st_size < 4096
    with pytest.raises(DataFormatError, match=r"vanilla_x\.eval: the log declares 1,073,741,826 bytes uncompressed in "
                                              r"all \(its largest member, 'header\.json', 1,073,741,824 bytes from "
                                              r"\d+ compressed\), over the limit of 1,073,741,824 \(set "
                                              r"VQALIB_MAX_EVAL_BYTES"):
        read_answers(log)  # refused before the converter (and its venv) is needed
    status, err, seconds = _score(log, tmp_path, capsys)
    assert status == 1 and seconds < 10 and "VQALIB_MAX_EVAL_BYTES" in err and "Traceback" not in err


def test_an_eval_member_inflating_past_its_declared_size_is_refused_by_name(tmp_path, capsys, monkeypatch):
    from vqalib.core import inspect_logs

    honest = _eval_log(tmp_path / "honest.eval", header_bytes=4 << 20)
    assert inspect_logs.inflated_past(honest) is None
    log = _declared_as(_eval_log(tmp_path / "crafted.eval", header_bytes=4 << 20), "header.json", 100)
    assert log.stat().st_size < 1 << 20  # 4 MiB inflated from a small file, though the directory says 100 bytes
    start = time.monotonic()
    with pytest.raises(DataFormatError, match=r"crafted\.eval: member 'header\.json' inflates past the 100 bytes it "
                                              r"declares \(stopped at 101 bytes, from [\d,]+ compressed\): a damaged or "
                                              r"crafted log, not read.*VQALIB_MAX_EVAL_BYTES \(1,073,741,824 bytes\)"):
        read_answers(log)
    assert time.monotonic() - start < 5
    status, err, _ = _score(log, tmp_path, capsys)
    assert status == 1 and "inflates past the 100 bytes" in err and "Traceback" not in err
    # the converter, run by inspect_ai's Python, checks again (there zipfile also inflates inspect_ai's methods)
    import subprocess
    import sys

    done = subprocess.run([sys.executable, inspect_logs.__file__, str(log)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == inspect_logs.INFLATES_PAST and done.stdout == ""
    assert json.loads(done.stderr) == {"member": "header.json", "declared": 100, "seen": 101,
                                       "packed": zipfile.ZipFile(log).getinfo("header.json").compress_size}
    # and its report becomes the same named refusal
    fake = tmp_path / "fake-python"
    fake.write_text('#!/bin/sh\necho \'{"member": "samples/1_epoch_1.json", "declared": 10, "seen": 11, "packed": 5}\''
                    ' >&2\nexit 3\n')
    fake.chmod(0o755)
    monkeypatch.setenv("VQALIB_INSPECT_PYTHON", str(fake))
    with pytest.raises(DataFormatError, match=r"honest\.eval: member 'samples/1_epoch_1\.json' inflates past the 10 "
                                              r"bytes it declares \(stopped at 11 bytes"):
        read_answers(honest)


def test_one_huge_answer_is_refused_with_its_question_id_before_scoring(tmp_path, capsys, monkeypatch):
    released = load_vizwiz_lf(sources=["llava"]).answers
    rows = [{"question_id": int(q), "answer": a} for q, a in zip(released["question_id"], released["answer"])]
    rows[16]["answer"] = "a" * 10_000_000  # a 10 MB answer: spaCy's E088, naming nothing, before this limit
    path = tmp_path / "long_answer.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    status, err, seconds = _score(path, tmp_path, capsys)
    assert status == 1 and seconds < 10 and "Traceback" not in err and "E088" not in err
    assert (f"long_answer.jsonl: line 17 (question id '{rows[16]['question_id']}'): the answer is 10,000,000 "
            "characters, over the limit of 20,000 characters per answer (set VQALIB_MAX_ANSWER_CHARS") in err
    rows[16]["answer"], rows[300]["answer"] = "a" * 900_000, "b" * 30_000
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(DataFormatError, match=r"line 17 .*900,000 characters.*; 2 answers are over it"):
        read_answers(path)
    monkeypatch.setenv("VQALIB_MAX_ANSWER_CHARS", str(1_000_000))
    assert read_answers(path)[0]["answer"].str.len().max() == 900_000
