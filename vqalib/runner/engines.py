"""Running a strategy over many questions into a run file (every answer run of VizWiz-LF, CommVQA and AFGV): resume,
hold the run file's lock from the repair to the last write, and answer in this process (``plain``) or through
Ray Data (``ray``, one model replica per GPU) while the driver writes the same records."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import pandas as pd
from tqdm import tqdm

from vqalib.runner.images import ImageStore
from vqalib.core.judge.settings import ENABLE_HINT
from vqalib.runner.answering import RunContext, answer_item
from vqalib.runner.judges import make_judge
from vqalib.runner.locks import RunLock
from vqalib.runner.models import VLM, build_model, default_device
from vqalib.runner.model_specs import load_plugins
from vqalib.runner.runfiles import (RunWriter, check_one_run, encode_block, item_key, parse_shard, repair_run,
                                    select_items)
from vqalib.runner.strategies import STRATEGIES


@dataclass
class RunSummary:
    """Counts and timing of one run (printed by the CLI)."""

    out: str
    items_total: int
    skipped_finished: int
    written_items: int = 0
    records: int = 0
    errors: dict = field(default_factory=dict)
    repaired_lines: int = 0
    seconds: float = 0.0
    model_seconds: float = 0.0
    judge_seconds: float = 0.0

    @property
    def overhead_ms_per_item(self) -> float:
        """Runner time per question beyond model generation and judge calls."""
        if not self.written_items:
            return 0.0
        return 1000 * (self.seconds - self.model_seconds - self.judge_seconds) / self.written_items

    def line(self) -> str:
        errors = ", ".join(f"{k} {v}" for k, v in sorted(self.errors.items())) or "none"
        return (f"{self.out}: {self.written_items} questions written ({self.records} records), "
                f"{self.skipped_finished} already finished, errors: {errors}, "
                f"{self.repaired_lines} damaged lines repaired; {self.seconds:.1f} s "
                f"(model {self.model_seconds:.1f} s, judge {self.judge_seconds:.1f} s, "
                f"runner overhead {self.overhead_ms_per_item:.2f} ms/question)")



def run_generation(items: pd.DataFrame, *, model: str | VLM, strategy: str, dataset: str, out: str | Path,
                   judge: Any = None, store: ImageStore | None = None, device: str | None = None,
                   dtype: str | None = None, revision: str | None = None, limit: int | None = None,
                   shard: str = "0/1", engine: str = "plain", max_new_tokens: int | None = None,
                   retry_errors: bool = False, progress: bool = True, fsync: bool = True,
                   ray_address: str | None = None, replicas: int | None = None, ray_batch_size: int = 8,
                   image_cache: str | Path | None = None, wait: float | bool = 0.0,
                   mixed_run_file: bool = False) -> RunSummary:
    """Generate answers for ``items`` and append them to ``out`` (VizWiz-LF §3/§7, CommVQA §5, AFGV).

    Resumes (finished questions skipped, a damaged tail cut); one writer per file (:class:`RunLock`); a file holding
    another (model, strategy) raises ``MixedRunFileError`` before the model loads unless ``mixed_run_file``.

    Parameters
    ----------
    items : pandas.DataFrame
        The questions (:func:`vqalib.runner.questions.load_items`).
    model : str or VLM
        A model key or a loaded model (Ray: a key, so each replica loads its own).
    strategy : str
        A key of :data:`vqalib.runner.strategies.STRATEGIES`.
    dataset : str
        The dataset name written into every record and its resume key.
    out : str or Path
        The run file (JSON lines), appended to.
    judge : str or object, optional
        A judge name (``env``, ``none``, ``test:N``; Ray needs a name) or object; self-consistency needs one.
    store : ImageStore, optional
        The plain engine's image store; default a new one on ``image_cache``.
    device : str, optional
        Default :func:`vqalib.runner.models.default_device`; on Ray, ``cuda`` when the cluster has GPUs.
    dtype : str, optional
        A torch dtype name; default the model spec's on GPU, ``float32`` on CPU.
    revision : str, optional
        The hub revision of the checkpoint; default the model spec's.
    limit : int, optional
        Answer only the first ``limit`` questions (before sharding).
    shard : str, default "0/1"
        ``"i/n"``: this process answers shard i of n.
    engine : {"plain", "ray"}, default "plain"
        Answer in this process, or through Ray Data.
    max_new_tokens : int, optional
        Overrides the model spec's token limit.
    retry_errors : bool, default False
        Answer again the questions whose last outcome in ``out`` is an error.
    progress : bool, default True
        Show a tqdm progress bar.
    fsync : bool, default True
        fsync ``out`` after each question (a machine crash loses at most that question).
    ray_address : str, optional
        The cluster address passed to ``ray.init``.
    replicas : int, optional
        Model replicas on Ray; default one per GPU, else 1.
    ray_batch_size : int, default 8
        Questions per call of a replica.
    image_cache : str or Path, optional
        The image download cache; default :func:`vqalib.runner.images.default_cache_dir`.
    wait : float or bool, default 0.0
        Seconds to wait for another run holding ``out`` (``True`` or ``math.inf``: no limit).
    mixed_run_file : bool, default False
        Allow appending to a run file of another model or strategy.

    Returns
    -------
    RunSummary
        Returned without loading the model when nothing is pending.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; choose from {', '.join(STRATEGIES)}")
    needs = STRATEGIES[strategy]
    missing = {"item_id", "question", "image"} - set(items.columns)
    if missing:
        raise ValueError(f"items lack columns {sorted(missing)}")
    if needs.needs_context and (items["scenario"].isna().any() or items["description"].isna().any()):
        raise ValueError(f"strategy {strategy} needs scenario and description for every question (CommVQA)")
    shard_pair = parse_shard(shard)
    key = model if isinstance(model, str) else model.spec.key
    judge_name, judge_obj = (judge, make_judge(judge)) if isinstance(judge, str) or judge is None else (None, judge)
    if engine == "ray" and judge_obj is not None and judge_name is None:
        raise ValueError("engine='ray' needs the judge by name (env, test:N) so each replica can build its own")
    if needs.uses_judge and judge_obj is None:
        raise ValueError(f"strategy {strategy} aggregates draws with an LLM judge (VizWiz-LF Table 24): {ENABLE_HINT}")

    # held from the repair to the last write: no other process appends meanwhile, or cuts what this one wrote
    with RunLock(out, wait=wait, on_wait=lambda message: print(message, file=sys.stderr, flush=True)) as lock:
        scan = repair_run(out, lock=lock)
        if not mixed_run_file:
            check_one_run(scan.records, path=out, model=key, strategy=strategy)
        done = {k for k, kind in scan.finished.items() if not (retry_errors and kind == "error")}
        chosen = select_items(items, limit=limit, shard=shard_pair)
        pending = [row for row in chosen.to_dict("records")
                   if item_key(dataset=dataset, item_id=row["item_id"], model=key, strategy=strategy) not in done]
        summary = RunSummary(out=str(out), items_total=len(chosen), skipped_finished=len(chosen) - len(pending),
                             repaired_lines=scan.bad_lines)
        if not pending:
            return summary
        writer = RunWriter(out, fsync=fsync)
        start = time.perf_counter()
        try:
            if engine == "plain":
                vlm = (build_model(model, device=device, dtype=dtype, revision=revision)
                       if isinstance(model, str) else model)
                ctx = RunContext(vlm=vlm, strategy=strategy, dataset=dataset,
                                 store=store or ImageStore(cache_dir=image_cache), judge=judge_obj, engine="plain",
                                 shard=shard, max_new_tokens=max_new_tokens)
                model_before = vlm.model_seconds
                blocks = (answer_item(row, ctx=ctx) for row in pending)
                _write_all(blocks, writer=writer, summary=summary, total=len(pending), progress=progress)
                summary.model_seconds = vlm.model_seconds - model_before
                summary.judge_seconds = ctx.judge_seconds
            elif engine == "ray":
                if not isinstance(model, str):
                    raise ValueError("engine='ray' needs a model key (each replica loads its own copy)")
                config = {"model": model, "plugins": ",".join(load_plugins()), "device": device, "dtype": dtype,
                          "revision": revision, "strategy": strategy, "dataset": dataset, "judge": judge_name,
                          "shard": shard, "max_new_tokens": max_new_tokens,
                          "image_cache": str(image_cache or (store.cache_dir if store else "")) or None}
                blocks = _ray_blocks(pending, config=config, address=ray_address, replicas=replicas,
                                     batch_size=ray_batch_size)
                _write_all(blocks, writer=writer, summary=summary, total=len(pending), progress=progress)
            else:
                raise ValueError(f"unknown engine {engine!r}: plain or ray")
        finally:
            writer.close()
            summary.seconds = time.perf_counter() - start
        return summary


