import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import local_file_server
from vqalib.core import upstream, fetch, io
from vqalib.core.upstream import DataIntegrityError
from vqalib.core.fetch import FetchError
from vqalib.core.io import DataFormatError
from vqalib.core.validation import ValidationReport
from vqalib.papers.vizwiz_lf import loading

PROJECT = Path(__file__).resolve().parents[1]


def _mirror_with(tmp_path: Path, key: str, content: bytes) -> Path:
    mirror = tmp_path / "mirror"
    (mirror / key).parent.mkdir(parents=True)
    (mirror / key).write_bytes(content)
    return mirror


# --- registry and fetching -----------------------------------------------------------

def test_registry_lists_every_upstream_file_at_a_pinned_commit():
    keys = [f.key for f in upstream.FILES]
    assert len(keys) == len(set(keys)) == 18
    assert sum(f.dataset == "vizwiz-lf" for f in upstream.FILES) == 7
    assert sum(k.startswith("commvqa/results/") for k in keys) == 8  # four models x two prompts
    assert sum(f.dataset == "lave" for f in upstream.FILES) == 2  # the LAVE reference's demonstrations
    for f in upstream.FILES:
        assert len(f.commit) == 40 and f.commit in f.url and f.upstream_path in f.url
        assert len(f.sha256) == 64


def test_registry_hashes_match_the_shared_sha256sums(data_dir):
    for spec in upstream.FILES:
        assert io.sha256_of(data_dir / spec.key) == spec.sha256


def test_fetch_copies_from_mirror_then_leaves_present_files(tmp_path, data_dir):
    key = "vizwiz-lf/qwen.json"
    mirror = _mirror_with(tmp_path, key, (data_dir / key).read_bytes())
    out = tmp_path / "raw"
    first = fetch.fetch([key], data_dir=out, mirror=mirror, progress=False)
    assert first["action"].tolist() == ["copied"]
    assert io.sha256_of(out / key) == upstream.spec_for(key).sha256
    second = fetch.fetch([key], data_dir=out, mirror=mirror, progress=False)
    assert second["action"].tolist() == ["present"]


def test_fetch_refuses_a_file_with_a_wrong_hash_and_writes_nothing(tmp_path):
    key = "vizwiz-lf/expert.json"
    mirror = _mirror_with(tmp_path, key, b'{"tampered": true}')
    out = tmp_path / "raw"
    with pytest.raises(FetchError) as err:
        fetch.fetch([key], data_dir=out, mirror=mirror, progress=False)
    message = str(err.value)
    assert key in message
    assert upstream.spec_for(key).sha256 in message  # expected
    assert io.sha256_of(mirror / key) in message  # actual
    assert not (out / key).exists()
    assert list((out / "vizwiz-lf").iterdir()) == []  # no partial file left behind


def test_fetch_replaces_a_corrupted_local_file(tmp_path, data_dir):
    key = "vizwiz-lf/gemini.json"
    mirror = _mirror_with(tmp_path, key, (data_dir / key).read_bytes())
    out = tmp_path / "raw"
    (out / key).parent.mkdir(parents=True)
    (out / key).write_text("corrupted")
    assert fetch.fetch([key], data_dir=out, mirror=mirror, progress=False)["action"].tolist() == ["copied"]
    upstream.verified_path(key, data_dir=out)


def test_fetch_names_a_file_missing_from_the_mirror(tmp_path):
    with pytest.raises(FetchError, match="vizwiz-lf/llava.json: not in the data mirror"):
        fetch.fetch(["vizwiz-lf/llava.json"], data_dir=tmp_path / "raw", mirror=tmp_path, progress=False)


def test_fetch_checks_every_file_and_reports_each_bad_one_at_once(tmp_path, data_dir):
    good, tampered, absent = "vizwiz-lf/qwen.json", "vizwiz-lf/expert.json", "vizwiz-lf/llava.json"
    mirror = _mirror_with(tmp_path, good, (data_dir / good).read_bytes())
    (mirror / tampered).write_bytes(b'{"tampered": true}')
    out = tmp_path / "raw"
    with pytest.raises(FetchError) as err:
        fetch.fetch([tampered, absent, good], data_dir=out, mirror=mirror, progress=False)
    assert [key for key, _ in err.value.problems] == [tampered, absent]  # the first failure did not stop the rest
    message = str(err.value)
    assert message.startswith(f"2 of 3 registered file(s) could not be fetched into {out}")
    assert (f"{tampered}: SHA-256 mismatch: expected {upstream.spec_for(tampered).sha256}, "
            f"actual {io.sha256_of(mirror / tampered)}") in message
    assert f"{absent}: not in the data mirror {mirror} (looked for {mirror / absent})" in message
    assert sorted(p.name for p in (out / "vizwiz-lf").iterdir()) == ["qwen.json"]  # the good one, nothing partial
    upstream.verified_path(good, data_dir=out)


