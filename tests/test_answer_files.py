"""Reading model answers from every source (vqalib.core.answer_files): formats, joins, and named errors."""

import json

import pandas as pd
import pytest

from vqalib.core.answer_files import detect_format, read_answers
from vqalib.core.answer_matching import coverage_text, join_task_data, lmms_doc_hash, match_answers
from vqalib.core.io import DataFormatError

IDS = ["1", "2", "3", "4"]


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
    assert source.format == "lmms-eval" and source.toolkit == "lmms-eval" and source.version == "lmms_eval_version 0.9.9"
    assert answers.loc[0, ["item_id", "doc_id", "answer"]].tolist() == ["2", 0, "A mug."]


def test_lmms_doc_id_join_checks_the_hash(tmp_path):
    docs = [{"item_id": "3", "question": "q3"}, {"item_id": "4", "question": "q4"}]
    data = _jsonl(tmp_path / "task.jsonl", docs)
    lines = [{"doc_id": 1, "filtered_resps": ["four"], "doc_hash": lmms_doc_hash(docs[1])}]
    answers, _ = read_answers(_jsonl(tmp_path / "s.jsonl", lines))
    assert join_task_data(answers, task_data=data).loc[0, "item_id"] == "4"
    bad = _jsonl(tmp_path / "t.jsonl", [{"doc_id": 1, "filtered_resps": ["x"], "doc_hash": "0" * 64}])
    with pytest.raises(DataFormatError, match=r"t\.jsonl: line 1: doc_hash 000000000000… differs from document 1"):
        join_task_data(read_answers(bad)[0], task_data=data, answers_path=str(bad))
    far = _jsonl(tmp_path / "u.jsonl", [{"doc_id": 9, "filtered_resps": ["x"]}])
    with pytest.raises(DataFormatError, match="doc_id 9 is not a document of"):
        join_task_data(read_answers(far)[0], task_data=data)


@pytest.mark.parametrize("suffix", [".tsv", ".xlsx", ".json"])
def test_vlmevalkit_predictions(tmp_path, suffix):
    frame = pd.DataFrame({"index": [0, 1], "question_id": ["1", "2"], "question": ["q1", "q2"],
                          "answer": ["", ""], "prediction": ["red", "blue"]})
    path = tmp_path / f"MyModel_VizWizLF_openended{suffix}"
    if suffix == ".tsv":
        frame.to_csv(path, sep="\t", index=False)
    elif suffix == ".xlsx":
        frame.to_excel(path, index=False)
    else:
        path.write_text(json.dumps(frame.to_dict("records"), indent=4))
    (tmp_path / "status.json").write_text(json.dumps({"schema_version": "1.0", "commit": "e8e78f05"}))
    answers, source = read_answers(path)
    assert source.format == "vlmevalkit" and source.version == "commit e8e78f05"
    assert answers[["question_id", "index", "answer"]].values.tolist() == [["1", "0", "red"], ["2", "1", "blue"]]


def test_vlmevalkit_index_join(tmp_path):
    exported = tmp_path / "VizWizLF_openended.tsv"
    pd.DataFrame({"index": [0, 1], "question_id": ["3", "4"], "question": ["q", "q"]}).to_csv(exported, sep="\t",
                                                                                           index=False)
    pred = tmp_path / "m.tsv"
    pd.DataFrame({"index": [1], "prediction": ["x"]}).to_csv(pred, sep="\t", index=False)
    assert join_task_data(read_answers(pred)[0], task_data=exported).loc[0, "item_id"] == "4"


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


def _rows(ids, answers):
    return pd.DataFrame({"item_id": ids, "answer": answers, "line": range(2, 2 + len(ids))})


def test_match_counts_every_row():
    matched, coverage = match_answers(_rows(["1", "2", "9", "3"], ["a", " ", "b", None]), ids=IDS, dataset="toy")
    assert matched["item_id"].tolist() == ["1"]
    assert {k: coverage[k] for k in ("given", "matched", "missing", "unknown", "empty")} == {
        "given": 4, "matched": 1, "missing": ["4"], "unknown": ["9"], "empty": ["2", "3"]}
    assert coverage_text(coverage) == "scored on 1 of 4 toy questions (1 missing, 2 empty, 1 unknown)"


def test_no_id_matches_names_the_other_dataset():
    with pytest.raises(DataFormatError, match=r"0 of 2 ids match toy: 999999, 999998; is this other\? \(100% of"):
        match_answers(_rows(["999999", "999998"], ["a", "b"]), ids=IDS, dataset="toy",
                      others={"other": {"999999", "999998"}})


def test_duplicates_refused_unless_told():
    rows = _rows(["1", "1", "2"], ["first", "last", "x"])
    with pytest.raises(DataFormatError, match=r"1 toy ids answered more than once: 1 \(lines 2/3\); keep one with "
                                              "--duplicates first|last"):
        match_answers(rows, ids=IDS, dataset="toy")
    for rule, kept in (("first", "first"), ("last", "last")):
        matched, coverage = match_answers(rows, ids=IDS, dataset="toy", duplicates=rule)
        assert matched.set_index("item_id").loc["1", "answer"] == kept and coverage["duplicate"] == ["1"]