def _write_all(blocks: Iterable[list[dict]], *, writer: RunWriter, summary: RunSummary, total: int,
               progress: bool) -> None:
    for records in tqdm(blocks, total=total, desc="answers", unit="question", disable=not progress):
        writer.write(encode_block(records))
        summary.written_items += 1
        summary.records += len(records)
        if records[0].get("engine") == "ray":  # times come from the replicas
            summary.model_seconds += records[0].get("model_seconds") or 0.0
        for record in records:
            if record["kind"] == "error":
                stage = record["error"]["stage"]
                summary.errors[stage] = summary.errors.get(stage, 0) + 1


class RayAnswerer:
    """A Ray Data actor holding one model replica (one GPU each on a GPU cluster)."""

    def __init__(self, config: dict) -> None:
        load_plugins(config["plugins"])  # the driver's VQALIB_MODEL_PLUGINS, also on a cluster started elsewhere
        vlm = build_model(config["model"], device=config["device"] or default_device(), dtype=config["dtype"],
                          revision=config["revision"])
        self.ctx = RunContext(vlm=vlm, strategy=config["strategy"], dataset=config["dataset"],
                              store=ImageStore(cache_dir=config["image_cache"]), judge=make_judge(config["judge"]),
                              engine="ray", shard=config["shard"], max_new_tokens=config["max_new_tokens"])

    def __call__(self, batch: dict) -> dict:
        blocks = [encode_block(answer_item(json.loads(item), ctx=self.ctx)).decode("utf-8") for item in batch["item"]]
        return {"block": blocks}


def _ray_blocks(pending: list[dict], *, config: dict, address: str | None, replicas: int | None,
                batch_size: int):
    """Records of each pending question computed by Ray Data actors, streamed back to the driver."""
    import ray

    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    context = ray.data.DataContext.get_current()
    context.execution_options.preserve_order = True  # the file order matches the plain engine
    context.enable_progress_bars = False
    use_gpu = (config["device"] or ("cuda" if ray.cluster_resources().get("GPU") else "cpu")).startswith("cuda")
    config = {**config, "device": config["device"] or ("cuda" if use_gpu else "cpu")}
    gpus = int(ray.cluster_resources().get("GPU", 0))
    replicas = replicas or (gpus if use_gpu else 1) or 1
    dataset = ray.data.from_items([{"item": json.dumps(row, default=str)} for row in pending])
    answered = dataset.map_batches(RayAnswerer, fn_constructor_kwargs={"config": config},
                                   batch_size=batch_size,  # questions per replica call: amortises Ray's per-call cost
                                   compute=ray.data.ActorPoolStrategy(size=replicas),
                                   num_gpus=1 if use_gpu else 0, num_cpus=1)
    for row in answered.iter_rows():
        yield [json.loads(line) for line in row["block"].splitlines()]