def test_fetch_over_http_reports_a_missing_upstream_file_and_a_hash_mismatch(tmp_path, data_dir, monkeypatch):
    served = tmp_path / "upstream"
    (served / "vizwiz-lf").mkdir(parents=True)
    (served / "vizwiz-lf/expert.json").write_bytes(b"{}")
    shutil.copy(data_dir / "vizwiz-lf/qwen.json", served / "vizwiz-lf/qwen.json")
    out = tmp_path / "raw"
    with local_file_server(served) as (base, hits):
        monkeypatch.setattr(upstream.DataFile, "url", property(lambda spec: f"{base}/{spec.key}"))
        with pytest.raises(FetchError) as err:
            fetch.fetch(["vizwiz-lf/expert.json", "vizwiz-lf/llava.json", "vizwiz-lf/qwen.json"],
                           data_dir=out, mirror=None, progress=False)
    problems = dict(err.value.problems)
    assert list(problems) == ["vizwiz-lf/expert.json", "vizwiz-lf/llava.json"]
    assert f"actual {io.sha256_of(served / 'vizwiz-lf/expert.json')}" in problems["vizwiz-lf/expert.json"]
    assert "not found upstream (HTTP 404" in problems["vizwiz-lf/llava.json"]
    assert f"{base}/vizwiz-lf/llava.json" in problems["vizwiz-lf/llava.json"]
    assert sorted(p.name for p in (out / "vizwiz-lf").iterdir()) == ["qwen.json"]


def test_fetch_removes_stale_partial_files_and_counts_them(tmp_path, data_dir):
    key = "vizwiz-lf/gemini.json"
    mirror = _mirror_with(tmp_path, key, (data_dir / key).read_bytes())
    out = tmp_path / "raw"
    (out / "vizwiz-lf").mkdir(parents=True)
    for name in (".gemini.json.k1l2m3.part", ".gemini.json.x9y8z7.part"):
        (out / "vizwiz-lf" / name).write_bytes(b'{"1": {"model": "Gemi')  # what a killed fetch leaves
    done = fetch.fetch([key], data_dir=out, mirror=mirror, progress=False)
    assert done[["action", "stale_parts_removed"]].values.tolist() == [["copied", 2]]
    assert sorted(p.name for p in (out / "vizwiz-lf").iterdir()) == ["gemini.json"]
    again = fetch.fetch([key], data_dir=out, mirror=mirror, progress=False)
    assert again[["action", "stale_parts_removed"]].values.tolist() == [["present", 0]]


@pytest.mark.skipif(fetch.fcntl is None, reason="file locks are POSIX")
def test_a_partial_file_of_a_live_fetch_is_not_swept(tmp_path):
    target = tmp_path / "vizwiz-lf" / "expert.json"
    target.parent.mkdir()
    live = target.parent / ".expert.json.abc123.part"
    live.write_bytes(b"half")
    with open(live, "rb") as held:
        fetch.fcntl.flock(held.fileno(), fetch.fcntl.LOCK_EX)  # as _copy_or_download holds it
        assert fetch.remove_stale_parts(target) == [] and live.exists()
    assert fetch.remove_stale_parts(target) == [live] and not live.exists()


# A fetch in a real child process whose copy stalls after 200,000 bytes (a slow mirror: the child's
# shutil.copyfileobj writes that much, then sleeps), so it sits mid-copy with a partial .part file. A FIFO
# used to stand in for the slow mirror; a mirror file that is not a regular file is now refused at once.
FETCH_CHILD = ("import shutil, sys, time; from pathlib import Path; from vqalib.core.fetch import fetch\n"
               "def stall(src, dst, length=0):\n    dst.write(src.read(200_000)); dst.flush(); time.sleep(3600)\n"
               "shutil.copyfileobj = stall\n"
               "fetch(['vizwiz-lf/expert.json'], data_dir=Path(sys.argv[1]), mirror=Path(sys.argv[2]), progress=False)")


