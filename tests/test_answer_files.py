"""Reading model answers from every source (vqalib.core.answer_files): formats, joins, and named errors."""

import json

import pandas as pd
import pytest

from vqalib.core.answer_files import detect_format, read_answers
from vqalib.core.answer_matching import lmms_doc_hash
from vqalib.core.io import DataFormatError

def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_plain_csv_and_jsonl(tmp_path):
    csv = tmp_path / "a.csv"
    pd.DataFrame({"question_id": [1, 2], "answer": ["a cup", "no"]}).to_csv(csv, index=False)
    answers, source = read_answers(csv)
    assert source.format == "plain" and source.records == 2 and len(source.sha256) == 64
    assert answers[["question_id", "answer", "line"]].values.tolist() == [["1", "a cup", 2], ["2", "no", 3]]
    jsonl = _jsonl(tmp_path / "a.jsonl", [{"question_id": 3, "answer": "yes"}])
    assert detect_format(jsonl) == "plain" and read_answers(jsonl)[0]["question_id"].tolist() == ["3"]


def test_lmms_eval_samples(tmp_path):
    doc = {"item_id": "2", "question": "What is this?"}
    line = {"doc_id": 0, "doc": doc, "target": "", "arguments": [], "resps": [["A mug."]],
            "filtered_resps": ["A mug."], "doc_hash": lmms_doc_hash(doc), "item_id": "2"}
    path = _jsonl(tmp_path / "2026_samples_vizwiz_lf.jsonl", [line])
    (tmp_path / "2026_results.json").write_text(json.dumps({"config": {"lmms_eval_version": "0.9.9"}}))
    answers, source = read_answers(path)
    assert source.format == "lmms-eval" and source.toolkit == "lmms-eval" and source.version == "0.9.9"
    assert answers.loc[0, ["item_id", "doc_id", "answer"]].tolist() == ["2", 0, "A mug."]


def test_lmms_eval_version_is_the_package_not_a_git_commit(tmp_path):
    """lmms-eval 0.7 records a git branch@commit of the folder it ran in as lmms_eval_version: never taken for its
    version; the package version the exported task logs from lmms-eval's own metadata is."""
    line = {"doc_id": 0, "filtered_resps": ["A mug."], "doc_hash": "x", "item_id": "2"}
    results = {"lmms_eval_version": "main@ce7546d", "git_hash": "ce7546d"}
    (tmp_path / "2026_results.json").write_text(json.dumps(results))
    path = _jsonl(tmp_path / "2026_samples_t.jsonl", [line])
    version = read_answers(path)[1].version
    assert version.startswith("unknown: ") and "main@ce7546d" in version and "git branch@commit" in version
    path = _jsonl(tmp_path / "2026_samples_t.jsonl", [{**line, "lmms_eval_package_version": "0.7.3"}])
    assert read_answers(path)[1].version == "0.7.3"


