"""Run an lmms-eval task with lmms-eval's own task manager, evaluator and sample logger, and a stand-in model that
answers each document with a given text (``released_answers.py``; the toolkit tests of `vqalib score`). Run with
build/lmms-venv/bin/python, this folder on PYTHONPATH (where the stand-in's entry point is found):

    python tests/lmms_eval/run_task.py --include-path TASKS --task NAME --answers ANSWERS.json --out OUT

ANSWERS.json maps each document's ``item_id`` to the answer the stand-in model gives.
"""

import argparse
import json
import os
import sys

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")  # no hub: the task's data is a local JSONL
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from lmms_eval import evaluator, utils  # noqa: E402
from lmms_eval.loggers import EvaluationTracker  # noqa: E402
from lmms_eval.tasks import TaskManager  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--include-path", required=True)
    parser.add_argument("--task", required=True)
    parser.add_argument("--answers", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    manager = TaskManager("WARNING", include_path=args.include_path, model_name="released_answers")
    tracker = EvaluationTracker(output_path=args.out)
    stamp = utils.get_datetime_str()
    results = evaluator.simple_evaluate(model="released_answers", model_args=f"answers_file={args.answers}",
                                        tasks=[args.task], task_manager=manager, log_samples=True,
                                        evaluation_tracker=tracker, datetime_str=stamp, bootstrap_iters=0,
                                        process_docs_parallel=1)
    samples = results.pop("samples")
    tracker.save_results_aggregated(results=results, samples=samples, datetime_str=stamp)  # sets the file names
    for task in results["configs"]:
        tracker.save_results_samples(task_name=task, samples=samples[task])
    print(json.dumps(results["results"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