def _fetch_stuck_mid_copy(tmp_path: Path, data_dir: Path):
    """(child process, data folder) once the child has written part of the file."""
    key = "vizwiz-lf/expert.json"
    mirror, out = tmp_path / "slow-mirror", tmp_path / "raw"
    (mirror / "vizwiz-lf").mkdir(parents=True)
    (mirror / key).write_bytes((data_dir / key).read_bytes())
    # a shell that starts jobs with `&` leaves SIGINT ignored in them and their children: give the child the
    # default disposition, as an interactive fetch has, whatever launched pytest
    child = subprocess.Popen([sys.executable, "-c", FETCH_CHILD, str(out), str(mirror)], cwd=PROJECT,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while not any(p.stat().st_size > 0 for p in (out / "vizwiz-lf").glob("*.part")):
        assert child.poll() is None, child.communicate()
        assert time.monotonic() < deadline, "the child wrote no partial file"
        time.sleep(0.05)
    return child, out


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_fetch_interrupted_by_a_signal_removes_its_partial_file(tmp_path, data_dir, sig):
    child, out = _fetch_stuck_mid_copy(tmp_path, data_dir)
    child.send_signal(sig)
    _, stderr = child.communicate(timeout=60)
    assert child.returncode != 0
    if sig == signal.SIGTERM:
        assert child.returncode == 128 + signal.SIGTERM
        assert b"fetch interrupted by SIGTERM: the partial file was removed" in stderr
    assert list((out / "vizwiz-lf").iterdir()) == []  # no .part, nothing under the registered name
    mirror = _mirror_with(tmp_path / "good", "vizwiz-lf/expert.json", (data_dir / "vizwiz-lf/expert.json").read_bytes())
    done = fetch.fetch(["vizwiz-lf/expert.json"], data_dir=out, mirror=mirror, progress=False)
    assert done["stale_parts_removed"].tolist() == [0]
    assert [p.name for p in (out / "vizwiz-lf").iterdir()] == ["expert.json"]


@pytest.mark.full  # slow for `make test` (its 10-minute budget); CI runs it in `make test-full`
def test_fetch_killed_with_sigkill_leaves_a_part_file_that_the_next_fetch_removes(tmp_path, data_dir):
    key = "vizwiz-lf/expert.json"
    child, out = _fetch_stuck_mid_copy(tmp_path, data_dir)
    child.kill()
    child.communicate(timeout=60)
    assert child.returncode == -signal.SIGKILL
    left = list((out / "vizwiz-lf").iterdir())
    assert len(left) == 1 and left[0].name.startswith(".expert.json.") and left[0].suffix == ".part"
    assert left[0].stat().st_size > 0 and not (out / key).exists()  # never under the registered name
    with pytest.raises(FileNotFoundError, match="does not exist"):  # the loaders do not mistake it for data
        upstream.verified_path(key, data_dir=out)
    mirror = _mirror_with(tmp_path / "good", key, (data_dir / key).read_bytes())
    done = fetch.fetch([key], data_dir=out, mirror=mirror, progress=False)
    assert done[["action", "stale_parts_removed"]].values.tolist() == [["copied", 1]]
    assert [p.name for p in (out / "vizwiz-lf").iterdir()] == ["expert.json"]
    upstream.verified_path(key, data_dir=out)


def test_loader_refuses_a_local_file_whose_hash_changed(tmp_path, data_dir):
    key = "vizwiz-lf/blip2.json"
    (tmp_path / key).parent.mkdir(parents=True)
    (tmp_path / key).write_bytes((data_dir / key).read_bytes() + b"\n")
    with pytest.raises(DataIntegrityError, match="blip2.json: SHA-256 mismatch"):
        loading.load_vizwiz_lf(data_dir=tmp_path, sources=["blip2"])


def test_unknown_registry_key_is_named():
    with pytest.raises(KeyError, match="nope.json"):
        upstream.spec_for("nope.json")


def test_malformed_json_names_file_and_position(tmp_path):
    bad = tmp_path / "broken.json"
    bad.write_text('{"1": {"model": "Expert",\n  "question": }\n}')
    with pytest.raises(DataFormatError, match=r"broken.json: malformed JSON at line 2, column 15 \(char \d+\)"):
        loading.load_vizwiz_lf(paths={"broken": bad})


def test_missing_field_names_file_id_and_field(small_file):
    raw = json.loads(small_file.read_text())
    del raw["2"]["answer_sentences"]
    small_file.write_text(json.dumps(raw))
    with pytest.raises(DataFormatError, match=r"small.json: entry '2' lacks required field 'answer_sentences'"):
        loading.load_vizwiz_lf(paths={"small": small_file})


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
        loading.load_vizwiz_lf(paths={"small": small_file})


def test_non_integer_question_id_is_named(small_file):
    raw = json.loads(small_file.read_text())
    raw["x7"] = raw.pop("3")
    small_file.write_text(json.dumps(raw))
    with pytest.raises(DataFormatError, match=r"small.json: question id 'x7' is not an integer"):
        loading.load_vizwiz_lf(paths={"small": small_file})


def _small_with(small_file: Path, old: bytes, new: bytes) -> Path:
    """The hand-made file with one byte string replaced (exactly once)."""
    data = small_file.read_bytes()
    assert data.count(old) == 1, old
    small_file.write_bytes(data.replace(old, new))
    return small_file


def test_non_utf8_bytes_name_the_file_entry_and_field(small_file):
    _small_with(small_file, b'"What does the label say?"', b'"What does the l\xe4bel say?"')  # Latin-1 a-umlaut
    with pytest.raises(DataFormatError) as err:
        loading.load_vizwiz_lf(paths={"small": small_file})
    message = str(err.value)
    assert message.startswith(f"{small_file}: entry '2' field 'question': not UTF-8 text: byte 0xe4 at line ")
    assert "save the file as UTF-8" in message


@pytest.mark.parametrize("content, words", [
    (b"", "top level: the file is empty (0 bytes)"),
    (b"  \n", "top level: the file is empty (3 bytes)"),
    (b"{}", "top level: the object has no entries; expected one entry per question id"),
    (b"[]", "top level: the file holds an array, expected an object keyed by question id"),
    (b'[{"model": "Expert"}]', "top level: the file holds an array, expected an object keyed by question id"),
    (b'"expert answers"', "top level: the file holds a string, expected an object"),
    (b"600", "top level: the file holds a number, expected an object"),
    (b"null", "top level: the file holds null, expected an object"),
])
def test_empty_and_wrong_top_level_files_are_named(tmp_path, content, words):
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    with pytest.raises(DataFormatError) as err:
        loading.load_vizwiz_lf(paths={"bad": bad})
    assert "bad.json: " in str(err.value) and words in str(err.value)


def test_a_repeated_question_id_is_refused_not_overwritten(small_file):
    raw = json.loads(small_file.read_text())
    entry = json.dumps(raw["3"])
    small_file.write_text("{" + ", ".join(f'"{k}": {json.dumps(v)}' for k, v in raw.items())
                          + f', "3": {entry}' + "}")
    with pytest.raises(DataFormatError) as err:
        loading.load_vizwiz_lf(paths={"small": small_file})
    assert str(err.value).startswith(f"{small_file}: top level: entry '3' appears 2 times. A key must not repeat")


def test_a_repeated_field_names_the_file_entry_and_field(small_file):
    _small_with(small_file, b'"question": "What does the label say?",',
                b'"question": "What does the label say?", "question": "Is it red?",')
    with pytest.raises(DataFormatError, match=rf"^{small_file}: entry '2': field 'question' appears 2 times\."):
        loading.load_vizwiz_lf(paths={"small": small_file})


def test_repeated_keys_deeper_down_are_all_listed(tmp_path):
    path = tmp_path / "nested.json"
    path.write_text('[{"a": 1, "b": {"c": 1, "c": 2}}, {"a": 1, "a": 2, "a": 3}]')
    with pytest.raises(DataFormatError) as err:
        io.read_json(path)
    assert str(err.value).startswith(f"{path}: row 0 field 'b': key 'c' appears 2 times; "
                                     f"{path}: row 1: field 'a' appears 3 times.")


def test_read_json_is_unchanged_on_good_input(data_dir):
    path = data_dir / "vizwiz-lf/qwen.json"
    assert io.read_json(path) == json.loads(path.read_text(encoding="utf-8"))


# --- validation rules on the hand-made file ------------------------------------------

def test_small_file_loads_with_every_quirk_counted(small_file):
    data = loading.load_vizwiz_lf(paths={"small": small_file})
    report = data.validation.to_frame().set_index(["check", "detail", "action"])["count"]
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
    data = loading.load_vizwiz_lf(paths={"small": small_file})
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
    assert loading.merge_fragments(frags, n_units=3) == [[0, 1], [2, 3], [4]]
    assert loading.merge_fragments(["x", "a much longer one"], n_units=1) == [[0, 1]]
    assert loading.merge_fragments(["tiny", "a much longer one", "and another"], n_units=2) == [[0, 1], [2]]


@pytest.mark.parametrize("roles, infos, sentences, expected_alignment, check_detail", [
    ([], [], ["one", "two"], ["no_labels", "no_labels"], "answer has sentences but no label lists"),
    ([["Answer"], ["Misc"], ["Misc"]], [[], [], []], ["one", "two"],
     ["aligned", "aligned", "extra_label_list"], "more label lists than sentences"),
])
def test_other_mismatch_rules_keep_every_unit(small_file, roles, infos, sentences, expected_alignment, check_detail):
    raw = json.loads(small_file.read_text())
    raw["3"].update(functional_roles=roles, information_types=infos, answer_sentences=sentences)
    small_file.write_text(json.dumps(raw))
    data = loading.load_vizwiz_lf(paths={"small": small_file})
    assert data.sentences.query("question_id == 3")["alignment"].tolist() == expected_alignment
    assert data.validation.to_frame().query("check == 'sentence_label_mismatch'")["detail"].str.contains(check_detail).any()


def test_role_and_info_list_counts_differing_is_reported(small_file):
    raw = json.loads(small_file.read_text())
    raw["1"]["information_types"] = [["image_content"]]
    small_file.write_text(json.dumps(raw))
    data = loading.load_vizwiz_lf(paths={"small": small_file})
    assert data.validation.total(check="role_info_count_differs") == 1
    assert data.sentences.query("question_id == 1")["info_sources"].tolist() == [("Image Content",), ()]


def test_duplicate_label_in_a_sentence_is_counted(small_file):
    raw = json.loads(small_file.read_text())
    raw["3"]["functional_roles"][0] = ["Answer", "Answer"]
    small_file.write_text(json.dumps(raw))
    data = loading.load_vizwiz_lf(paths={"small": small_file})
    assert data.validation.total(check="duplicate_label") == 1
    assert data.sentences.query("question_id == 3")["roles"].iloc[0] == ("Answer",)


def test_missing_ids_and_cross_source_mismatches(small_file, tmp_path):
    raw = json.loads(small_file.read_text())
    other = {k: dict(v, model="Other") for k, v in raw.items() if k != "2"}
    other["3"]["answerability"] = "unanswerable"
    (tmp_path / "other.json").write_text(json.dumps(other))
    data = loading.load_vizwiz_lf(paths={"small": small_file, "other": tmp_path / "other.json"})
    report = data.validation.to_frame()
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
    report = vizwiz.validation.to_frame()
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
    target = io.write_atomic(tmp_path / "sub" / "a.bin", b"xyz")
    assert target.read_bytes() == b"xyz" and [p.name for p in target.parent.iterdir()] == ["a.bin"]
    io.write_atomic(target, b"new")  # replaces in one step
    assert target.read_bytes() == b"new" and len(list(target.parent.iterdir())) == 1


def test_download_stops_at_its_size_cap_and_deadline():
    """core.fetch.download is the one download loop (upstream files, GQA's questions): a body past the cap, or a
    download past the deadline, is stopped with an OSError saying which."""
    import http.server
    import io as stdio
    import threading

    body = b"x" * 300_000

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the http.server API
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/x"
    try:
        out = stdio.BytesIO()
        assert fetch.download(url, out, max_bytes=len(body), deadline=60, progress=False) == len(body)
        assert out.getvalue() == body
        with pytest.raises(OSError, match="over the cap of 100,000 bytes"):
            fetch.download(url, stdio.BytesIO(), max_bytes=100_000, deadline=60, progress=False)
        with pytest.raises(OSError, match="stopped after"):
            fetch.download(url, stdio.BytesIO(), max_bytes=len(body), deadline=-1, progress=False)
    finally:
        server.shutdown()