def test_truncated_jsonl_line_is_named(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text('{"question_id": 1, "answer": "a"}\n{"question_id": 2, "ans', encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"a\.jsonl: line 2: not valid JSON .*truncated"):
        read_answers(path)


def test_wrong_encoding_is_named(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"question_id": 1, "answer": "caf\xe9"}\n')
    with pytest.raises(DataFormatError, match=r"a\.jsonl: line 1: not UTF-8 text \(byte 0xe9"):
        read_answers(path)


def test_format_claimed_but_not_there(tmp_path):
    path = tmp_path / "a.csv"
    pd.DataFrame({"question_id": [1], "answer": ["x"]}).to_csv(path, index=False)
    with pytest.raises(DataFormatError, match=r"line 1 \(header\): no `prediction`|field `prediction` is missing"):
        read_answers(path, format="vlmevalkit")
    unknown = tmp_path / "b.csv"
    pd.DataFrame({"question_id": [1], "text": ["x"]}).to_csv(unknown, index=False)
    with pytest.raises(DataFormatError, match=r"not an answers file this reader knows: columns/keys \['question_id', "
                                              r"'text'\]"):
        read_answers(unknown)



def test_a_json_lines_file_that_is_a_pipe_is_refused_by_name_not_waited_on(tmp_path):
    """read_json_lines also reads toolkit task data (answer_matching), not only files read_answers checked first."""
    import os

    from vqalib.core.answer_formats import read_json_lines
    from vqalib.core.io import NotRegularFile

    pipe = tmp_path / "task.jsonl"
    os.mkfifo(pipe)
    with pytest.raises(NotRegularFile, match="named pipe"):
        read_json_lines(pipe)


def test_a_new_format_is_one_registered_class(tmp_path):
    from vqalib.core import answer_formats

    class Responses(answer_formats.AnswerFormat):  # e.g. a harness writing {"id": ..., "response": ...} lines
        name, toolkit = "responses", "some harness"
        shape = 'JSON lines with id and response, e.g. {"id": 7, "response": "A red car."}'

        def from_record(self, record):
            return "response" in record and "id" in record

        def rows(self, path):
            return [{"line": r["_line"], "question_id": answer_formats.as_id(r["id"]), "answer": r["response"]}
                    for r in answer_formats.read_json_lines(path)]

    registered = dict(answer_formats.FORMATS)
    try:
        answer_formats.register(Responses(), before="plain")
        path = tmp_path / "responses.jsonl"
        path.write_text('{"id": 7, "response": "A red car."}\n{"id": 8, "response": "No."}\n', encoding="utf-8")
        answers, source = read_answers(path)
        assert detect_format(path) == "responses" and source.toolkit == "some harness"
        assert list(answers["question_id"]) == ["7", "8"] and list(answers["answer"]) == ["A red car.", "No."]
        with pytest.raises(ValueError, match="needs a new name"):
            answer_formats.register(Responses())
    finally:  # the registry is shared by the whole process
        answer_formats.FORMATS.clear()
        answer_formats.FORMATS.update(registered)


def test_a_file_no_format_fits_lists_every_accepted_shape_with_an_example(tmp_path):
    from vqalib.core import answer_formats

    path = tmp_path / "other.jsonl"
    path.write_text('{"id": 7, "text": "A red car."}\n', encoding="utf-8")
    with pytest.raises(DataFormatError) as error:
        detect_format(path)
    for fmt in answer_formats.FORMATS.values():
        assert f"{fmt.name}: {fmt.shape}" in str(error.value)
    assert "columns/keys ['id', 'text']" in str(error.value)


def test_json_object_keyed_by_question_id(tmp_path):
    """A release's shape: one JSON object keyed by question id, the answer a string, under `answer` or under a field
    a paper declares (`answer_paragraph`), on one line or pretty-printed."""
    flat = tmp_path / "flat.json"
    flat.write_text(json.dumps({"7": "A red car.", "8": None}))
    assert detect_format(flat) == "keyed-json"
    answers = read_answers(flat)[0]
    assert answers[["question_id", "line"]].values.tolist() == [["7", 1], ["8", 2]]
    assert answers.loc[0, "answer"] == "A red car." and pd.isna(answers.loc[1, "answer"])  # counted as empty
    nested = tmp_path / "release.json"
    nested.write_text(json.dumps({"7": {"model": "M", "answer_paragraph": " A red car."}}, indent=4))
    assert detect_format(nested) == "vizwiz-lf-release"
    assert read_answers(nested)[0]["answer"].tolist() == [" A red car."]
    with pytest.raises(DataFormatError, match=r"one JSON document, not JSON lines .* the accepted shapes are"):
        read_answers(nested, format="plain")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({str(k): {"text": "x"} for k in range(600)}))
    with pytest.raises(DataFormatError, match=r"\.\.\. \(600 in all\)'\]; the accepted shapes are .*keyed-json: one "
                                              r"JSON object keyed by question id, e\.g\."):
        detect_format(bad)
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"7": {"answer_paragraph": "a"}, "8": {"answer_paragraph": ["a"]}}))
    with pytest.raises(DataFormatError, match=r"key '8' \(entry 2\): the answer is a list, expected text"):
        read_answers(broken)


