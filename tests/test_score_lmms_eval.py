"""`vqalib score` on a samples file written by lmms-eval's own code: its task manager loads a VizWiz-LF task from
--include_path, its evaluator runs a stand-in model that answers with LLaVA's released answers, its tracker logs the
samples; the scorecard gives LLaVA's numbers of figures/. Needs build/lmms-venv (`make lmms-env`, which
`make test-full` and CI build from tests/lmms_eval/requirements.txt)."""

import json
import os
import subprocess

import pandas as pd
import pytest
from PIL import Image

from vqalib.compendium import score as scoring
from vqalib.core.io import project_root
from vqalib.papers.vizwiz_lf.loading import load_vizwiz_lf

ROOT = project_root()
PYTHON = ROOT / "build" / "lmms-venv" / "bin" / "python"
FIGURES = ROOT / "figures"

UTILS = '''from PIL import Image


def doc_to_visual(doc):
    return [Image.open(doc["image"]).convert("RGB")]


def doc_to_text(doc, lmms_eval_specific_kwargs=None):
    return doc["question"]


def doc_to_target(doc):
    return doc["reference"]


def process_results(doc, results):
    return {"item_id": doc["item_id"], "words": float(len(results[0].split()))}
'''


def _lmms_available() -> str | None:
    if not PYTHON.exists():
        return f"{PYTHON} is missing: `make lmms-env` installs lmms-eval there (make test-full and CI do)"
    probe = subprocess.run([str(PYTHON), "-c", "import lmms_eval.evaluator"], capture_output=True, text=True)
    return None if probe.returncode == 0 else f"lmms-eval does not import in {PYTHON}: {probe.stderr[-300:]}"


@pytest.mark.full
def test_samples_written_by_lmms_eval_score_like_figures(tmp_path):
    reason = _lmms_available()
    if reason:
        pytest.skip(reason)
    answers = load_vizwiz_lf().answers
    llava = answers[answers["source"] == "LLaVA"]
    image = tmp_path / "placeholder.png"
    Image.new("RGB", (8, 8), "white").save(image)
    task = tmp_path / "tasks" / "vizwiz_lf_vanilla"
    task.mkdir(parents=True)
    docs = [{"item_id": str(q), "question_id": str(q), "question": text, "image": str(image), "reference": ref}
            for q, text, ref in zip(llava["question_id"], llava["question"], llava["crowd_majority"])]
    (task / "vizwiz_lf_vanilla.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    (task / "utils.py").write_text(UTILS, encoding="utf-8")
    (task / "vizwiz_lf_vanilla.yaml").write_text(
        "task: vizwiz_lf_vanilla\ndataset_path: json\ndataset_kwargs:\n  data_files:\n"
        f"    test: {task / 'vizwiz_lf_vanilla.jsonl'}\ntest_split: test\noutput_type: generate_until\n"
        "doc_to_visual: !function utils.doc_to_visual\ndoc_to_text: !function utils.doc_to_text\n"
        "doc_to_target: !function utils.doc_to_target\nprocess_results: !function utils.process_results\n"
        "generation_kwargs: {max_new_tokens: 512, do_sample: false}\n"
        "metric_list:\n  - metric: words\n    aggregation: mean\n    higher_is_better: true\n"
        "metadata: {version: 0.1}\n", encoding="utf-8")
    given = tmp_path / "answers.json"
    given.write_text(json.dumps(dict(zip(llava["question_id"].astype(str), llava["answer"]))), encoding="utf-8")
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "PYTHONPATH": str(ROOT / "tests" / "lmms_eval")}
    run = subprocess.run([str(PYTHON), str(ROOT / "tests" / "lmms_eval" / "run_task.py"), "--include-path",
                          str(tmp_path / "tasks"), "--task", "vizwiz_lf_vanilla", "--answers", str(given),
                          "--out", str(tmp_path / "out")], capture_output=True, text=True, env=env, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    samples = sorted((tmp_path / "out").glob("**/*_samples_vizwiz_lf_vanilla.jsonl"))
    assert len(samples) == 1, run.stderr[-3000:]
    card = scoring.score(samples, dataset="vizwiz-lf", model="LLaVA (lmms-eval)", compare=False)
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
