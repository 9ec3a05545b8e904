"""What `vqalib run` and the notebooks take from outside, checked: the question table (vqalib.runner.question_tables),
image names inside --images (vqalib.runner.image_sources), --out by inode and kind (vqalib.runner.locks,
vqalib.runner.runfiles), one (model, strategy) per run file, and the run files the notebooks read
(vqalib.runner.handoff). Small hand-made files; tiny random models built from configs (no download)."""

from __future__ import annotations

import functools
import json
import os
import threading
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach the hub: test models are built from configs
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import pandas as pd
import pytest

import tiny_models  # noqa: F401  (importing it registers the tiny test models)
from vqalib.compendium import cli
from vqalib.core.io import DataFormatError, NotRegularFile
from vqalib.runner import engines, handoff, locks, models, questions as runner_questions, runfiles
from vqalib.runner.image_sources import commvqa_source, gqa_source
from vqalib.runner.images import ImageError

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs POSIX named pipes")
pytestmark = pytest.mark.usefixtures("one_thread")


@functools.lru_cache(maxsize=None)
def tiny(key: str) -> models.VLM:
    return models.build_model(key, device="cpu")


@pytest.fixture(scope="module")
def image(tmp_path_factory) -> Path:
    from PIL import Image

    path = tmp_path_factory.mktemp("images") / "good.png"
    Image.new("RGB", (40, 30), (200, 10, 10)).save(path)
    return path


def items_of(n: int, image: Path) -> pd.DataFrame:
    return runner_questions.table_items(pd.DataFrame({
        "question_id": [str(i) for i in range(n)], "question": [f"what is object {i}?" for i in range(n)],
        "image": [str(image)] * n}))


def raw_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def in_thread(call, *, timeout: float = 60):
    """``call()`` in a daemon thread: a regression that blocks on a pipe fails the test instead of hanging the run."""
    outcome: dict = {}

    def target() -> None:
        try:
            outcome["value"] = call()
        except BaseException as error:  # noqa: BLE001 - handed back to the test
            outcome["error"] = error
    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(timeout)
    assert not worker.is_alive(), f"{call} blocked for {timeout} s"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def run_argv(questions: Path, out: Path, *extra: str, strategy: str = "vanilla") -> list[str]:
    return ["run", "--model", "tiny-blip", "--strategy", strategy, "--dataset", "table", "--questions",
            str(questions), "--out", str(out), "--device", "cpu", "--no-progress", "--threads", "1", *extra]


# --- the question table ---------------------------------------------------------------------------

IMG = "{img}"
BAD_TABLES = [  # file name, content, dataset, what the error must say after the file's name
    ("no-question.csv", f"question_id,image\n1,{IMG}\n", "table",
     "lacks required column(s) 'question' (a 'table' question table); the table has ['question_id', 'image']"),
    ("no-image.csv", "question_id,question\n1,what?\n", "table", "lacks required column(s) 'image'"),
    ("no-id.csv", f"question,image\nwhat?,{IMG}\n", "table", "lacks required column(s) 'item_id' or 'question_id'"),
    ("empty-cell.csv", f"question_id,question,image\n1,what?,{IMG}\n2,,{IMG}\n", "table",
     "row 1 (line 3), field 'question': empty"),
    ("multiline.csv", f'question_id,question,image\n1,"two\nlines",{IMG}\n2,what?,\n', "table",
     "row 1 (line 4), field 'image': empty"),
    ("latin1.csv", "question_id,question,image\n1,caf\xe9?,x.png\n", "table",
     "row 0 (line 2), column 'question': not UTF-8 text: byte 0xe9"),
    ("typed.jsonl", f'{{"question_id": 1, "question": "what?", "image": "{IMG}"}}\n'
                    f'{{"question_id": 2, "question": ["what?"], "image": "{IMG}"}}\n', "table",
     "row 1 (line 2), field 'question': an array, expected text"),
    ("gap.jsonl", f'{{"question_id": 1, "question": "what?", "image": "{IMG}"}}\n\n'
                  '{"question_id": 2, "question": "why?"}\n', "table", "row 1 (line 3), field 'image': missing"),
    ("broken.jsonl", '{"question_id": 1, "question": "wh\n', "table", "line 1: not JSON"),
    ("list.jsonl", '["what?"]\n', "table", "line 1: an array, expected one question as a JSON object"),
    ("latin1.jsonl", '{"question": "caf\xe9"}\n', "table", "line 1: not UTF-8 text (byte 0xe9"),
    ("object.json", '{"question": "what?"}', "table", "top level: expected an array of question objects, got an object"),
    ("bool-id.json", '[{"question_id": true, "question": "what?", "image": "x.png"}]', "table",
     "row 0, field 'question_id': a boolean, expected text or a whole number"),
    ("twice.csv", f"question_id,question,image\n1,a?,{IMG}\n2,b?,{IMG}\n1,c?,{IMG}\n", "table",
     "duplicate item ids: '1' (row 0 (line 2), row 2 (line 4))"),
    ("header-only.csv", "question_id,question,image\n", "table", "no data rows"),
    ("afgv-no-tier.csv", "question_id,question,image_id\n1,what?,1\n", "afgv", "lacks required column(s) 'tier'"),
    ("afgv-no-image.csv", "question_id,tier,question\n1,baseline,what?\n", "afgv",
     "lacks required column(s) 'image' or 'image_id'"),
    ("afgv-tier.csv", "question_id,tier,question,image_id\n1,baseline,what?,1\n1,complx,what?,1\n", "afgv",
     "row 1 (line 3), field 'tier': 'complx' is not an AFGV tier (simplified, baseline, complex)"),
]