def test_a_table_with_prediction_but_no_id_names_the_closest_shapes_not_a_missing_item_id(tmp_path, capsys):
    """`qid,prediction` was taken for VLMEvalKit and refused for a missing `item_id`, never naming question_id/answer."""
    path = tmp_path / "preds.csv"
    pd.DataFrame({"qid": range(1, 601), "prediction": "A red car."}).to_csv(path, index=False)
    with pytest.raises(DataFormatError) as error:
        read_answers(path)
    text = str(error.value)
    assert text.startswith(f"{path}: not an answers file this reader knows: columns/keys ['qid', 'prediction']; "
                           "the closest shapes: vlmevalkit, which has `prediction` but no `index`, `item_id` or "
                           "`question_id` (is `qid` one?); plain, which has no `question_id` or `item_id` (is `qid` "
                           "one?) and no `answer`. Rename the columns to one of these shapes, or name the format with "
                           "--format; the accepted shapes are ")
    assert "item_id` (600 rows" not in text
    from vqalib.compendium.cli import main

    status = main(["score", str(path), "--dataset", "vizwiz-lf", "--model", "m", "--out", str(tmp_path / "card")])
    err = capsys.readouterr().err
    assert status == 1 and "the closest shapes: vlmevalkit" in err and "Traceback" not in err
    assert not (tmp_path / "card").exists()
    answers = tmp_path / "answers.csv"
    pd.DataFrame({"qid": [1], "answer": ["x"]}).to_csv(answers, index=False)
    with pytest.raises(DataFormatError, match=r"closest shapes: plain, which has `answer` but no `question_id` or "
                                              r"`item_id` \(is `qid` one\?\)"):
        detect_format(answers)
    far = tmp_path / "far.csv"
    pd.DataFrame({"image": ["a.jpg"], "response": ["x"]}).to_csv(far, index=False)
    with pytest.raises(DataFormatError) as error:
        detect_format(far)
    assert "closest" not in str(error.value) and "the accepted shapes are" in str(error.value)  # nothing near: say all
    ok = tmp_path / "ok.csv"
    pd.DataFrame({"question_id": [1], "prediction": ["x"]}).to_csv(ok, index=False)
    assert detect_format(ok) == "vlmevalkit"  # an id to join on: VLMEvalKit's layout with our question ids


def test_a_column_name_with_terminal_escapes_is_shown_escaped(tmp_path):
    path = tmp_path / "evil.csv"
    path.write_text("\x1b]0;owned\x07qid,prediction\n1,x\n", encoding="utf-8")
    with pytest.raises(DataFormatError) as error:
        detect_format(path)
    assert "\x1b" not in str(error.value) and "\x07" not in str(error.value)
    assert "\\x1b]0;owned\\x07qid" in str(error.value)


def test_an_answer_over_the_declared_length_is_named_with_its_record_and_id(tmp_path, monkeypatch):
    monkeypatch.setenv("VQALIB_MAX_ANSWER_CHARS", "10")
    keyed = tmp_path / "keyed.json"
    keyed.write_text(json.dumps({"7": "short", "\x1b[2J8": "far too long an answer"}))
    with pytest.raises(DataFormatError, match=r"keyed\.json: entry 2 \(question id '\\x1b\[2J8'\): the answer is 22 "
                                              r"characters, over the limit of 10 characters per answer \(set "
                                              r"VQALIB_MAX_ANSWER_CHARS to score longer answers\)$"):
        read_answers(keyed)
    lmms = _jsonl(tmp_path / "s.jsonl", [{"doc_id": 3, "filtered_resps": ["x" * 11], "doc_hash": "h"}])
    with pytest.raises(DataFormatError, match=r"s\.jsonl: line 1 \(doc id '3'\): the answer is 11 characters"):
        read_answers(lmms)
    monkeypatch.setenv("VQALIB_MAX_ANSWER_CHARS", "22")
    assert read_answers(keyed)[0]["answer"].tolist() == ["short", "far too long an answer"]


def test_an_answers_file_that_is_a_pipe_is_refused_not_waited_on(tmp_path):
    import os

    pipe = tmp_path / "answers.jsonl"
    os.mkfifo(pipe)
    with pytest.raises(DataFormatError, match="not a regular file"):
        read_answers(pipe)
