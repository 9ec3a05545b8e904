"""Answering one question under one prompting strategy: the records a run file stores for it (VizWiz-LF §7 / A.4.2,
Tables 22-26; CommVQA §5; AFGV Methods). A failing image, model or judge becomes that question's error record."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from vqalib.runner.images import ImageError, ImageStore
from vqalib.core.judge.backends import JudgeError
from vqalib.runner.runfiles import SCHEMA_VERSION, _seed, item_key
from vqalib.runner.strategies import (STRATEGIES, abstention_prompt, consistency_messages, contextual_prompt,
                                      generation_settings, parse_consistency_choice, revise_prompt, review_prompt,
                                      short_answer_prompt, vanilla_prompt)


@dataclass
class RunContext:
    """What every record of a run shares: model, strategy, dataset, judge, engine."""

    vlm: Any
    strategy: str
    dataset: str
    store: ImageStore
    judge: Any = None
    engine: str = "plain"
    shard: str = "0/1"
    max_new_tokens: int | None = None
    judge_seconds: float = 0.0

    def base(self, item: dict) -> dict:
        """The fields every record of ``item`` shares in this run (the schema of ``runs/README.md``).

        Parameters
        ----------
        item : dict
            One row of the item table.

        Returns
        -------
        dict
            ``image_sha256`` is None until the image is loaded.
        """
        spec = self.vlm.spec
        return {"schema": SCHEMA_VERSION, "dataset": self.dataset, "item_id": item["item_id"],
                "question_id": item.get("question_id"), "tier": item.get("tier"), "question": item["question"],
                "reference": item.get("reference"), "image": item["image"], "image_sha256": None,
                "model": spec.key, "model_id": spec.hub_id, "revision": self.vlm.revision,
                "test_model": spec.test_model, "dtype": self.vlm.dtype, "device": self.vlm.device,
                "strategy": self.strategy,
                "item_key": item_key(dataset=self.dataset, item_id=item["item_id"], model=spec.key,
                                     strategy=self.strategy),
                "engine": self.engine, "shard": self.shard}


def prompt_for(item: dict, *, strategy: str, family: str) -> str:
    """The first prompt a strategy sends for one item (VizWiz-LF §7, Tables 22-23; CommVQA A.1; AFGV), for runs and
    toolkit tasks alike.

    Parameters
    ----------
    item : dict
        The item (``question``; ``scenario`` and ``description`` for CommVQA's contextual condition).
    strategy : str
        A key of :data:`vqalib.runner.strategies.STRATEGIES`.
    family : str
        The model family (AFGV's short-answer template depends on it).
    """
    question = item["question"]
    if strategy in ("abstention", "abstention-consistency"):
        return abstention_prompt(question)
    if strategy == "commvqa-contextual":
        return contextual_prompt(scenario=item["scenario"], description=item["description"], question=question)
    if strategy == "commvqa-baseline":
        return question
    if strategy == "short-answer":
        return short_answer_prompt(question, family=family)
    return vanilla_prompt(question)


def _error(base: dict, *, stage: str, error: BaseException, partial: Any = None) -> dict:
    return {**base, "kind": "error", "sample": -1, "final": True, "answer": None,
            "error": {"stage": stage, "type": type(error).__name__, "message": str(error)[:2000]},
            "partial": partial}


def answer_item(item: dict, *, ctx: RunContext) -> list[dict]:
    """All records of one question under one strategy (VizWiz-LF Tables 22-25, CommVQA §5, AFGV).

    Parameters
    ----------
    item : dict
        One row of the item table; an ``image`` of ``missing:<reason>`` is an image error.
    ctx : RunContext
        The run's model, strategy, dataset, image store and judge (its time adds to ``ctx.judge_seconds``).

    Returns
    -------
    list of dict
        The answer, or the draws and their aggregate; on a failure an error record (stage ``image``, ``model`` or
        ``judge``). Each carries ``item_records``, ``seconds`` and ``model_seconds``.
    """
    started = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
    clock = time.perf_counter()
    model_before = ctx.vlm.model_seconds
    base = {**ctx.base(item), "started_at": started}
    strategy = STRATEGIES[ctx.strategy]
    settings = generation_settings(ctx.vlm.spec, ctx.strategy, max_new_tokens=ctx.max_new_tokens)
    base["generation"] = settings

    def finish(records: list[dict]) -> list[dict]:
        seconds, model_seconds = time.perf_counter() - clock, ctx.vlm.model_seconds - model_before
        for record in records:
            record.update(item_records=len(records), seconds=round(seconds, 4), model_seconds=round(model_seconds, 4))
            record.setdefault("error", None)
        return records

    try:
        if str(item["image"]).startswith("missing:"):
            raise ImageError(str(item["image"])[len("missing:"):])
        loaded = ctx.store.load(str(item["image"]))
    except ImageError as error:
        return finish([_error(base, stage="image", error=error)])
    base["image_sha256"] = loaded.sha256
    image, question = loaded.image, item["question"]
    prompt = prompt_for(item, strategy=ctx.strategy, family=ctx.vlm.spec.family)
    seed_of = lambda sample, stage=0: _seed(base["item_key"], sample, stage)  # noqa: E731

    if strategy.draws:
        draws: list[dict] = []
        try:
            for k in range(strategy.draws):
                answer = ctx.vlm.generate(image, prompt, settings=settings, seed=seed_of(k))
                draws.append({**base, "kind": "draw", "sample": k, "final": False, "prompt": prompt,
                              "answer": answer, "seed": seed_of(k)})
        except Exception as error:  # noqa: BLE001 - one question's failure must not end the run
            return finish([_error(base, stage="model", error=error, partial=[d["answer"] for d in draws])])
        messages = consistency_messages(question, [d["answer"] for d in draws])
        judge_clock = time.perf_counter()
        try:
            reply = ctx.judge.complete(messages, temperature=0.0, max_tokens=32)
            choice = parse_consistency_choice(reply, n=len(draws))
            if choice is None:
                raise JudgeError(f"unparseable judge reply: {reply[:200]!r}")
        except Exception as error:  # noqa: BLE001
            ctx.judge_seconds += time.perf_counter() - judge_clock
            return finish(draws + [_error({**base, "prompt": messages[0]["content"]}, stage="judge", error=error)])
        ctx.judge_seconds += time.perf_counter() - judge_clock
        judge_info = {"backend": getattr(getattr(ctx.judge, "backend", ctx.judge), "name", "?"),
                      "model": getattr(getattr(ctx.judge, "backend", ctx.judge), "model", "?"),
                      "reply": reply, "choice": choice}
        return finish(draws + [{**base, "kind": "aggregate", "sample": -1, "final": True,
                                "prompt": messages[0]["content"], "answer": draws[choice]["answer"],
                                "judge": judge_info}])

    stages: list[dict] = []
    try:
        answer = ctx.vlm.generate(image, prompt, settings=settings, seed=seed_of(0, 1))
        stages.append({"stage": 1, "prompt": prompt, "output": answer})
        if ctx.strategy == "self-correction":
            review = review_prompt(question, answer)
            problems = ctx.vlm.generate(image, review, settings=settings, seed=seed_of(0, 2))
            stages.append({"stage": 2, "prompt": review, "output": problems})
            prompt = revise_prompt(question, answer, problems)
            answer = ctx.vlm.generate(image, prompt, settings=settings, seed=seed_of(0, 3))
            stages.append({"stage": 3, "prompt": prompt, "output": answer})
    except Exception as error:  # noqa: BLE001
        return finish([_error(base, stage="model", error=error, partial=stages or None)])
    record = {**base, "kind": "answer", "sample": 0, "final": True, "prompt": prompt, "answer": answer,
              "seed": seed_of(0, 1)}
    if ctx.strategy == "self-correction":
        record["stages"] = stages
    return finish([record])
