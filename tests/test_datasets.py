import json
from pathlib import Path

import pytest

from vqalib import datasets
from vqalib.datasets import DataFormatError, DataIntegrityError
from vqalib.validation import ValidationReport


def _mirror_with(tmp_path: Path, key: str, content: bytes) -> Path:
    mirror = tmp_path / "mirror"
    (mirror / key).parent.mkdir(parents=True)
    (mirror / key).write_bytes(content)
    return mirror


# --- registry and fetching -----------------------------------------------------------

def test_registry_lists_every_upstream_file_at_a_pinned_commit():
    keys = [f.key for f in datasets.REGISTRY]
    assert len(keys) == len(set(keys)) == 18
    assert sum(f.dataset == "vizwiz-lf" for f in datasets.REGISTRY) == 7
    assert sum(k.startswith("commvqa/results/") for k in keys) == 8  # four models x two prompts
    assert sum(f.dataset == "lave" for f in datasets.REGISTRY) == 2  # the LAVE reference's demonstrations
    for f in datasets.REGISTRY:
        assert len(f.commit) == 40 and f.commit in f.url and f.upstream_path in f.url
        assert len(f.sha256) == 64


def test_registry_hashes_match_the_shared_sha256sums(data_dir):
    for spec in datasets.REGISTRY:
        assert datasets.sha256_of(data_dir / spec.key) == spec.sha256


def test_fetch_copies_from_mirror_then_leaves_present_files(tmp_path, data_dir):
    key = "vizwiz-lf/qwen.json"
    mirror = _mirror_with(tmp_path, key, (data_dir / key).read_bytes())
    out = tmp_path / "raw"
    first = datasets.fetch([key], data_dir=out, mirror=mirror, progress=False)
    assert first["action"].tolist() == ["copied"]
    assert datasets.sha256_of(out / key) == datasets.spec_for(key).sha256
    second = datasets.fetch([key], data_dir=out, mirror=mirror, progress=False)
    assert second["action"].tolist() == ["present"]


def test_fetch_refuses_a_file_with_a_wrong_hash_and_writes_nothing(tmp_path):
    key = "vizwiz-lf/expert.json"
    mirror = _mirror_with(tmp_path, key, b'{"tampered": true}')
    out = tmp_path / "raw"
    with pytest.raises(DataIntegrityError) as err:
        datasets.fetch([key], data_dir=out, mirror=mirror, progress=False)
    message = str(err.value)
    assert key in message
    assert datasets.spec_for(key).sha256 in message  # expected
    assert datasets.sha256_of(mirror / key) in message  # actual
    assert not (out / key).exists()
    assert list((out / "vizwiz-lf").iterdir()) == []  # no partial file left behind


def test_fetch_replaces_a_corrupted_local_file(tmp_path, data_dir):
    key = "vizwiz-lf/gemini.json"
    mirror = _mirror_with(tmp_path, key, (data_dir / key).read_bytes())
    out = tmp_path / "raw"
    (out / key).parent.mkdir(parents=True)
    (out / key).write_text("corrupted")
    assert datasets.fetch([key], data_dir=out, mirror=mirror, progress=False)["action"].tolist() == ["copied"]
    datasets.verified_path(key, data_dir=out)


def test_fetch_names_a_file_missing_from_the_mirror(tmp_path):
    with pytest.raises(FileNotFoundError, match="vizwiz-lf/llava.json"):
        datasets.fetch(["vizwiz-lf/llava.json"], data_dir=tmp_path / "raw", mirror=tmp_path, progress=False)


def test_loader_refuses_a_local_file_whose_hash_changed(tmp_path, data_dir):
    key = "vizwiz-lf/blip2.json"
    (tmp_path / key).parent.mkdir(parents=True)
    (tmp_path / key).write_bytes((data_dir / key).read_bytes() + b"\n")
    with pytest.raises(DataIntegrityError, match="blip2.json: SHA-256 mismatch"):
        datasets.load_vizwiz_lf(data_dir=tmp_path, sources=["blip2"])


