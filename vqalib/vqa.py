"""Answer generation with vision-language models: prompting strategies, resumable and distributed runs.

Produces the model outputs that the analyses read:

- VizWiz-LF §3 and Appendix A.1.3 (long-form answers of the open VLMs) and §7 / Appendix
  A.4.2 (abstention): ``vanilla``, ``abstention`` (Table 22), ``self-correction`` (Table 23,
  three stages), ``self-consistency`` (5 draws aggregated by an LLM judge with the Table 24
  prompt) and ``abstention-consistency`` (instruction + consistency, Table 26), with the
  generation settings of Table 25;
- CommVQA §5 and A.1: ``commvqa-baseline`` (image + question) and ``commvqa-contextual``
  (scenario and description prompt), greedy decoding, models of A.3;
- AFGV (Methods, "VQA Models on AFGV"): ``short-answer`` prompts for BLIP, InstructBLIP and
  LLaVA-1.5 on each readability tier.

Models come from :data:`REGISTRY` and load through transformers' own classes (no forks, no
remote code). Entries marked ``test_model`` build tiny random models from configs with no
download; they exist to test this runner and produce meaningless answers.

A run appends one JSON line per (question, model, strategy, sample) to a ``.jsonl`` file
(schema in ``runs/README.md``). The records of one question are written in one
write + flush + fsync, so an interrupted run leaves at most one incomplete question at the
end of the file; a rerun cuts that tail (counting the lines it drops) and skips every
finished question. One process writes a run file at a time (:class:`RunLock`: ``flock`` on
``<out>.lock``, held from that repair to the last write); another run on the same file stops
naming the holder (exit status 75) or, with ``--wait``, waits for it. ``--shard i/n`` splits
the questions by a stable hash of their id (one ``--out`` per shard); ``--engine ray`` runs
the same code on a Ray cluster through Ray Data (one model replica per GPU) while the driver
writes the same records. A missing, refused or undecodable image (see :mod:`vqalib.images`),
a model error or a judge failure becomes an error record of that question and the run goes on.

Command line: ``python -m vqalib.vqa run --model ... --strategy ... --dataset ... --out runs/<name>.jsonl``;
``python -m vqalib.vqa models``; ``python -m vqalib.vqa runs [runs_dir]``. Bad option values
stop with an argparse error naming the option and the expected form (exit status 2).

Configuration (parameters first, then environment): ``VQALIB_VQA_DEVICE`` (default:
cuda if available, else cpu), the judge variables of :mod:`vqalib.judge` for the
self-consistency strategies, the image variables of :mod:`vqalib.images`,
``VQALIB_RUNS_DIR`` (default ``<project>/runs``) for :func:`discover_runs`.

This module is the facade of :mod:`vqalib.runner`, where the code lives, one module per concept:
:mod:`~vqalib.runner.registry` (models and Table 25 settings), :mod:`~vqalib.runner.strategies`
(prompts, whose texts are JSON files in ``vqalib/runner/prompts/``), :mod:`~vqalib.runner.models`,
:mod:`~vqalib.runner.judges`, :mod:`~vqalib.runner.questions`, :mod:`~vqalib.runner.answering`,
:mod:`~vqalib.runner.runfiles`, :mod:`~vqalib.runner.locks`, :mod:`~vqalib.runner.engines`,
:mod:`~vqalib.runner.handoff` (what the notebooks read) and :mod:`~vqalib.runner.cli`. It
re-exports their public names, so ``from vqalib import vqa; vqa.discover_runs()`` and
``python -m vqalib.vqa ...`` work as they always did.
"""

from __future__ import annotations

import sys

from vqalib.runner.answering import RunContext, answer_item
from vqalib.runner.cli import build_parser, main
from vqalib.runner.engines import RayAnswerer, RunSummary, run_generation
from vqalib.runner.handoff import RUNS_DIR_ENV, default_runs_dir, discover_runs, latest_blocks, load_run
from vqalib.runner.judges import TestJudge, make_judge
from vqalib.runner.locks import LOCK_REFUSED_EXIT, RunLock, RunLockedError, run_lock_path
from vqalib.runner.models import (DEVICE_ENV, QWEN2VL_CHAT_TEMPLATE, VLM, build_model, build_test_model,
                                  default_device, load_pretrained, qwen2vl_processor)
from vqalib.runner.questions import (DATASETS, ITEM_COLUMNS, afgv_items, commvqa_items, load_items,
                                     read_question_table, table_items, vizwiz_items)
from vqalib.runner.registry import GREEDY, REGISTRY, ModelSpec, model_spec, registry_frame
from vqalib.runner.runfiles import (SCHEMA_VERSION, RunWriter, ScanResult, encode_block, in_shard, item_key,
                                    parse_shard, repair_run, scan_run, select_items)
from vqalib.runner.strategies import (ABSTENTION_INSTRUCTION, COMMVQA_CONTEXTUAL, CONSISTENCY_INSTRUCTION,
                                      REVIEW_INSTRUCTION, REVISE_INSTRUCTION, SHORT_ANSWER_TEMPLATES, STRATEGIES,
                                      Strategy, abstention_prompt, consistency_messages, contextual_prompt,
                                      generation_settings, parse_consistency_choice, revise_prompt, review_prompt,
                                      short_answer_prompt, vanilla_prompt)

__all__ = [
    # registry (VizWiz-LF A.1.3 / Table 25, CommVQA A.3, AFGV)
    "GREEDY", "REGISTRY", "ModelSpec", "model_spec", "registry_frame",
    # prompts and strategies (VizWiz-LF Tables 22-25, CommVQA A.1, AFGV)
    "ABSTENTION_INSTRUCTION", "COMMVQA_CONTEXTUAL", "CONSISTENCY_INSTRUCTION", "REVIEW_INSTRUCTION",
    "REVISE_INSTRUCTION", "SHORT_ANSWER_TEMPLATES", "STRATEGIES", "Strategy", "abstention_prompt",
    "consistency_messages", "contextual_prompt", "generation_settings", "parse_consistency_choice",
    "revise_prompt", "review_prompt", "short_answer_prompt", "vanilla_prompt",
    # models
    "DEVICE_ENV", "QWEN2VL_CHAT_TEMPLATE", "VLM", "build_model", "build_test_model", "default_device",
    "load_pretrained", "qwen2vl_processor",
    # judges (Table 24)
    "TestJudge", "make_judge",
    # questions
    "DATASETS", "ITEM_COLUMNS", "afgv_items", "commvqa_items", "load_items", "read_question_table",
    "table_items", "vizwiz_items",
    # answering, run files, locks, shards
    "RunContext", "answer_item", "SCHEMA_VERSION", "RunWriter", "ScanResult", "encode_block", "item_key",
    "repair_run", "scan_run", "LOCK_REFUSED_EXIT", "RunLock", "RunLockedError", "run_lock_path",
    "in_shard", "parse_shard", "select_items",
    # engines
    "RayAnswerer", "RunSummary", "run_generation",
    # hand-off to the notebooks
    "RUNS_DIR_ENV", "default_runs_dir", "discover_runs", "latest_blocks", "load_run",
    # command line
    "build_parser", "main",
]

if __name__ == "__main__":
    sys.exit(main())