@pytest.mark.parametrize("name, content, dataset, message", BAD_TABLES, ids=[t[0] for t in BAD_TABLES])
def test_a_bad_question_table_is_refused_naming_file_row_and_field(name, content, dataset, message, image, tmp_path):
    path = tmp_path / name
    path.write_bytes(content.replace(IMG, str(image)).encode("latin-1" if "latin1" in name else "utf-8"))
    with pytest.raises(DataFormatError) as refused:
        runner_questions.load_items(dataset, questions=path, images=tmp_path)
    assert str(refused.value).startswith(f"{path}: ") and message in str(refused.value)


def test_good_question_tables_of_every_format_give_the_same_items(image, tmp_path):
    rows = [{"question_id": 1, "question": "what?", "image": str(image)},
            {"question_id": 2, "question": "why?", "image": str(image), "tier": ""}]
    pd.DataFrame(rows).to_csv(tmp_path / "q.csv", index=False)
    (tmp_path / "q.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "q.json").write_text(json.dumps(rows))
    pd.DataFrame(rows).to_parquet(tmp_path / "q.parquet")
    loaded = {suffix: runner_questions.load_items("table", questions=tmp_path / f"q.{suffix}")
              for suffix in ("csv", "jsonl", "json", "parquet")}
    for suffix, items in loaded.items():
        assert items["item_id"].tolist() == items["question_id"].tolist() == ["1", "2"], suffix  # ids as text
        assert items["question"].tolist() == ["what?", "why?"] and items["tier"].isna().all(), suffix


def test_the_cli_stops_on_a_bad_question_table_before_loading_a_model(image, tmp_path, capsys):
    """A table without `question` used to send "Question: None" to the model: now the run stops, naming it."""
    questions = tmp_path / "no-question.csv"
    questions.write_text(f"question_id,image\n1,{image}\n")
    out = tmp_path / "runs" / "out.jsonl"
    assert cli.main(run_argv(questions, out)) == 1
    err = capsys.readouterr().err
    assert f"error: {questions}: lacks required column(s) 'question'" in err and "Traceback" not in err
    assert not out.exists()


@needs_fifo
def test_a_pipe_given_as_question_table_is_refused_without_waiting(tmp_path, capsys):
    fifo = tmp_path / "questions.csv"
    os.mkfifo(fifo)
    with pytest.raises(NotRegularFile, match=rf"{fifo}: cannot read this .*: it is a named pipe \(FIFO\), not a regular"):
        in_thread(lambda: runner_questions.load_items("table", questions=fifo))
    with pytest.raises(SystemExit) as exited:
        in_thread(lambda: cli.main(run_argv(fifo, tmp_path / "out.jsonl")))
    assert exited.value.code == 2
    assert f"argument --questions: '{fifo}' is a named pipe (FIFO), not a regular file" in capsys.readouterr().err


# --- image names stay inside --images -------------------------------------------------------------

def test_image_ids_never_leave_the_images_folder(tmp_path):
    """An id that climbs out, an absolute path, or a link in the folder pointing out is an error record naming the
    id; each target is a readable image, so following the name would have answered the question."""
    from PIL import Image

    folder = tmp_path / "gqa" / "images"
    folder.mkdir(parents=True)
    Image.new("RGB", (32, 32), (10, 10, 200)).save(folder / "1.jpg")
    Image.new("RGB", (32, 32), (200, 10, 10)).save(tmp_path / "secret.jpg")  # outside the folder
    (folder / "2.jpg").symlink_to(tmp_path / "secret.jpg")
    (folder / "3.jpg").symlink_to(folder / "1.jpg")  # a link that stays inside is fine
    ids = {"a": "1", "b": "../../secret", "c": str(tmp_path / "secret"), "d": "2", "e": "3"}
    rewrites = pd.DataFrame({"question_id": list(ids), "tier": ["baseline"] * 5, "question": ["what is it?"] * 5,
                             "image_id": list(ids.values())})
    items = runner_questions.afgv_items(rewrites, images=folder)
    summary = engines.run_generation(items, model=tiny("tiny-blip"), strategy="short-answer", dataset="afgv",
                                     out=tmp_path / "afgv.jsonl", progress=False)
    assert summary.written_items == 5 and summary.errors == {"image": 3}
    records = {r["question_id"]: r for r in raw_lines(tmp_path / "afgv.jsonl")}
    assert records["a"]["kind"] == records["e"]["kind"] == "answer"
    for key in ("b", "c", "d"):
        message = records[key]["error"]["message"]
        assert records[key]["error"]["stage"] == "image"
        assert message.startswith(f"GQA image id {ids[key]!r}: resolves to ") and "outside the images folder" in message
        assert records[key]["image_sha256"] is None
    with pytest.raises(ImageError, match=r"CommVQA image '../secret.jpg': resolves to .*outside the images folder"):
        commvqa_source("../secret.jpg", images=folder)
    assert gqa_source("3", images=folder) == str((folder / "1.jpg").resolve())


# --- --out: one writer per inode, regular files only ----------------------------------------------

def test_a_hard_link_to_a_run_file_meets_the_same_lock(image, tmp_path):
    """Two names of one file used to get two locks (and 40 duplicate records): the lock is the inode's."""
    items = items_of(4, image)
    out, link = tmp_path / "runs" / "a.jsonl", tmp_path / "runs" / "b.jsonl"
    engines.run_generation(items, model=tiny("tiny-blip"), strategy="vanilla", dataset="table", out=out, limit=2,
                           progress=False)
    os.link(out, link)
    before = out.read_bytes()
    with locks.RunLock(out) as held:
        with pytest.raises(locks.RunLockedError, match=rf"run file {link} is being written by another run: "
                                                        rf"pid {os.getpid()} on host"):
            engines.run_generation(items, model=tiny("tiny-blip"), strategy="vanilla", dataset="table", out=link,
                                   progress=False)  # the holder is found beside the other name
        with pytest.raises(locks.RunLockedError):
            runfiles.repair_run(link)
        assert runfiles.repair_run(link, lock=held).bad_lines == 0  # the held lock is this file's, by any name
    assert out.read_bytes() == before
    summary = engines.run_generation(items, model=tiny("tiny-blip"), strategy="vanilla", dataset="table", out=link,
                                     progress=False)
    assert summary.skipped_finished == 2 and summary.written_items == 2
    assert sorted(r["item_id"] for r in raw_lines(out)) == ["0", "1", "2", "3"]  # each question once


@needs_fifo
def test_an_out_that_is_not_a_regular_file_is_refused_by_name(image, tmp_path, capsys):
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    link = tmp_path / "link.jsonl"
    link.symlink_to(fifo)
    questions = tmp_path / "q.csv"
    questions.write_text(f"question_id,question,image\n1,what?,{image}\n")
    for target, kind in ((fifo, "a named pipe (FIFO)"), (link, "a named pipe (FIFO)"),
                         (Path(os.devnull), "a character device")):
        with pytest.raises(SystemExit) as exited:
            in_thread(lambda: cli.main(run_argv(questions, target)))
        assert exited.value.code == 2
        assert f"argument --out: '{target}' is {kind}, not a regular file" in capsys.readouterr().err
    items = items_of(1, image)
    for target in (fifo, link):  # the library refuses as well (the lock opens the file without waiting)
        with pytest.raises(NotRegularFile, match=rf"run file {target}: it is a named pipe \(FIFO\), not a regular file"):
            in_thread(lambda: engines.run_generation(items, model=tiny("tiny-blip"), strategy="vanilla",
                                                     dataset="table", out=target, progress=False))
    with pytest.raises(NotRegularFile, match="named pipe"):
        in_thread(lambda: runfiles.RunWriter(fifo))
    with pytest.raises(NotRegularFile, match="named pipe"):
        in_thread(lambda: runfiles.scan_run(fifo))


# --- one (model, strategy) per run file -----------------------------------------------------------

def test_a_run_file_holds_one_model_and_strategy_unless_asked(image, tmp_path, capsys):
    items = items_of(2, image)
    out = tmp_path / "runs" / "run.jsonl"
    engines.run_generation(items, model=tiny("tiny-blip"), strategy="vanilla", dataset="table", out=out,
                           progress=False)
    before = out.read_bytes()
    with pytest.raises(runfiles.MixedRunFileError) as refused:
        engines.run_generation(items, model=tiny("tiny-blip"), strategy="abstention", dataset="table", out=out,
                               progress=False)
    assert str(refused.value).startswith(f"run file {out} holds the answers of model 'tiny-blip' under strategy "
                                         f"'vanilla'; this run would add model 'tiny-blip' under strategy 'abstention'")
    assert "--mixed-run-file" in str(refused.value)
    with pytest.raises(runfiles.MixedRunFileError, match="would add model 'tiny-llava' under strategy 'vanilla'"):
        engines.run_generation(items, model="tiny-llava", strategy="vanilla", dataset="table", out=out,
                               progress=False)  # refused before the model is loaded
    assert out.read_bytes() == before

    questions = tmp_path / "q.csv"
    questions.write_text("".join(["question_id,question,image\n"] + [f"{i},what?,{image}\n" for i in range(2)]))
    assert cli.main(run_argv(questions, out, strategy="abstention")) == 1
    err = capsys.readouterr().err
    assert f"error: run file {out} holds the answers of model 'tiny-blip' under strategy 'vanilla'" in err
    assert "Traceback" not in err and out.read_bytes() == before
    assert cli.main(run_argv(questions, out, "--mixed-run-file", strategy="abstention")) == 0
    assert "2 questions written" in capsys.readouterr().out
    assert sorted({r["strategy"] for r in raw_lines(out)}) == ["abstention", "vanilla"]


# --- the run files the notebooks read -------------------------------------------------------------

def test_run_records_lacking_fields_are_reported_by_line_and_skipped(image, tmp_path):
    """A record without question_id crashed notebook 08 (KeyError); now it is skipped, counted and named."""
    runs = tmp_path / "runs"
    out = runs / "run.jsonl"
    engines.run_generation(items_of(4, image), model=tiny("tiny-blip"), strategy="vanilla", dataset="table", out=out,
                           progress=False)
    lines = raw_lines(out)
    del lines[1]["question_id"]
    lines[2]["final"] = "yes"
    out.write_text("".join(json.dumps(r) + "\n" for r in lines))
    expected = (rf"run file {out}: 2 record\(s\) skipped, not read: line 2: lacks required field 'question_id'; "
                rf"line 3: field 'final' is a string, expected a boolean")
    with pytest.warns(RuntimeWarning, match=expected):
        table = handoff.load_run(out, finals_only=True)
    assert table["item_id"].tolist() == ["0", "3"] and table["question_id"].notna().all()
    assert table.attrs["skipped_records"] == 2
    report = table.attrs["report"].to_frame()
    assert report[["file", "detail", "action", "count", "examples"]].values.tolist() == [
        [str(out), "field 'final' is a string, expected a boolean", "record skipped", 1, "line 3"],
        [str(out), "lacks required field 'question_id'", "record skipped", 1, "line 2"]]
    with pytest.warns(RuntimeWarning, match=expected):
        found = handoff.discover_runs(runs).set_index("name")
    assert found.loc["run", ["records", "questions", "answers", "errors", "skipped_records"]].tolist() == [4, 2, 2, 0, 2]


@needs_fifo
def test_a_pipe_among_the_run_files_is_skipped_with_a_warning_naming_it(image, tmp_path):
    runs = tmp_path / "runs"
    engines.run_generation(items_of(2, image), model=tiny("tiny-blip"), strategy="vanilla", dataset="table",
                           out=runs / "run.jsonl", progress=False)
    os.mkfifo(runs / "pipe.jsonl")
    (runs / "folder.jsonl").mkdir()
    with pytest.warns(RuntimeWarning) as seen:
        found = in_thread(lambda: handoff.discover_runs(runs))
    assert found["name"].tolist() == ["run"] and found["answers"].tolist() == [2]
    messages = [str(w.message) for w in seen]
    assert any(f"{runs / 'pipe.jsonl'}: cannot read this run file: it is a named pipe (FIFO)" in m and "skipped" in m
               for m in messages)
    assert any(f"{runs / 'folder.jsonl'}: cannot read this run file: it is a directory" in m for m in messages)
    with pytest.raises(NotRegularFile, match="named pipe"):
        in_thread(lambda: handoff.load_run(runs / "pipe.jsonl"))