def test_unknown_registry_key_is_named():
    with pytest.raises(KeyError, match="nope.json"):
        datasets.spec_for("nope.json")


def test_cli_fetch_and_verify(tmp_path, data_dir, capsys):
    assert datasets.main(["verify", "--data-dir", str(data_dir)]) == 0
    assert "ok  vizwiz-lf/expert.json" in capsys.readouterr().out
    assert datasets.main(["verify", "--data-dir", str(tmp_path)]) == 1
    assert "does not exist" in capsys.readouterr().err


# --- bad input ---------------------------------------------------------------------

def test_malformed_json_names_file_and_position(tmp_path):
    bad = tmp_path / "broken.json"
    bad.write_text('{"1": {"model": "Expert",\n  "question": }\n}')
    with pytest.raises(DataFormatError, match=r"broken.json: malformed JSON at line 2, column 15 \(char \d+\)"):
        datasets.load_vizwiz_lf(paths={"broken": bad})


def test_missing_field_names_file_id_and_field(small_file):
    raw = json.loads(small_file.read_text())
    del raw["2"]["answer_sentences"]
    small_file.write_text(json.dumps(raw))
    with pytest.raises(DataFormatError, match=r"small.json: entry '2' lacks required field 'answer_sentences'"):
        datasets.load_vizwiz_lf(paths={"small": small_file})


@pytest.mark.parametrize("field, value, message", [
    ("functional_roles", "Answer", r"entry '3' field 'functional_roles' is a str, expected list"),
    ("functional_roles", [["Answer"], "Misc"], r"entry '3' field 'functional_roles'\[1\] is not a list of strings"),
    ("answerability", "maybe", r"entry '3' field 'answerability' is 'maybe'"),
    ("question_type", "Counting", r"entry '3' field 'question_type' is 'Counting'"),
    ("crowd_answers", ["blue", 3], r"entry '3' field 'crowd_answers'\[1\] is not a string"),
])
def test_wrong_types_and_values_are_named(small_file, field, value, message):
    raw = json.loads(small_file.read_text())
    raw["3"][field] = value
    small_file.write_text(json.dumps(raw))
    with pytest.raises(DataFormatError, match=message):
        datasets.load_vizwiz_lf(paths={"small": small_file})


def test_non_integer_question_id_is_named(small_file):
    raw = json.loads(small_file.read_text())
    raw["x7"] = raw.pop("3")
    small_file.write_text(json.dumps(raw))
    with pytest.raises(DataFormatError, match=r"small.json: question id 'x7' is not an integer"):
        datasets.load_vizwiz_lf(paths={"small": small_file})


# --- validation rules on the hand-made file ------------------------------------------

def test_small_file_loads_with_every_quirk_counted(small_file):
    data = datasets.load_vizwiz_lf(paths={"small": small_file})
    report = data.report.to_frame().set_index(["check", "detail", "action"])["count"]
    assert report[("label_alias", "role 'Confirmation of Photo' -> 'Confirmation'", "mapped")] == 1
    assert report[("label_alias", "role 'Explanation of Reasoning' -> 'Explanation'", "mapped")] == 1
    assert report[("label_alias", "info 'image_content' -> 'Image Content'", "mapped")] == 1
    assert report[("unknown_label", "role 'Greeting'", "kept as written; not counted in any taxonomy column")] == 1
    assert report[("sentence_label_mismatch", "more sentences than label lists",
                   "shortest fragments merged into their neighbour (answers)")] == 1
    assert report[("sentence_label_mismatch", "more sentences than label lists",
                   "fragments merged away (sentences)")] == 1
    assert report[("whitespace", "question has leading/trailing white space", "trimmed")] == 1
    assert report[("crowd_majority_not_an_answer", "crowd_majority is 'unanswerable'",
                   "kept; answerability comes from the 'answerability' field")] == 1
    assert report[("sentence_without_label", "no info label", "kept with an empty label list")] == 2
    # nothing lost: 3 answers, 2 + 3 + 2 labelled units
    assert len(data.answers) == 3
    assert data.sentences.groupby("question_id").size().to_dict() == {1: 2, 2: 3, 3: 2}


