"""The LLM judge: LAVE ratings of answers against a reference (VizWiz-LF §5, Table 4 LAVE column).

LAVE (Mañas et al. 2023) asks a language model to rate a candidate answer against a
reference answer on a 1-3 scale, with the exact instruction and four demonstrations of
VizWiz-LF Appendix A.3.1, Table 17. The model is reached through a :class:`JudgeBackend`:
an OpenAI-compatible HTTP server (hosted APIs, vLLM, Ollama's ``/v1``) or a local
``transformers`` causal LM. :class:`CachedJudge` stores every reply on disk so reruns of
the notebooks cost no model calls.

Configuration (README, "Models and caches"): ``VQALIB_JUDGE_BASE_URL`` + ``VQALIB_JUDGE_MODEL``
(+ ``VQALIB_JUDGE_API_KEY`` or ``OPENAI_API_KEY``, ``VQALIB_JUDGE_TIMEOUT``), or
``VQALIB_JUDGE_HF_MODEL`` (+ ``VQALIB_JUDGE_DEVICE``); cache in ``VQALIB_CACHE_DIR``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import pandas as pd
import requests
from requests.adapters import HTTPAdapter
from tqdm import tqdm
from urllib3.util import Retry

from vqalib.datasets import cache_root, write_atomic

BASE_URL_ENV = "VQALIB_JUDGE_BASE_URL"
MODEL_ENV = "VQALIB_JUDGE_MODEL"
API_KEY_ENV = "VQALIB_JUDGE_API_KEY"
TIMEOUT_ENV = "VQALIB_JUDGE_TIMEOUT"
HF_MODEL_ENV = "VQALIB_JUDGE_HF_MODEL"
DEVICE_ENV = "VQALIB_JUDGE_DEVICE"

ENABLE_HINT = (
    f"set {BASE_URL_ENV} and {MODEL_ENV} (OpenAI-compatible server, key in {API_KEY_ENV}) "
    f"or {HF_MODEL_ENV} (local transformers model) to run the LLM judge"
)

RETRY_STATUSES = (429, 500, 502, 503, 504)


class JudgeError(RuntimeError):
    """The judge model could not be reached or refused the request."""


@runtime_checkable
class JudgeBackend(Protocol):
    """A chat model that the LAVE judge (Table 4) sends its prompts to."""

    name: str
    model: str

    def complete(self, messages: list[dict], *, temperature: float = 0.0, max_tokens: int = 256) -> str:
        """The assistant's reply text to ``messages``."""
        ...


