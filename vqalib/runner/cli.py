"""The runner's subcommands of ``vqalib``: ``run`` (answers into a run file: VizWiz-LF §3 / §7 / A.4.2, CommVQA §5,
AFGV), ``models`` (the model specs) and ``runs`` (the run files the notebooks find). A bad option value is an
argparse error (exit 2), a held run file exit 75 (:data:`~vqalib.runner.locks.LOCK_REFUSED_EXIT`), a bad
question table or a run file of another (model, strategy) ``error: ...`` with exit 1."""

from __future__ import annotations

import argparse
import math
import os
import re
import stat
import sys
from pathlib import Path

import pandas as pd

from vqalib.core.escaping import terminal_text
from vqalib.core.io import DataFormatError, file_kind
from vqalib.runner.engines import run_generation
from vqalib.runner.handoff import discover_runs
from vqalib.runner.locks import LOCK_REFUSED_EXIT, RunLockedError
from vqalib.runner.models import DEVICE_ENV
from vqalib.runner.questions import DATASETS, load_items
from vqalib.runner.model_specs import MODELS, load_plugins, models_frame
from vqalib.runner.runfiles import MixedRunFileError, parse_shard
from vqalib.runner.strategies import STRATEGIES



# pandas display options of the text tables `vqalib models` and `vqalib runs` print
_TEXT_TABLE = ("display.width", 200, "display.max_columns", 30, "display.max_colwidth", 60)


def _model_option(text: str) -> str:
    """A model key, plugins loaded only here (so a bad ``VQALIB_MODEL_PLUGINS`` stops ``run`` alone)."""
    try:
        load_plugins()
    except ImportError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    if text not in MODELS:
        raise argparse.ArgumentTypeError(f"unknown model {text!r}; choose from {', '.join(sorted(MODELS))}")
    return text