def test_small_file_frames_hold_canonical_labels(small_file):
    data = datasets.load_vizwiz_lf(paths={"small": small_file})
    a = data.answers.set_index("question_id")
    assert a.loc[1, "roles"] == ("Confirmation", "Answer", "Auxiliary")
    assert a.loc[2, "info_sources"] == ("Image Quality", "External Information")
    assert a.loc[3, "roles"] == ("Answer", "Greeting")  # unknown label kept, after the taxonomy's
    assert a.loc[1, "question"] == "What is this?"
    assert a.loc[1, "question_words"] == 3 and a.loc[1, "answer_words"] == 10
    assert a.loc[1, "crowd_answer_words"] == (1, 2, 3)
    s = data.sentences[data.sentences["question_id"] == 2]
    assert s["sentence"].tolist() == ["The box is from ACME CO. INC", "and the text is blurred",
                                      "Please retake the photo"]
    assert s["alignment"].tolist() == ["merged_fragments", "aligned", "aligned"]
    assert s["n_fragments"].tolist() == [2, 1, 1]


def test_merge_fragments_rule():
    frags = ["A long first sentence", "B", "a middle sentence", "C", "the end of it"]
    assert datasets.merge_fragments(frags, n_units=3) == [[0, 1], [2, 3], [4]]
    assert datasets.merge_fragments(["x", "a much longer one"], n_units=1) == [[0, 1]]
    assert datasets.merge_fragments(["tiny", "a much longer one", "and another"], n_units=2) == [[0, 1], [2]]


@pytest.mark.parametrize("roles, infos, sentences, expected_alignment, check_detail", [
    ([], [], ["one", "two"], ["no_labels", "no_labels"], "answer has sentences but no label lists"),
    ([["Answer"], ["Misc"], ["Misc"]], [[], [], []], ["one", "two"],
     ["aligned", "aligned", "extra_label_list"], "more label lists than sentences"),
])
def test_other_mismatch_rules_keep_every_unit(small_file, roles, infos, sentences, expected_alignment, check_detail):
    raw = json.loads(small_file.read_text())
    raw["3"].update(functional_roles=roles, information_types=infos, answer_sentences=sentences)
    small_file.write_text(json.dumps(raw))
    data = datasets.load_vizwiz_lf(paths={"small": small_file})
    assert data.sentences.query("question_id == 3")["alignment"].tolist() == expected_alignment
    assert data.report.to_frame().query("check == 'sentence_label_mismatch'")["detail"].str.contains(check_detail).any()


def test_role_and_info_list_counts_differing_is_reported(small_file):
    raw = json.loads(small_file.read_text())
    raw["1"]["information_types"] = [["image_content"]]
    small_file.write_text(json.dumps(raw))
    data = datasets.load_vizwiz_lf(paths={"small": small_file})
    assert data.report.total(check="role_info_count_differs") == 1
    assert data.sentences.query("question_id == 1")["info_sources"].tolist() == [("Image Content",), ()]


def test_duplicate_label_in_a_sentence_is_counted(small_file):
    raw = json.loads(small_file.read_text())
    raw["3"]["functional_roles"][0] = ["Answer", "Answer"]
    small_file.write_text(json.dumps(raw))
    data = datasets.load_vizwiz_lf(paths={"small": small_file})
    assert data.report.total(check="duplicate_label") == 1
    assert data.sentences.query("question_id == 3")["roles"].iloc[0] == ("Answer",)


