"""Joining answer rows to a dataset (vqalib.core.answer_matching): toolkit row numbers through the exported task
data, and every row counted or refused by name."""

import json

import pandas as pd
import pytest

from vqalib.core.answer_files import read_answers
from vqalib.core.answer_matching import coverage_text, join_task_data, lmms_doc_hash, match_answers
from vqalib.core.io import DataFormatError

IDS = ["1", "2", "3", "4"]


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


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


def test_vlmevalkit_version_unknown_says_why(tmp_path):
    path = tmp_path / "MyModel_VizWizLF_openended.tsv"
    pd.DataFrame({"index": [0], "question_id": ["1"], "prediction": ["red"]}).to_csv(path, sep="\t", index=False)
    assert read_answers(path)[1].version == "unknown: no status.json beside MyModel_VizWizLF_openended.tsv"
    status = tmp_path / "status.json"
    status.write_text(json.dumps({"schema_version": "1.0", "commit": "unknown"}))
    assert read_answers(path)[1].version == ("unknown: status.json beside MyModel_VizWizLF_openended.tsv records no "
                                             "commit or version")
    status.write_text("{not json")
    version = read_answers(path)[1].version
    assert version.startswith("unknown: status.json beside MyModel_VizWizLF_openended.tsv could not be read as JSON: ")


def test_vlmevalkit_index_join(tmp_path):
    exported = tmp_path / "VizWizLF_openended.tsv"
    pd.DataFrame({"index": [0, 1], "question_id": ["3", "4"], "question": ["q", "q"]}).to_csv(exported, sep="\t",
                                                                                           index=False)
    pred = tmp_path / "m.tsv"
    pd.DataFrame({"index": [1], "prediction": ["x"]}).to_csv(pred, sep="\t", index=False)
    assert join_task_data(read_answers(pred)[0], task_data=exported).loc[0, "item_id"] == "4"


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


def test_lmms_eval_07_null_document_hash_is_not_a_mismatch(tmp_path):
    from vqalib.core.answer_matching import NULL_DOC_HASH

    data = _jsonl(tmp_path / "task.jsonl", [{"item_id": "3"}])
    line = {"doc_id": 0, "filtered_resps": "three", "doc_hash": NULL_DOC_HASH}  # lmms-eval 0.7.3 logs this on every line
    answers, _ = read_answers(_jsonl(tmp_path / "s.jsonl", [line]))
    assert join_task_data(answers, task_data=data).loc[0, ["item_id", "answer"]].tolist() == ["3", "three"]


def test_declared_aliases_are_mapped_counted_and_never_guessed():
    from vqalib.core.answer_matching import QuestionAlias

    alias = QuestionAlias.from_pairs("image file name", [("a.jpg", "1"), ("c.jpg", "3"), ("b.jpg", "2"),
                                                         ("b.jpg", "4"), ("2", "3")])
    matched, coverage = match_answers(_rows(["a.jpg", "2", "c.jpg", "9"], ["w", "x", "y", "z"]), ids=IDS,
                                      dataset="toy", aliases=[alias])
    assert matched[["item_id", "answer"]].values.tolist() == [["1", "w"], ["2", "x"], ["3", "y"]]  # "2" is an id
    assert coverage["aliased"] == {"image file name": 2} and coverage["unknown"] == ["9"]
    assert coverage_text(coverage) == ("scored on 3 of 4 toy questions (1 missing, 1 unknown, 2 matched by image file "
                                       "name)")
    assert "aliased" not in match_answers(_rows(["1"], ["w"]), ids=IDS, dataset="toy", aliases=[alias])[1]
    with pytest.raises(DataFormatError, match=r"answers: line 3: 'b\.jpg' \(image file name\) names 2 questions "
                                              r"\(2, 4\), so it is matched to none of them: give the question id \(rows "
                                              r"naming an ambiguous image file name: 1\)"):
        match_answers(_rows(["1", "b.jpg"], ["w", "x"]), ids=IDS, dataset="toy", aliases=[alias])
    with pytest.raises(DataFormatError, match=r"1 toy ids answered more than once: 1 \(lines 2/3\)"):
        match_answers(_rows(["1", "a.jpg"], ["w", "x"]), ids=IDS, dataset="toy", aliases=[alias])


def test_ids_with_terminal_escapes_are_quoted_escaped_in_messages(tmp_path):
    evil = "\x1b[2J\x1b]0;owned\x07"
    for rows, kwargs in ((_rows([evil, evil + "2"], ["a", "b"]), {}),
                         (_rows(["1", "1" + evil, "2" + evil], ["a", "b", "c"]), {}),
                         (_rows(["1", "1"], ["a", "b"]).assign(item_id=[evil, evil]), {"ids": [evil]})):
        with pytest.raises(DataFormatError) as error:
            match_answers(rows, **{"ids": IDS, "dataset": "toy", **kwargs})
        assert "\x1b" not in str(error.value) and "\x07" not in str(error.value) and "\\x1b[2J" in str(error.value)
    data = _jsonl(tmp_path / "task.jsonl", [{"item_id": "3"}])
    bad = _jsonl(tmp_path / "t.jsonl", [{"doc_id": 0, "filtered_resps": ["x"], "doc_hash": "\x1b[2J" + "0" * 60}])
    with pytest.raises(DataFormatError) as error:
        join_task_data(read_answers(bad)[0], task_data=data)
    assert "\x1b" not in str(error.value) and "doc_hash \\x1b[2J00000000" in str(error.value)
