"""The exported tasks run by lmms-eval's own code, then `vqalib score` on the samples file it writes: lmms-eval's task
manager loads the task `vqalib export lmms-eval` wrote (--include_path), its evaluator runs a stand-in model that
answers with a released model's answers (placeholder images from a folder), its tracker logs the samples; the
scorecard gives that model's numbers of figures/ (VizWiz-LF LLaVA; CommVQA IDEFICS baseline, authors' protocol). Needs build/lmms-venv (`make lmms-env`, which
`make test-full` and CI build from tests/lmms_eval/requirements.txt)."""

import json
import os
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


@pytest.mark.full
def test_exported_vizwiz_lf_task_run_by_lmms_eval_scores_like_figures(tmp_path):
    reason = _lmms_available()
    if reason:
        pytest.skip(reason)
    from test_toolkit_export import placeholder_images, vizwiz_image_names

    images = placeholder_images(tmp_path / "images", vizwiz_image_names())
    export_lmms_eval("vizwiz-lf", out=tmp_path / "tasks", images=images)
    answers = load_vizwiz_lf().answers
    llava = answers[answers["source"] == "LLaVA"]
    samples = _run(tmp_path, include=tmp_path / "tasks", task="vizwiz_lf_vanilla",
                   answers=dict(zip(llava["question_id"].astype(str), llava["answer"])))
    card = scoring.score([samples], dataset="vizwiz-lf", model="LLaVA (lmms-eval)", compare=False)
    assert card.sources[0]["format"] == "lmms-eval" and card.coverage["matched"] == 600
    words = card.tables["vizwiz-lf_table01_word_counts"].set_index(["category", "statistic"])["value"]
    table1 = pd.read_csv(FIGURES / "vizwiz-lf_table01_word_counts.csv")
    table1 = table1[table1["column"] == "LLaVA"].set_index(["category", "statistic"])["reproduced"]
    assert (words.round(4) == table1.reindex(words.index)).all()
    full = card.tables["vizwiz-lf_table04_full_set_bootstrap"]
    released = pd.read_csv(FIGURES / "vizwiz-lf_table04_full_set_bootstrap.csv", keep_default_na=False, na_values=[""])
    for metric in ("ROUGE", "METEOR"):
        for ref in ("s_r", "l_r"):
            mine = full[(full["metric"] == metric) & (full["reference"] == ref) & (full["candidate"] == "l_c")]
            theirs = released[(released["source"] == "LLaVA") & (released["metric"] == metric)
                              & (released["reference"] == ref) & (released["candidate"] == "l_c")]
            assert round(float(mine["value"].iloc[0]), 4) == float(theirs["reproduced"].iloc[0])


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
