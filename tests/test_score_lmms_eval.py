"""The exported tasks run by lmms-eval's own code, then `vqalib score` on the samples file it writes: lmms-eval's task
manager loads the task `vqalib export lmms-eval` wrote (--include_path), its evaluator runs a stand-in model that
answers with a released model's answers (placeholder images from a folder), its tracker logs the samples; the
scorecard gives that model's numbers of figures/ (VizWiz-LF LLaVA; CommVQA IDEFICS baseline, authors' protocol). Needs build/lmms-venv (`make lmms-env`, which
`make test-full` and CI build from tests/lmms_eval/requirements.txt)."""

import json
import os
import shlex
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from vqalib.compendium import score as scoring
from vqalib.core.io import project_root
from vqalib.papers.vizwiz_lf.loading import load_vizwiz_lf
from vqalib.runner.toolkit_export import export_lmms_eval

ROOT = project_root()
PYTHON = ROOT / "build" / "lmms-venv" / "bin" / "python"
FIGURES = ROOT / "figures"

def _lmms_available() -> str | None:
    if not PYTHON.exists():
        return f"{PYTHON} is missing: `make lmms-env` installs lmms-eval there (make test-full and CI do)"
    probe = subprocess.run([str(PYTHON), "-c", "import lmms_eval.evaluator"], capture_output=True, text=True)
    return None if probe.returncode == 0 else f"lmms-eval does not import in {PYTHON}: {probe.stderr[-300:]}"


def _run(tmp_path, *, include: Path, task: str, answers: dict) -> Path:
    """lmms-eval's task manager, evaluator and sample logger on an exported task; the samples file it writes."""
    given = tmp_path / f"{task}_answers.json"
    given.write_text(json.dumps(answers), encoding="utf-8")
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "PYTHONPATH": str(ROOT / "tests" / "lmms_eval")}
    run = subprocess.run([str(PYTHON), str(ROOT / "tests" / "lmms_eval" / "run_task.py"), "--include-path",
                          str(include), "--task", task, "--answers", str(given), "--out", str(tmp_path / "out")],
                         capture_output=True, text=True, env=env, timeout=1200)
    assert run.returncode == 0, run.stderr[-3000:]
    samples = sorted((tmp_path / "out").glob(f"**/*_samples_{task}.jsonl"))
    assert len(samples) == 1, run.stderr[-3000:]
    return samples[0]


def _readme_lmms_commands() -> list[str]:
    """The README's lmms-eval block ("Run it in your toolkit"): export, lmms-eval and score, one line each."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("**lmms-eval**", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    lines = [line.split("  #", 1)[0].strip() for line in block.replace("\\\n", " ").splitlines()]
    return [" ".join(line.split()) for line in lines if line]


def _run_shell(command: str, *, cwd: Path, env: dict, timeout: int = 1200) -> None:
    """Run one README command line as written (bash), asserting exit 0 with its error tail."""
    done = subprocess.run(command, shell=True, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                          executable="/bin/bash")
    assert done.returncode == 0, done.stderr[-3000:]


def _llava_answers_file(folder: Path) -> Path:
    """LLaVA's released VizWiz-LF answers as {question_id: answer}, for the toolkits' stand-in models."""
    answers = load_vizwiz_lf().answers
    llava = answers[answers["source"] == "LLaVA"]
    path = folder / "answers.json"
    path.write_text(json.dumps(dict(zip(llava["question_id"].astype(str), llava["answer"]))))
    return path


def _scored(score: str, *, cwd: Path, env: dict) -> tuple[Path, dict]:
    """Run the README's `vqalib score` line; its scorecard folder and scorecard.json."""
    _run_shell(score, cwd=cwd, env=env)
    folder = cwd / shlex.split(score)[-1]
    return folder, json.loads((folder / "scorecard.json").read_text(encoding="utf-8"))


