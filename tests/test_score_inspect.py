"""Inspect AI eval logs scored by `vqalib score`: the `inspect` format detected from a log's name or container and read
from the JSON lines inspect_ai's own reader gives (a converter run in build/inspect-venv); and, end to end, the README's
export, `inspect eval` (a stand-in model provider answering with LLaVA's released VizWiz-LF answers, registered through
Inspect's `inspect_ai` entry point: tests/inspect_eval/released_answers_inspect.py) and score commands, whose scorecard
gives LLaVA's label-free cells of figures/. The end-to-end test needs build/inspect-venv (`make inspect-env`, which
`make test-full` and CI build from tests/inspect_eval/requirements.txt)."""

import json
import os
import shlex
import subprocess
import zipfile

import pytest

from vqalib.core.answer_files import detect_format, read_answers
from vqalib.core.io import DataFormatError, project_root

ROOT = project_root()
PYTHON = ROOT / "build" / "inspect-venv" / "bin" / "python"


def _converted(tmp_path, records):
    path = tmp_path / "converted.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_converted_inspect_lines_are_detected_and_joined_on_the_metadata_ids(tmp_path):
    path = _converted(tmp_path, [
        {"inspect_sample_id": "s1", "epoch": 1, "metadata": {"item_id": "7", "question_id": "70"},
         "completion": "A red car.", "error": None, "inspect_ai_version": "0.3.285"},
        {"inspect_sample_id": "s2", "epoch": 1, "metadata": {"question_id": "80", "tier": "complex"},
         "completion": "ignored", "error": "model timed out", "inspect_ai_version": "0.3.285"}])
    assert detect_format(path) == "inspect"
    frame, source = read_answers(path)
    assert source.toolkit == "Inspect AI" and source.version == "0.3.285" and source.records == 2
    cells = frame.astype(object).where(frame.notna(), None)
    assert cells["item_id"].tolist() == ["7", None] and cells["question_id"].tolist() == ["70", "80"]
    assert cells["answer"].tolist() == ["A red car.", None]  # an errored sample gave no answer
    assert cells["tier"].tolist() == [None, "complex"] and cells["sample_error"].tolist()[1] == "model timed out"


def test_an_inspect_sample_without_our_ids_is_named(tmp_path):
    path = _converted(tmp_path, [{"inspect_sample_id": 3, "metadata": {"other": 1}, "completion": "x"}])
    with pytest.raises(DataFormatError, match=r"sample 1 \(id 3\): metadata carries no item_id or question_id.*"
                                              r"\['other'\]"):
        read_answers(path)


def test_an_eval_log_is_detected_by_name_or_zip_and_needs_the_inspect_venv(tmp_path, monkeypatch):
    log = tmp_path / "run.zip"
    with zipfile.ZipFile(log, "w") as archive:
        archive.writestr("_journal/start.json", "{}")
    assert detect_format(log) == "inspect"
    named = tmp_path / "run.eval"
    named.write_bytes(b"not read: the name says it")
    assert detect_format(named) == "inspect"
    other = tmp_path / "other.zip"
    with zipfile.ZipFile(other, "w") as archive:
        archive.writestr("a.txt", "x")
    with pytest.raises(DataFormatError, match="not an answers file"):
        detect_format(other)
    monkeypatch.setenv("VQALIB_INSPECT_PYTHON", str(tmp_path / "no-venv" / "python"))
    with pytest.raises(FileNotFoundError, match=r"run.eval: .*no-venv/python is missing: `make inspect-env`"):
        read_answers(named)


def test_inspect_export_writes_a_task_file_and_samples_carrying_our_ids(tmp_path):
    from test_toolkit_export import placeholder_images, vizwiz_image_names

    from vqalib.runner.toolkit_export import export_inspect

    images = placeholder_images(tmp_path / "images", vizwiz_image_names())
    written = export_inspect("vizwiz-lf", out=tmp_path / "tasks", images=images)
    assert [p.name for p in written] == ["vizwiz_lf_vanilla.py", "vizwiz_lf_abstention.py"]
    code = written[0].read_text(encoding="utf-8")
    compile(code, str(written[0]), "exec")  # valid Python (inspect_ai is not importable here)
    assert "def vizwiz_lf_vanilla():" in code and "max_tokens=512" in code
    lines = (tmp_path / "tasks" / "vizwiz_lf_vanilla.jsonl").read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    assert len(lines) == 600 and first["id"] == first["metadata"]["item_id"] and first["metadata"]["question_id"]
    image, text = first["input"][0]["content"]
    assert image["type"] == "image" and image["image"].startswith(str(images)) and text["text"].endswith("Answer:")


def _readme_inspect_commands() -> list[str]:
    """The README's Inspect AI block ("Run it in your toolkit"): export, inspect eval and score, one line each."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("**Inspect AI**", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    lines = [line.split("  #", 1)[0].strip() for line in block.replace("\\\n", " ").splitlines()]
    return [" ".join(line.split()) for line in lines if line]


@pytest.mark.full
def test_readme_inspect_commands_run_as_written_and_score_like_figures(tmp_path):
    """The README's three commands, run as written: the export (with --images: offline), Inspect's own `inspect eval`
    (only --model swapped for the stand-in provider and its answers file) and vqalib score on the log's glob."""
    if not PYTHON.exists():
        pytest.skip(f"{PYTHON} is missing: `make inspect-env` installs inspect_ai there (make test-full and CI do)")
    from test_score_lmms_eval import _llava_answers_file, _llava_cells, _run_shell, _scored
    from test_toolkit_export import placeholder_images, vizwiz_image_names

    export, inspect, score = _readme_inspect_commands()
    images = placeholder_images(tmp_path / "images", vizwiz_image_names())
    env = {**os.environ, "PATH": f"{ROOT / '.venv' / 'bin'}:{os.environ['PATH']}", "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": str(ROOT / "tests" / "inspect_eval"), "XDG_DATA_HOME": str(tmp_path / "data-home")}
    _run_shell(f"{export} --images {images}", cwd=tmp_path, env=env, timeout=600)
    answers_file = _llava_answers_file(tmp_path)
    argv = shlex.split(inspect)
    assert argv[:2] == ["inspect", "eval"] and argv[argv.index("--model") + 1].startswith("vllm/llava-hf/")
    argv[argv.index("--model") + 1] = "released_answers/llava"
    argv += ["-M", f"answers_file={answers_file}", "--display", "plain"]
    run = subprocess.run([str(PYTHON.parent / "inspect"), *argv[1:]], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=1200)
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    folder, card = _scored(score, cwd=tmp_path, env=env)
    probe = subprocess.run([str(PYTHON), "-c", "from importlib.metadata import version; print(version('inspect_ai'))"],
                           capture_output=True, text=True, check=True)
    assert card["source"]["format"] == "inspect" and card["coverage"]["matched"] == 600
    assert card["source"]["version"] == probe.stdout.strip()  # inspect_ai's package, as the log records it
    words, table1, full, released = _llava_cells(folder)
    assert len(words) == 10 and (words == table1).all()
    assert len(full) == 6 and (full == released).all()