def _shard_option(text: str) -> str:
    try:
        parse_shard(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


def _count_option(text: str) -> int:
    if not re.fullmatch(r"\s*\d+\s*", text) or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return int(text)


def _seconds_option(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:  # also rejects nan
        raise argparse.ArgumentTypeError(f"expected seconds >= 0 (or no value: wait as long as it takes), got {text!r}")
    return seconds


def _judge_option(text: str) -> str:
    if text in ("env", "none") or re.fullmatch(r"test:(\d+|fail|garbage)", text):
        return text
    raise argparse.ArgumentTypeError(f"expected env, none or test:N (N a draw index, or fail, garbage), got {text!r}")


def _kind(text: str) -> str | None:
    """What ``text`` names when it is not a regular file ("a named pipe (FIFO)", ...); None for a file or nothing."""
    try:
        mode = os.stat(text).st_mode
    except OSError:
        return None
    return None if stat.S_ISREG(mode) else file_kind(mode)


def _existing_file_option(text: str) -> str:
    kind = _kind(text)
    if kind:  # a pipe would hold the read for ever
        raise argparse.ArgumentTypeError(f"{text!r} is {kind}, not a regular file")
    if not Path(text).is_file():
        raise argparse.ArgumentTypeError(f"no such file: {text!r}")
    return text


def _existing_path_option(text: str) -> str:
    if not Path(text).exists():
        raise argparse.ArgumentTypeError(f"no such file or folder: {text!r}")
    return text


def _out_option(text: str) -> str:
    if Path(text).is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a folder; expected a run file path such as runs/<name>.jsonl")
    kind = _kind(text)
    if kind:
        raise argparse.ArgumentTypeError(f"{text!r} is {kind}, not a regular file; expected a run file path such as "
                                         f"runs/<name>.jsonl")
    return text


def add_run_arguments(run: argparse.ArgumentParser) -> None:
    """The options of ``vqalib run`` (VizWiz-LF §3 / §7 / A.4.2, CommVQA §5, AFGV Methods).

    Parameters
    ----------
    run : argparse.ArgumentParser
        The ``run`` subcommand's parser.
    """
    run.add_argument("--model", required=True, type=_model_option, metavar="KEY",
                     help=f"a model of `vqalib models`: {', '.join(sorted(MODELS))}, or one registered by a "
                          f"VQALIB_MODEL_PLUGINS module")
    run.add_argument("--strategy", required=True, choices=list(STRATEGIES))
    run.add_argument("--dataset", required=True, choices=DATASETS)
    run.add_argument("--out", required=True, type=_out_option,
                     help="run file, e.g. runs/llava-1.5-13b_vanilla_vizwiz-lf.jsonl (one writer at a time)")
    run.add_argument("--mixed-run-file", action="store_true",
                     help="allow appending to an --out that holds answers of another model or strategy (refused "
                          "by default: the notebooks read a run file as one model under one strategy)")
    run.add_argument("--wait", nargs="?", type=_seconds_option, const=math.inf, default=0.0, metavar="SECONDS",
                     help="if another run is writing --out, wait for it (up to SECONDS; no value: as long as it "
                          "takes) instead of stopping with exit status 75")
    run.add_argument("--questions", type=_existing_file_option,
                     help="question table for --dataset afgv/table (CSV, JSONL, JSON or Parquet; table: question, "
                          "image, question_id or item_id; afgv: question_id, tier, question, image_id or image); "
                          "checked before the model loads")
    run.add_argument("--images", type=_existing_path_option,
                     help="CommVQA images.zip/folder or GQA images folder (image names are looked up only inside it)")
    run.add_argument("--limit", type=_count_option, help="first N questions only")
    run.add_argument("--shard", default="0/1", type=_shard_option, metavar="I/N",
                     help="this process's share of the questions, 0 <= I < N (give each shard its own --out)")
    run.add_argument("--engine", default="plain", choices=("plain", "ray"))
    run.add_argument("--ray-address", help="Ray cluster address (default: start or join a local one)")
    run.add_argument("--replicas", type=_count_option, help="Ray model replicas (default: one per GPU)")
    run.add_argument("--ray-batch-size", type=_count_option, default=8,
                     help="questions per Ray replica call (default 8)")
    run.add_argument("--judge", default="env", type=_judge_option,
                     help="self-consistency judge: env (VQALIB_JUDGE_*), none, test:N")
    run.add_argument("--device", help=f"cpu, cuda, cuda:1 ... (default ${DEVICE_ENV} or auto)")
    run.add_argument("--dtype", help="float32, bfloat16, float16 (default: the model spec's on GPU, float32 on CPU)")
    run.add_argument("--revision", help="hub revision (commit) to pin instead of the model spec's")
    run.add_argument("--max-new-tokens", type=_count_option, help="override the model spec's max_new_tokens")
    run.add_argument("--image-cache", help="download cache for image URLs (default $VQALIB_IMAGE_CACHE)")
    run.add_argument("--threads", type=_count_option,
                     help="torch CPU threads (1 avoids contention on a shared machine)")
    run.add_argument("--retry-errors", action="store_true", help="run error questions again")
    run.add_argument("--no-progress", action="store_true")
    run.add_argument("--no-fsync", action="store_true", help="flush only (faster on slow disks; a process crash "
                                                              "still loses nothing, a power cut may)")


def run_command(args: argparse.Namespace, *, parser: argparse.ArgumentParser) -> int:
    """``vqalib run``: generate answers into a run file (resumable; one writer at a time).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of :func:`add_run_arguments`.
    parser : argparse.ArgumentParser
        The ``run`` parser, to report an option error in argparse's form.

    Returns
    -------
    int
        The exit status: 0, 75 (run file held) or 1.
    """
    if args.dataset in ("afgv", "table") and not args.questions:
        parser.error(f"argument --questions: required with --dataset {args.dataset} (a CSV/JSONL/Parquet table)")
    if args.threads:
        import torch
        torch.set_num_threads(args.threads)
    try:
        items = load_items(args.dataset, questions=args.questions, images=args.images)
    except (DataFormatError, ValueError) as error:  # named file, row and field: no traceback needed
        print(f"error: {terminal_text(error)}", file=sys.stderr)
        return 1
    try:
        summary = run_generation(items, model=args.model, strategy=args.strategy, dataset=args.dataset,
                                 out=args.out, judge=args.judge if STRATEGIES[args.strategy].uses_judge else None,
                                 device=args.device, dtype=args.dtype, revision=args.revision, limit=args.limit,
                                 shard=args.shard, engine=args.engine, max_new_tokens=args.max_new_tokens,
                                 retry_errors=args.retry_errors, progress=not args.no_progress,
                                 fsync=not args.no_fsync, ray_address=args.ray_address, replicas=args.replicas,
                                 ray_batch_size=args.ray_batch_size, image_cache=args.image_cache, wait=args.wait,
                                 mixed_run_file=args.mixed_run_file)
    except RunLockedError as error:
        print(f"error: {terminal_text(error)}", file=sys.stderr)
        return LOCK_REFUSED_EXIT
    except (MixedRunFileError, DataFormatError) as error:
        print(f"error: {terminal_text(error)}", file=sys.stderr)
        return 1
    print(summary.line())
    return 0


def models_text() -> str:
    """``vqalib models``: the model specs, plugins included, as a text table (VizWiz-LF Table 25, CommVQA A.3, AFGV)."""
    with pd.option_context(*_TEXT_TABLE):
        return models_frame()[["key", "hub_id", "revision", "model_class", "papers", "dtype", "generation",
                                 "consistency", "max_new_tokens", "test_model"]].to_string(index=False)


def runs_text(runs_dir: str | Path | None = None) -> str:
    """``vqalib runs``: the run files the notebooks find, with their counts.

    Parameters
    ----------
    runs_dir : str or Path, optional
        The folder of run files (default ``$VQALIB_RUNS_DIR`` or ``runs/``).
    """
    with pd.option_context(*_TEXT_TABLE):
        return discover_runs(runs_dir).drop(columns=["path"]).to_string(index=False)