def _llava_cells(folder: Path) -> tuple[pd.Series, pd.Series, pd.Series, pd.Series]:
    """A scorecard's Table 1 and Table 4 (l_c) values beside LLaVA's in figures/."""
    words = pd.read_csv(folder / "vizwiz-lf_table01_word_counts.csv").set_index(["category", "statistic"])["value"]
    table1 = pd.read_csv(FIGURES / "vizwiz-lf_table01_word_counts.csv")
    table1 = table1[table1["column"] == "LLaVA"].set_index(["category", "statistic"])["reproduced"]
    keys = ["metric", "reference", "candidate"]
    full = pd.read_csv(folder / "vizwiz-lf_table04_full_set_bootstrap.csv", keep_default_na=False, na_values=[""])
    full = full[full["candidate"] == "l_c"].set_index(keys)["value"].dropna()  # LAVE: not run without a judge
    released = pd.read_csv(FIGURES / "vizwiz-lf_table04_full_set_bootstrap.csv", keep_default_na=False, na_values=[""])
    released = released[(released["source"] == "LLaVA") & (released["candidate"] == "l_c")]
    released = released.set_index(keys)["reproduced"]
    return words.round(4), table1.reindex(words.index), full.round(4), released.reindex(full.index)


@pytest.mark.full
def test_readme_lmms_eval_commands_run_as_written_and_score_like_figures(tmp_path):
    """The README's three commands, run as written: the export (with --images: offline), lmms-eval's own command
    (only --model swapped for the stand-in, registered through lmms-eval's entry point) and vqalib score on its glob."""
    reason = _lmms_available()
    if reason:
        pytest.skip(reason)
    from test_toolkit_export import placeholder_images, vizwiz_image_names

    export, lmms, score = _readme_lmms_commands()
    images = placeholder_images(tmp_path / "images", vizwiz_image_names())
    venv = str(ROOT / ".venv" / "bin")
    env = {**os.environ, "PATH": f"{venv}:{os.environ['PATH']}", "HF_HOME": str(tmp_path / "hf"),
           "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT / "tests" / "lmms_eval")}
    _run_shell(f"{export} --images {images}", cwd=tmp_path, env=env, timeout=600)
    answers_file = _llava_answers_file(tmp_path)
    argv = shlex.split(lmms)
    assert argv[0] == "lmms-eval" and argv[argv.index("--model") + 1] == "llava"
    argv[argv.index("--model") + 1] = "released_answers"
    argv[argv.index("--model_args") + 1] += f",answers_file={answers_file}"
    run = subprocess.run([str(PYTHON.parent / "lmms-eval"), *argv[1:]], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=1200)
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    folder, card = _scored(score, cwd=tmp_path, env=env)
    probe = subprocess.run([str(PYTHON), "-c", "from importlib.metadata import version; print(version('lmms-eval'))"],
                           capture_output=True, text=True, check=True)
    assert card["source"]["format"] == "lmms-eval" and card["coverage"]["matched"] == 600
    assert card["source"]["version"] == probe.stdout.strip()  # lmms-eval's package, not a commit of ours
    assert card["vqalib_commit"] and card["vqalib_commit"] != card["source"]["version"]
    words, table1, full, released = _llava_cells(folder)
    assert len(words) == 10 and (words == table1).all()
    assert len(full) == 6 and (full == released).all()


@pytest.mark.full
def test_exported_commvqa_baseline_task_run_by_lmms_eval_gives_the_authors_row(tmp_path):
    reason = _lmms_available()
    if reason:
        pytest.skip(reason)
    from test_toolkit_export import placeholder_images

    from vqalib.papers.commvqa.loading import load_commvqa

    data = load_commvqa()
    images = placeholder_images(tmp_path / "images", sorted(set(data.annotations["image"])))
    export_lmms_eval("commvqa", out=tmp_path / "tasks", images=images)
    idefics = data.results[(data.results["model"] == "IDEFICS") & (data.results["condition"] == "baseline")]
    given = {str(i): "" for i in data.annotations["question_id"]}  # questions outside Table 1: counted, not scored
    given.update(zip(idefics["question_id"].astype(int).astype(str), idefics["generated_answer"].fillna("")))
    samples = _run(tmp_path, include=tmp_path / "tasks", task="commvqa_baseline", answers=given)
    card = scoring.score([samples], dataset="commvqa", model="IDEFICS (lmms-eval)", conditions=["baseline"],
                         n_resamples=50)
    table = card.tables["commvqa_table01_benchmark"]
    authors = table[table["protocol"] == "authors"].set_index("metric")["value"]
    released = pd.read_csv(FIGURES / "commvqa_table01_benchmark.csv")
    released = released[(released["model"] == "IDEFICS") & (released["condition"] == "baseline")]
    for metric, value in authors.items():
        assert round(value, 4) == float(released.loc[released["metric"] == metric, "reproduced"].iloc[0])