def test_missing_ids_and_cross_source_mismatches(small_file, tmp_path):
    raw = json.loads(small_file.read_text())
    other = {k: dict(v, model="Other") for k, v in raw.items() if k != "2"}
    other["3"]["answerability"] = "unanswerable"
    (tmp_path / "other.json").write_text(json.dumps(other))
    data = datasets.load_vizwiz_lf(paths={"small": small_file, "other": tmp_path / "other.json"})
    report = data.report.to_frame()
    missing = report.query("check == 'missing_question_ids'")
    assert missing["file"].tolist() == ["other.json"] and missing["count"].tolist() == [1]
    assert "absent: 2" in missing["detail"].iloc[0]
    mism = report.query("check == 'cross_source_mismatch'")
    assert mism["detail"].tolist() == ["field 'answerability' differs"]
    assert mism["examples"].tolist() == ["id 3"]


def test_report_extend_and_total():
    a, b = ValidationReport(), ValidationReport()
    a.add(file="f", check="c", detail="d", action="x", example="id 1")
    b.add(file="f", check="c", detail="d", action="x", count=2, example="id 2")
    a.extend(b)
    assert a.total(check="c") == 3 and a.total(check="c", file="g") == 0
    assert a.to_frame()["examples"].tolist() == ["id 1; id 2"]


# --- the real release ----------------------------------------------------------------

def test_real_release_shape(vizwiz):
    answers = vizwiz.answers
    assert len(answers) == 6 * 600 + 596
    assert answers.groupby("source").size().to_dict()["QWEN"] == 596
    assert answers["question_id"].nunique() == 600
    expert = answers[answers["source"] == "Expert"]
    assert expert["answerability"].value_counts().to_dict() == {"answerable": 370, "unanswerable": 230}
    assert expert["question_type"].value_counts().unique().tolist() == [150]
    assert not answers["crowd_majority"].isna().any()


def test_real_release_quirks_are_counted(vizwiz):
    report = vizwiz.report.to_frame()
    qwen = report.query("file == 'qwen.json' and check == 'missing_question_ids'")
    assert qwen["count"].tolist() == [4] and "10, 13, 14, 15" in qwen["detail"].iloc[0]
    aliases = report.query("check == 'label_alias'").set_index(["file", "detail"])["count"]
    assert aliases[("expert.json", "role 'Confirmation of Photo' -> 'Confirmation'")] == 303
    assert aliases[("gpt-4v.json", "role 'Explanation of Reasoning' -> 'Explanation'")] == 822
    assert report.query("check == 'unknown_label'").empty
    mismatched = report.query("check == 'sentence_label_mismatch' and action.str.endswith('(answers)')")
    assert mismatched.set_index("file")["count"].to_dict() == {
        "blip2.json": 9, "expert.json": 72, "gemini.json": 51, "gpt-4v.json": 75,
        "instruct_blip.json": 29, "llava.json": 74, "qwen.json": 38}
    # every file mismatches in 1.5-12.5% of its entries (the data README says 5-12% for most)
    assert report.query("check == 'cross_source_mismatch'").empty  # questions agree once trimmed


def test_real_release_keeps_every_label(vizwiz, data_dir):
    """Nothing dropped: the sentence frame holds exactly as many labels as the raw files."""
    for stem, source in [("gpt-4v", "GPT-4V"), ("expert", "Expert"), ("qwen", "QWEN")]:
        raw = json.loads((data_dir / f"vizwiz-lf/{stem}.json").read_text())
        n_roles = sum(len(r) for v in raw.values() for r in v["functional_roles"])
        n_infos = sum(len(r) for v in raw.values() for r in v["information_types"])
        s = vizwiz.sentences[vizwiz.sentences["source"] == source]
        assert s["roles"].map(len).sum() == n_roles
        assert s["info_sources"].map(len).sum() == n_infos
        assert len(s) == sum(len(v["functional_roles"]) for v in raw.values())


def test_write_atomic_leaves_only_the_target(tmp_path):
    target = datasets.write_atomic(tmp_path / "sub" / "a.bin", b"xyz")
    assert target.read_bytes() == b"xyz" and [p.name for p in target.parent.iterdir()] == ["a.bin"]
    datasets.write_atomic(target, b"new")  # replaces in one step
    assert target.read_bytes() == b"new" and len(list(target.parent.iterdir())) == 1