class OpenAIChatBackend:
    """An OpenAI-compatible ``/chat/completions`` endpoint as LAVE judge (Table 4)."""

    name = "openai"

    def __init__(self, *, base_url: str, model: str, api_key: str | None = None, timeout: float = 60.0,
                 max_retries: int = 4, backoff_factor: float = 0.5) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.timeout = timeout
        # POST is not idempotent for urllib3 by default; a chat completion is, so allow all verbs
        retry = Retry(total=max_retries, connect=max_retries, read=max_retries, status=max_retries,
                      backoff_factor=backoff_factor, status_forcelist=RETRY_STATUSES,
                      allowed_methods=None, raise_on_status=False)
        self.session = requests.Session()
        self.session.mount("http://", HTTPAdapter(max_retries=retry))
        self.session.mount("https://", HTTPAdapter(max_retries=retry))
        if api_key:
            self.session.headers["Authorization"] = f"Bearer {api_key}"

    @classmethod
    def from_env(cls) -> OpenAIChatBackend:
        """The backend named by ``VQALIB_JUDGE_BASE_URL``/``_MODEL``/``_API_KEY``/``_TIMEOUT``."""
        base_url, model = os.environ.get(BASE_URL_ENV), os.environ.get(MODEL_ENV)
        if not base_url or not model:
            raise JudgeError(f"{BASE_URL_ENV} and {MODEL_ENV} must both be set")
        api_key = os.environ.get(API_KEY_ENV) or os.environ.get("OPENAI_API_KEY")
        return cls(base_url=base_url, model=model, api_key=api_key,
                   timeout=float(os.environ.get(TIMEOUT_ENV) or 60.0))

    def complete(self, messages: list[dict], *, temperature: float = 0.0, max_tokens: int = 256) -> str:
        """One chat completion (a LAVE rationale and rating); "" when the reply has no text."""
        url = f"{self.base_url}/chat/completions"
        body = {"model": self.model, "messages": messages, "temperature": temperature, "max_tokens": max_tokens}
        try:
            response = self.session.post(url, json=body, timeout=self.timeout)
            response.raise_for_status()
            payload = response.json()
        except (requests.RequestException, ValueError) as error:
            raise JudgeError(f"judge request to {url} (model {self.model}) failed after retries: {error}") from error
        try:
            content = payload["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            return ""  # malformed completion: the caller counts it as unparseable
        return content if isinstance(content, str) else ""


class TransformersBackend:
    """A local ``transformers`` causal LM as LAVE judge (Table 4), e.g. an open-weights model."""

    name = "transformers"

    def __init__(self, *, model: str, device: str = "cpu", torch_dtype: Any = None, model_obj: Any = None,
                 tokenizer: Any = None, seed: int = 0) -> None:
        # imported here: transformers is slow to import and only this backend needs it
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.model = model
        self.device = device
        self.seed = seed
        self.tokenizer = tokenizer if tokenizer is not None else AutoTokenizer.from_pretrained(model)
        if model_obj is None:
            model_obj = AutoModelForCausalLM.from_pretrained(model, dtype=torch_dtype)
        self.lm = model_obj.to(device).eval()

    @classmethod
    def from_env(cls) -> TransformersBackend:
        """The model named by ``VQALIB_JUDGE_HF_MODEL`` on ``VQALIB_JUDGE_DEVICE`` (default cpu)."""
        model = os.environ.get(HF_MODEL_ENV)
        if not model:
            raise JudgeError(f"{HF_MODEL_ENV} must be set")
        return cls(model=model, device=os.environ.get(DEVICE_ENV) or "cpu")

    def render(self, messages: list[dict]) -> str:
        """The prompt text for ``messages``: the chat template if the tokenizer has one."""
        if getattr(self.tokenizer, "chat_template", None):
            return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        turns = [f"{m['role'].capitalize()}: {m['content']}" for m in messages]
        return "\n\n".join(turns + ["Assistant:"])

    def complete(self, messages: list[dict], *, temperature: float = 0.0, max_tokens: int = 256) -> str:
        """Generate a reply (greedy at temperature 0, seeded sampling above); new text only."""
        import torch

        has_template = bool(getattr(self.tokenizer, "chat_template", None))
        # a chat template already writes the special tokens it wants
        inputs = self.tokenizer(self.render(messages), return_tensors="pt",
                                add_special_tokens=not has_template).to(self.device)
        pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id
        options: dict[str, Any] = {"max_new_tokens": max_tokens, "pad_token_id": pad_id, "do_sample": temperature > 0}
        if temperature > 0:
            options["temperature"] = temperature
        # generate() takes no generator: seed a forked RNG so the global one is left untouched
        with torch.random.fork_rng(), torch.inference_mode():
            torch.manual_seed(self.seed)
            output = self.lm.generate(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"], **options)
        new_tokens = output[0, inputs["input_ids"].shape[1]:]
        return self.tokenizer.decode(new_tokens, skip_special_tokens=True).strip()


class CachedJudge:
    """A backend whose replies are cached on disk, so reruns of Table 4 make no calls."""

    def __init__(self, backend: JudgeBackend, *, cache_dir: str | Path) -> None:
        self.backend = backend
        self.cache_dir = Path(cache_dir)
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        self.calls = 0
        self.cache_hits = 0

    def _path(self, request: dict) -> Path:
        canonical = json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return self.cache_dir / f"{hashlib.sha256(canonical.encode('utf-8')).hexdigest()}.json"

    def complete(self, messages: list[dict], *, temperature: float = 0.0, max_tokens: int = 256) -> str:
        """The backend's reply to ``messages``, from the cache when this exact request was made before."""
        request = {"backend": self.backend.name, "model": self.backend.model, "messages": messages,
                   "temperature": temperature, "max_tokens": max_tokens}
        path = self._path(request)
        try:
            text = json.loads(path.read_text(encoding="utf-8"))["text"]
            self.cache_hits += 1
            return text
        except (OSError, ValueError, KeyError):
            pass  # absent or damaged: ask the model again
        text = self.backend.complete(messages, temperature=temperature, max_tokens=max_tokens)
        self.calls += 1
        if text:  # an empty reply is not stored, so a later run asks again
            write_atomic(path, json.dumps({"request": request, "text": text}, ensure_ascii=False).encode("utf-8"))
        return text

    def stats(self) -> dict[str, int]:
        """Backend calls and cache hits so far (reported under Table 4)."""
        return {"calls": self.calls, "cache_hits": self.cache_hits}

    def summary(self) -> str:
        """One line such as ``judge openai:gpt-4o: 120 calls, 240 cache hits``."""
        return f"judge {self.backend.name}:{self.backend.model}: {self.calls} calls, {self.cache_hits} cache hits"


def default_cache_dir() -> Path:
    """``$VQALIB_CACHE_DIR/judge`` or ``<project>/.cache/vqalib/judge``."""
    return cache_root() / "judge"


def judge_from_env(*, cache_dir: str | Path | None = None) -> CachedJudge | None:
    """The cached judge the environment configures for Table 4, or None (see :data:`ENABLE_HINT`)."""
    if os.environ.get(BASE_URL_ENV) and os.environ.get(MODEL_ENV):
        backend: JudgeBackend = OpenAIChatBackend.from_env()
    elif os.environ.get(HF_MODEL_ENV):
        backend = TransformersBackend.from_env()
    else:
        return None
    return CachedJudge(backend, cache_dir=cache_dir if cache_dir is not None else default_cache_dir())


# VizWiz-LF Appendix A.3.1, Table 17 (verbatim, straight quotes)
LAVE_INSTRUCTION = (
    "You are given a question, a single gold-standard reference answer written by expert, and a candidate "
    "answer. Please rate the accuracy of the candidate answer for the question considering the reference "
    "answer. Use a scale of 1-3, with 1 indicating an incorrect or irrelevant answer, 2 indicating an "
    "ambiguous or incomplete answer, and 3 indicating a correct answer. Give the rationale before rating. "
    "Follow the template of the examples following and always end the sentence with Rating: X."
)

LAVE_EXAMPLES: tuple[dict, ...] = (
    {"question": "What is the color of the car?", "reference": "The color of the car is red.",
     "candidate": "red",
     "output": "The candidate answer is correct because both the reference answer and candidate answer "
               "mentions that the color is red.",
     "rating": 3},
    {"question": "What is the animal on the left?", "reference": "giraffe", "candidate": "giraffe",
     "output": "The candidate answer is correct because the reference answer and candidate answer are the same.",
     "rating": 3},
    {"question": "What's the weather like?", "reference": "rainy",
     "candidate": "The image displays a clear sky with a few small clouds, with the sun near the horizon "
                  "suggesting it could be around sunrise or sunset. The sky has a subtle gradient, "
                  "transitioning from a bright area near the sun to a darker blue further away. Due to the "
                  "low exposure of the photo, the foreground including trees and a part of a building appear "
                  "as silhouettes. The colors in the sky are muted, mostly displaying varying shades of blue "
                  "without vibrant sunrise or sunset hues.",
     "output": "The candidate answer is incorrect because the weather is 'rainy' but the candidate answer "
               "does not mention it.",
     "rating": 1},
    {"question": "What is this picture about?",
     "reference": "The image shows a cartoon representation of two cats with a large pink heart in the background.",
     "candidate": "Two animated animal characters hugging each other.",
     "output": "The candidate answer is incomplete because it does not specify the type of animal and the background.",
     "rating": 2},
)


def _item(*, question: str, reference: str, candidate: str) -> str:
    return f"Question: '{question}'\nReference answer: '{reference}'\nCandidate answer: '{candidate}'\nOutput:"


def lave_messages(*, question: str, reference: str, candidate: str) -> list[dict]:
    """The Table 17 prompt for one answer: instruction, four demonstrations, the new item."""
    shots = [f"{_item(question=e['question'], reference=e['reference'], candidate=e['candidate'])} "
             f"{e['output']}\nRating: {e['rating']}" for e in LAVE_EXAMPLES]
    shots.append(_item(question=question, reference=reference, candidate=candidate))
    return [{"role": "system", "content": LAVE_INSTRUCTION}, {"role": "user", "content": "\n\n".join(shots)}]


# "Rating: 3", "**Rating:** 3", "rating : 2" ...; decimals/negatives are captured so they count as out of range
_RATING = re.compile(r"\brating[\s*_]*:[\s*_]*(-?\d+(?:\.\d+)?)", re.IGNORECASE)


def parse_rating(text: str) -> int | None:
    """The last ``Rating: X`` in a LAVE reply (Table 4) if X is 1, 2 or 3, else None."""
    found = _RATING.findall(text or "")
    if not found or found[-1] not in {"1", "2", "3"}:
        return None
    return int(found[-1])


def lave_score(rating: int) -> float:
    """LAVE's score in [0, 1] from a 1-3 rating: ``(rating - 1) / 2`` (Table 4)."""
    return (rating - 1) / 2


def lave(items: pd.DataFrame, *, judge: CachedJudge, progress: bool = True) -> pd.DataFrame:
    """Rate each candidate answer against its reference with LAVE (VizWiz-LF Table 4 LAVE column).

    ``items`` has columns ``question``, ``reference``, ``candidate`` (other columns are
    kept). Adds ``rationale`` (the reply), ``rating`` (Int64, NA when unparseable),
    ``score`` (NaN when unparseable) and ``status`` ("ok" | "unparseable").
    """
    missing = {"question", "reference", "candidate"} - set(items.columns)
    if missing:
        raise ValueError(f"lave: items lack columns {sorted(missing)}")
    replies, ratings = [], []
    rows = items[["question", "reference", "candidate"]].itertuples(index=False)
    for row in tqdm(rows, total=len(items), desc="LAVE", disable=not progress):
        text = judge.complete(lave_messages(question=str(row.question), reference=str(row.reference),
                                            candidate=str(row.candidate)))
        replies.append(text)
        ratings.append(parse_rating(text))
    out = items.copy()
    out["rationale"] = replies
    out["rating"] = pd.array(ratings, dtype="Int64")
    out["score"] = np.array([math.nan if r is None else lave_score(r) for r in ratings], dtype="float64")
    out["status"] = ["unparseable" if r is None else "ok" for r in ratings]
    unparseable = sum(r is None for r in ratings)
    print(f"{judge.summary()}; {unparseable} of {len(ratings)} replies unparseable")
    return out
