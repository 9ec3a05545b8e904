"""The LLM judge: LAVE ratings of answers against a reference (VizWiz-LF §5, Table 4 LAVE column).

LAVE (Mañas et al. 2023, AAAI 2024; reference implementation github.com/mair-lab/lave) asks a
language model to rate a candidate answer against reference answers on a 1-3 scale. Two
prompts can be chosen (``prompt=`` / ``VQALIB_JUDGE_PROMPT``):

* ``vizwiz-lf`` (default): VizWiz-LF's adaptation, Appendix A.3.1, Table 17 — one expert
  reference, four demonstrations, replies end with ``Rating: X``. This is the prompt behind
  the paper's LAVE column.
* ``lave-reference``: the reference implementation's prompt (``LaveBase.build_prompt`` of
  mair-lab/lave at :data:`vqalib.datasets.LAVE_COMMIT`): its task definition with the yes/no
  rule, its first eight demonstrations (the yes/no set when the most common reference is
  "yes" or "no"), demonstrations ending ``So rating=X``. The demonstrations are read from the
  upstream files that the data registry fetches and hash-checks (``data/raw/lave/``); the
  repository declares no licence, so they are not copied into the project.

Replies are read by :func:`parse_lave_reply`; one that carries no single 1-3 rating is
handled by the ``unparseable`` policy (``VQALIB_JUDGE_UNPARSEABLE``): ``drop`` (default; left
out of the mean) or ``reference`` (scored as rating 2, as mair-lab/lave does).

The model is reached through a :class:`JudgeBackend`: an OpenAI-compatible HTTP server (hosted
APIs, vLLM, Ollama's ``/v1``) or a local ``transformers`` causal LM. :class:`CachedJudge` stores
replies on disk, keyed by endpoint, model, prompt variant, messages and generation settings,
so reruns of the notebooks cost no model calls.

Configuration (README, "Models, caches and runs"), read in one place (:func:`setting`):
``VQALIB_JUDGE_BASE_URL`` + ``VQALIB_JUDGE_MODEL`` (+ ``VQALIB_JUDGE_API_KEY`` or
``OPENAI_API_KEY``, ``VQALIB_JUDGE_TIMEOUT``, ``VQALIB_JUDGE_DEADLINE``,
``VQALIB_JUDGE_MAX_RETRY_AFTER``), or ``VQALIB_JUDGE_HF_MODEL`` (+ ``VQALIB_JUDGE_DEVICE``);
``VQALIB_JUDGE_PROMPT``, ``VQALIB_JUDGE_UNPARSEABLE``; cache in ``VQALIB_CACHE_DIR``.
"""

from __future__ import annotations

import collections
import email.utils
import hashlib
import json
import math
import re
import threading
import time
import urllib.parse
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, NamedTuple, Protocol, Sequence, runtime_checkable

import numpy as np
import pandas as pd
import requests
import urllib3
from tqdm import tqdm

from vqalib import datasets
from vqalib.datasets import cache_root, write_atomic
from vqalib import config

BASE_URL_ENV = "VQALIB_JUDGE_BASE_URL"
MODEL_ENV = "VQALIB_JUDGE_MODEL"
API_KEY_ENV = "VQALIB_JUDGE_API_KEY"
TIMEOUT_ENV = "VQALIB_JUDGE_TIMEOUT"
DEADLINE_ENV = "VQALIB_JUDGE_DEADLINE"
MAX_RETRY_AFTER_ENV = "VQALIB_JUDGE_MAX_RETRY_AFTER"
HF_MODEL_ENV = "VQALIB_JUDGE_HF_MODEL"
DEVICE_ENV = "VQALIB_JUDGE_DEVICE"
PROMPT_ENV = "VQALIB_JUDGE_PROMPT"
UNPARSEABLE_ENV = "VQALIB_JUDGE_UNPARSEABLE"

ENABLE_HINT = (
    f"set {BASE_URL_ENV} and {MODEL_ENV} (OpenAI-compatible server, key in {API_KEY_ENV}) "
    f"or {HF_MODEL_ENV} (local transformers model) to run the LLM judge"
)

DEFAULT_TIMEOUT = 60.0  # seconds one socket read (or the connect) may block
DEFAULT_DEADLINE = 300.0  # seconds one judge call may take in all, attempts and waits included
MAX_RETRY_AFTER = 60.0  # longest wait a server's Retry-After (or the backoff) can impose between attempts

# VizWiz-LF Table 17 (the paper's adaptation) or mair-lab/lave's own prompt
LAVE_PROMPTS = ("vizwiz-lf", "lave-reference")
DEFAULT_PROMPT = "vizwiz-lf"
# drop: an unparseable reply is left out of the mean (the behaviour before this choice existed;
# VizWiz-LF does not say, and its prompt demands "Rating: X"); reference: scored as rating 2
UNPARSEABLE_POLICIES = ("drop", "reference")
DEFAULT_UNPARSEABLE = "drop"
REFERENCE_FALLBACK_RATING = 2  # lave_ft5.py LaveFT5.postprocess: any last token not in 1/2/3 becomes '2'

RETRY_STATUSES = (429, 500, 502, 503, 504)
# the endpoint, key or model is wrong: every other item would fail the same way
FATAL_STATUSES = (401, 403, 404)


def _positive_float(value: str) -> float:
    number = float(value)
    if not math.isfinite(number) or number <= 0:
        raise ValueError("must be a positive number of seconds")
    return number


def _nonnegative_float(value: str) -> float:
    number = float(value)
    if not math.isfinite(number) or number < 0:
        raise ValueError("must be zero or a positive number of seconds")
    return number


def _choice(choices: tuple[str, ...]) -> Callable[[str], str]:
    def parse(value: str) -> str:
        if value not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}")
        return value
    return parse


# every judge setting with an environment default: (variable, default, parser)
SETTINGS: dict[str, tuple[str, Any, Callable[[str], Any]]] = {
    "timeout": (TIMEOUT_ENV, DEFAULT_TIMEOUT, _positive_float),
    "deadline": (DEADLINE_ENV, DEFAULT_DEADLINE, _positive_float),
    "max_retry_after": (MAX_RETRY_AFTER_ENV, MAX_RETRY_AFTER, _nonnegative_float),
    "prompt": (PROMPT_ENV, DEFAULT_PROMPT, _choice(LAVE_PROMPTS)),
    "unparseable": (UNPARSEABLE_ENV, DEFAULT_UNPARSEABLE, _choice(UNPARSEABLE_POLICIES)),
}


def setting(name: str) -> Any:
    """One setting of the Table 4 LAVE judge from its environment variable, else its default (README table).

    The single place that reads the judge's optional environment variables; a bad value is a
    ``ValueError`` naming the variable, its value and what it accepts.
    """
    variable, default, parse = SETTINGS[name]
    raw = config.get(variable)
    if raw is None:
        return default
    try:
        return parse(raw)
    except ValueError as error:
        raise ValueError(f"{variable}={raw!r}: {error}") from None


class JudgeError(RuntimeError):
    """The judge model could not be reached or refused the request.

    ``status`` names the failure as LAVE's per-item ``judge_status`` does (``timeout``,
    ``connection error``, ``non-json``, ``http <code>``); ``fatal`` marks failures that every
    further request would meet too (wrong key, URL or model), which end a batch.
    """

    def __init__(self, message: str, *, status: str = "error", fatal: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.fatal = fatal


@runtime_checkable
class JudgeBackend(Protocol):
    """A chat model that the LAVE judge (Table 4) sends its prompts to."""

    name: str
    model: str

    def complete(self, messages: list[dict], *, temperature: float = 0.0, max_tokens: int = 256) -> str:
        """The assistant's reply text to ``messages``."""
        ...


def retry_wait(*, attempt: int, backoff_factor: float, retry_after: str | None = None,
               max_retry_after: float = MAX_RETRY_AFTER, now: datetime | None = None) -> float:
    """Seconds to wait before retrying a failed judge call (Table 4 LAVE requests).

    The server's ``Retry-After`` (delta seconds or an HTTP date) when it sent a valid one,
    else exponential backoff ``backoff_factor * 2**attempt`` (``attempt`` counts from 0);
    either is capped at ``max_retry_after``, because a server may ask for hours (21600 s seen).
    """
    wait = backoff_factor * (2 ** attempt)
    if retry_after is not None and retry_after.strip():
        value = retry_after.strip()
        if re.fullmatch(r"\d+(?:\.\d+)?", value):
            wait = float(value)
        else:
            try:
                when = email.utils.parsedate_to_datetime(value)
            except (TypeError, ValueError):
                when = None  # not a date either: keep the backoff
            if when is not None:
                if when.tzinfo is None:
                    when = when.replace(tzinfo=timezone.utc)
                wait = (when - (now or datetime.now(timezone.utc))).total_seconds()
    return min(max(wait, 0.0), max_retry_after)


def _without_userinfo(url: str) -> str:
    """``url`` without ``user:password@`` (it is written into cache files)."""
    parts = urllib.parse.urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


class OpenAIChatBackend:
    """An OpenAI-compatible ``/chat/completions`` endpoint as LAVE judge (Table 4).

    ``timeout`` bounds each socket read (and the connect); ``deadline`` bounds the whole call
    — every attempt, the reading of a body however slowly it trickles, and the waits between
    attempts. Timeouts, connection errors and the statuses in :data:`RETRY_STATUSES` are retried
    up to ``max_retries`` times after :func:`retry_wait` (``Retry-After`` capped at
    ``max_retry_after``); a retry that could not finish before the deadline is not started.
    ``sleep`` and ``clock`` are injectable so tests need not wait.
    """

    name = "openai"

    def __init__(self, *, base_url: str, model: str, api_key: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT, deadline: float = DEFAULT_DEADLINE, max_retries: int = 4,
                 backoff_factor: float = 0.5, max_retry_after: float = MAX_RETRY_AFTER,
                 sleep: Callable[[float], Any] = time.sleep, clock: Callable[[], float] = time.monotonic) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.timeout = timeout
        self.deadline = deadline
        self.max_retries = max_retries
        self.backoff_factor = backoff_factor
        self.max_retry_after = max_retry_after
        self.sleep = sleep
        self.clock = clock
        self.session = requests.Session()
        if api_key:
            self.session.headers["Authorization"] = f"Bearer {api_key}"

    @property
    def endpoint(self) -> str:
        """The base URL the replies come from (part of the cache key), without credentials."""
        return _without_userinfo(self.base_url)

    @classmethod
    def from_env(cls) -> OpenAIChatBackend:
        """The backend named by ``VQALIB_JUDGE_BASE_URL``/``_MODEL``/``_API_KEY``/``_TIMEOUT``/
        ``_DEADLINE``/``_MAX_RETRY_AFTER``."""
        base_url, model = config.get(BASE_URL_ENV), config.get(MODEL_ENV)
        if not base_url or not model:
            raise JudgeError(f"{BASE_URL_ENV} and {MODEL_ENV} must both be set")
        api_key = config.get(API_KEY_ENV) or config.get("OPENAI_API_KEY")
        return cls(base_url=base_url, model=model, api_key=api_key, timeout=setting("timeout"),
                   deadline=setting("deadline"), max_retry_after=setting("max_retry_after"))

    def _attempt(self, url: str, body: bytes, *, remaining: float) -> tuple[int, Any, bytes]:
        """One POST, cut off after ``remaining`` seconds however the server behaves.

        requests' timeout is per socket read, so a server trickling bytes never trips it: the
        request runs in a worker thread that the caller stops waiting for at the deadline (the
        worker then leaves at its next chunk or read timeout). Returns (status, headers, body).
        """
        box: dict[str, Any] = {}
        done, cancel = threading.Event(), threading.Event()
        read_timeout = min(self.timeout, remaining)

        def work() -> None:
            try:
                with self.session.post(url, data=body, headers={"Content-Type": "application/json"},
                                       timeout=(read_timeout, read_timeout), stream=True) as response:
                    chunks = []
                    while not cancel.is_set():
                        chunk = response.raw.read1(65536, decode_content=True)
                        if not chunk:
                            break
                        chunks.append(chunk)
                    box["result"] = (response.status_code, response.headers, b"".join(chunks))
            except Exception as error:  # noqa: BLE001 - handed to the caller
                box["error"] = error
            finally:
                done.set()

        threading.Thread(target=work, name="judge-request", daemon=True).start()
        if not done.wait(remaining):
            cancel.set()
            raise JudgeError(f"no complete reply within the deadline of {self.deadline:g} s", status="timeout")
        error = box.get("error")
        if error is None:
            return box["result"]
        if isinstance(error, (requests.Timeout, urllib3.exceptions.TimeoutError, TimeoutError)):
            raise JudgeError(f"timed out ({self.timeout:g} s per read): {error}", status="timeout") from error
        if isinstance(error, (requests.RequestException, urllib3.exceptions.HTTPError, OSError)):
            raise JudgeError(f"connection failed: {error}", status="connection error") from error
        raise error

    def _reply_text(self, data: bytes, *, url: str) -> str:
        text = data.decode("utf-8", errors="replace").strip()
        if not text:
            return ""  # empty body: the caller counts an empty reply
        try:
            payload = json.loads(text)
        except ValueError:
            raise JudgeError(f"judge reply from {url} (model {self.model}) is not JSON: {text[:120]!r}",
                             status="non-json") from None
        try:
            content = payload["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            return ""  # JSON but no completion text: counted as empty by the caller
        return content if isinstance(content, str) else ""

    def complete(self, messages: list[dict], *, temperature: float = 0.0, max_tokens: int = 256) -> str:
        """One chat completion (a LAVE rationale and rating); "" when the reply has no text.

        Raises :class:`JudgeError` (with ``status``) when no reply arrives before the deadline,
        the server keeps failing, answers with a client error, or returns a body that is not JSON.
        """
        url = f"{self.base_url}/chat/completions"
        body = json.dumps({"model": self.model, "messages": messages, "temperature": temperature,
                           "max_tokens": max_tokens}).encode("utf-8")
        deadline_at = self.clock() + self.deadline
        where = f"judge request to {url} (model {self.model})"
        attempt = 0
        while True:
            remaining = deadline_at - self.clock()
            if remaining <= 0:
                raise JudgeError(f"{where}: no reply within the deadline of {self.deadline:g} s", status="timeout")
            retry_after = None
            try:
                code, headers, data = self._attempt(url, body, remaining=remaining)
            except JudgeError as error:
                if error.status == "timeout" and self.clock() >= deadline_at:
                    raise JudgeError(f"{where}: {error}", status="timeout") from error
                failure = JudgeError(f"{where} failed after {attempt + 1} attempt(s): {error}", status=error.status)
            else:
                if 200 <= code < 300:
                    return self._reply_text(data, url=url)  # a non-JSON body is not retried: counted per item
                snippet = data.decode("utf-8", errors="replace")[:200]
                failure = JudgeError(f"{where} failed after {attempt + 1} attempt(s): HTTP {code}: {snippet}",
                                     status=f"http {code}", fatal=code in FATAL_STATUSES)
                if code not in RETRY_STATUSES:
                    raise failure
                retry_after = headers.get("Retry-After")
            if attempt >= self.max_retries:
                raise failure
            wait = retry_wait(attempt=attempt, backoff_factor=self.backoff_factor, retry_after=retry_after,
                              max_retry_after=self.max_retry_after)
            if self.clock() + wait >= deadline_at:
                raise JudgeError(f"{failure}; not retried: the wait of {wait:g} s would pass the deadline of "
                                 f"{self.deadline:g} s", status=failure.status)
            self.sleep(wait)
            attempt += 1


class TransformersBackend:
    """A local ``transformers`` causal LM as LAVE judge (Table 4), e.g. an open-weights model.

    Generation runs in this process, so the HTTP deadline does not apply.
    """

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
        model = config.get(HF_MODEL_ENV)
        if not model:
            raise JudgeError(f"{HF_MODEL_ENV} must be set")
        return cls(model=model, device=config.get(DEVICE_ENV) or "cpu")

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
    """A backend whose replies are cached on disk, so reruns of Table 4 make no calls.

    The key holds the backend, its endpoint (base URL; another server with the same model name
    is another judge), the model, the prompt variant, the messages and the generation settings
    (temperature, max_tokens, the backend's seed). Empty replies are never stored, nor replies
    that ``accept`` rejects (LAVE: replies without a readable rating), so a later run asks again;
    a stored reply that ``accept`` rejects is not served either.
    """

    def __init__(self, backend: JudgeBackend, *, cache_dir: str | Path) -> None:
        self.backend = backend
        self.cache_dir = Path(cache_dir)
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        self.calls = 0
        self.cache_hits = 0

    def request_key(self, messages: list[dict], *, temperature: float, max_tokens: int,
                    prompt: str | None = None) -> dict:
        """What identifies a reply in the cache (written beside it, without credentials)."""
        return {"backend": self.backend.name, "endpoint": getattr(self.backend, "endpoint", None),
                "model": self.backend.model, "prompt": prompt, "messages": messages, "temperature": temperature,
                "max_tokens": max_tokens, "seed": getattr(self.backend, "seed", None)}

    def _path(self, request: dict) -> Path:
        canonical = json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return self.cache_dir / f"{hashlib.sha256(canonical.encode('utf-8')).hexdigest()}.json"

    def complete(self, messages: list[dict], *, temperature: float = 0.0, max_tokens: int = 256,
                 prompt: str | None = None, accept: Callable[[str], bool] | None = None) -> str:
        """The backend's reply to ``messages``, from the cache when this exact request was answered
        before with a reply ``accept`` takes; ``prompt`` names the prompt variant for the key.
        Backend failures (:class:`JudgeError`) propagate and leave the cache untouched."""
        request = self.request_key(messages, temperature=temperature, max_tokens=max_tokens, prompt=prompt)
        path = self._path(request)
        try:
            text = json.loads(path.read_text(encoding="utf-8"))["text"]
            if isinstance(text, str) and text and (accept is None or accept(text)):
                self.cache_hits += 1
                return text
        except (OSError, ValueError, KeyError, TypeError):
            pass  # absent or damaged: ask the model again
        self.calls += 1
        text = self.backend.complete(messages, temperature=temperature, max_tokens=max_tokens)
        if text and (accept is None or accept(text)):
            write_atomic(path, json.dumps({"request": request, "text": text}, ensure_ascii=False).encode("utf-8"))
        return text

    def stats(self) -> dict[str, int]:
        """Backend calls (failed ones included) and cache hits so far (reported under Table 4)."""
        return {"calls": self.calls, "cache_hits": self.cache_hits}

    def summary(self) -> str:
        """One line such as ``judge openai:gpt-4o: 120 calls, 240 cache hits``."""
        return f"judge {self.backend.name}:{self.backend.model}: {self.calls} calls, {self.cache_hits} cache hits"


def default_cache_dir() -> Path:
    """``$VQALIB_CACHE_DIR/judge`` or ``<project>/.cache/vqalib/judge``."""
    return cache_root() / "judge"


def judge_from_env(*, cache_dir: str | Path | None = None) -> CachedJudge | None:
    """The cached judge the environment configures for Table 4, or None (see :data:`ENABLE_HINT`)."""
    if config.get(BASE_URL_ENV) and config.get(MODEL_ENV):
        backend: JudgeBackend = OpenAIChatBackend.from_env()
    elif config.get(HF_MODEL_ENV):
        backend = TransformersBackend.from_env()
    else:
        return None
    return CachedJudge(backend, cache_dir=cache_dir if cache_dir is not None else default_cache_dir())


# --- prompts ----------------------------------------------------------------------------------

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

# mair-lab/lave lave.py, LaveBase.task_definition with use_caption=False, rationalize=True (the defaults),
# commit 253640bfb7c328a507cb8bd0f34e17146ec3161a; Mañas et al., "Improving Automatic VQA Evaluation Using
# Large Language Models", AAAI 2024 (arXiv:2310.02567)
LAVE_REFERENCE_INSTRUCTION = (
    "You are given a question, a set of gold-standard reference answers written by experts, and a candidate "
    "answer. Please rate the accuracy of the candidate answer for the question considering the reference answers. "
    "Use a scale of 1-3, with 1 indicating an incorrect or irrelevant answer, 2 indicating an ambiguous or "
    "incomplete answer, and 3 indicating a correct answer. Give the rationale before rating."
    "\n\nTHIS IS VERY IMPORTANT: A binary question should only be answered with 'yes' or 'no', otherwise the "
    "candidate answer is incorrect (rating=1)."
)
LAVE_REFERENCE_SHOTS = 8  # LaveBase(num_shots=8)
LAVE_DEMO_KEYS = {"general": "lave/lave_demos.json", "binary": "lave/lave_demos_binary.json"}
_DEMO_FIELDS = {"question": str, "references": list, "prediction": str, "output": str, "explanation": str}


@dataclass(frozen=True)
class LaveDemos:
    """The reference implementation's demonstrations: the general set and the yes/no set."""

    general: tuple[dict, ...]
    binary: tuple[dict, ...]


def _checked_demos(path: Path, records: object) -> tuple[dict, ...]:
    if not isinstance(records, list) or not records:
        raise datasets.DataFormatError(f"{path}: expected a non-empty JSON list of demonstrations")
    for number, record in enumerate(records):
        if not isinstance(record, dict):
            raise datasets.DataFormatError(f"{path}: record {number} is not an object")
        for field, kind in _DEMO_FIELDS.items():
            if not isinstance(record.get(field), kind):
                raise datasets.DataFormatError(f"{path}: record {number}: field {field!r} missing or not a "
                                               f"{kind.__name__}")
        if record["output"] not in ("1", "2", "3") or not all(isinstance(r, str) for r in record["references"]):
            raise datasets.DataFormatError(f"{path}: record {number}: output must be '1', '2' or '3' and "
                                           "references strings")
    return tuple(records)


def load_lave_demos(*, data_dir: Path | None = None) -> LaveDemos:
    """mair-lab/lave's demonstrations for the ``lave-reference`` prompt (Table 4 LAVE, reference variant).

    Read from ``data/raw/lave/`` (or ``data_dir``), hash-checked against the data registry;
    ``make data`` (or ``VQALIB_DATA_MIRROR``) puts them there.
    """
    sets = {}
    for kind, key in LAVE_DEMO_KEYS.items():
        path = datasets.verified_path(key, data_dir=data_dir)
        sets[kind] = _checked_demos(path, datasets.read_json(path))
    return LaveDemos(**sets)


def _item(*, question: str, reference: str, candidate: str) -> str:
    return f"Question: '{question}'\nReference answer: '{reference}'\nCandidate answer: '{candidate}'\nOutput:"


def _reference_block(*, question: str, references: str, candidate: str, output: str) -> str:
    # lave.py LaveBase.example_template (no caption)
    return f"Question: '{question}'\nReference answers: {references}\nCandidate answer: '{candidate}'\nOutput: {output}"


def filter_references(references: Sequence[str], *, p: float = 0.25) -> list[str]:
    """Drop rare references as mair-lab/lave does (Table 4 LAVE, ``lave-reference`` prompt): an answer given at most
    ``p`` times as often as the most common one is an outlier (a single reference is kept)."""
    counts = collections.Counter(references)
    most = max(counts.values())
    outliers = {answer for answer, n in counts.items() if n / most <= p}
    return [r for r in references if r not in outliers]


def format_references(references: Sequence[str], *, filter_outliers: bool) -> str:
    """``'a', 'b'``: the references sorted and quoted, as mair-lab/lave's prompt lists them (Table 4 LAVE)."""
    kept = filter_references(references) if filter_outliers else list(references)
    return ", ".join(f"'{r}'" for r in sorted(kept))


def is_binary_question(references: Sequence[str]) -> bool:
    """mair-lab/lave's yes/no rule (Table 4 LAVE, ``lave-reference`` prompt): the most common reference,
    lower-cased without a final '.', is "yes" or "no" (then the yes/no demonstrations are shown)."""
    return collections.Counter(references).most_common(1)[0][0].lower().rstrip(".") in ("yes", "no")


def _references(reference: str | Sequence[str]) -> list[str]:
    refs = [reference] if isinstance(reference, str) else [str(r) for r in reference]
    if not refs:
        raise ValueError("lave-reference prompt: an item has no reference answer")
    return refs


def lave_messages(*, question: str, reference: str | Sequence[str], candidate: str, prompt: str = DEFAULT_PROMPT,
                  demos: LaveDemos | None = None) -> list[dict]:
    """The LAVE chat messages for one answer (Table 4 LAVE column).

    ``vizwiz-lf``: the Table 17 prompt — the instruction as system message, four demonstrations
    and the item as user message; one reference. ``lave-reference``: mair-lab/lave's
    ``build_prompt`` text as one user message (instruction with the yes/no rule, the first
    eight demonstrations of ``demos`` — the yes/no set for a binary question — each ending
    ``So rating=X``, then the item); ``reference`` may be a list (filtered and sorted as the
    reference does). ``demos`` defaults to :func:`load_lave_demos`.
    """
    if prompt == "vizwiz-lf":
        if not isinstance(reference, str):
            raise ValueError("prompt vizwiz-lf takes one reference answer (VizWiz-LF Table 17); "
                             "use prompt lave-reference for several")
        shots = [f"{_item(question=e['question'], reference=e['reference'], candidate=e['candidate'])} "
                 f"{e['output']}\nRating: {e['rating']}" for e in LAVE_EXAMPLES]
        shots.append(_item(question=question, reference=reference, candidate=candidate))
        return [{"role": "system", "content": LAVE_INSTRUCTION}, {"role": "user", "content": "\n\n".join(shots)}]
    if prompt == "lave-reference":
        demos = demos if demos is not None else load_lave_demos()
        refs = _references(reference)
        chosen = (demos.binary if is_binary_question(refs) else demos.general)[:LAVE_REFERENCE_SHOTS]
        text = LAVE_REFERENCE_INSTRUCTION + "\n\n"
        for demo in chosen:
            text += _reference_block(question=demo["question"],
                                     references=format_references(demo["references"], filter_outliers=False),
                                     candidate=demo["prediction"],
                                     output=f"{demo['explanation']} So rating={demo['output']}") + "\n\n"
        text += _reference_block(question=question, references=format_references(refs, filter_outliers=True),
                                 candidate=candidate, output="")
        return [{"role": "user", "content": text.strip()}]
    raise ValueError(f"unknown LAVE prompt {prompt!r}: use one of {', '.join(LAVE_PROMPTS)}")


# --- reading a reply ----------------------------------------------------------------------------

# reasons a reply yields no rating (LAVE's judge_status reads "unparseable: <reason>")
REASON_EMPTY = "empty"
REASON_NO_RATING = "no rating"
REASON_RANGE = "range"  # "Rating: 1-3", "2 or 3": a span, not a rating
REASON_OUT_OF_RANGE = "out of range"  # 0, 4, 2.5, 4/5: not a rating on the 1-3 scale
REASON_CONFLICT = "conflicting ratings"  # several different ratings in one reply
PARSE_REASONS = (REASON_EMPTY, REASON_NO_RATING, REASON_RANGE, REASON_OUT_OF_RANGE, REASON_CONFLICT)

_WORDS = {"one": 1, "two": 2, "three": 3}
_MARK = r"[ \t*_`]*"  # spaces and Markdown emphasis around the parts of "**Rating:** 3"
_NUMBER = r"-?\d+(?:\.\d+)?"
_VALUE = rf"[\[(\"'“‘]?{_MARK}(?P<value>{_NUMBER}|one|two|three)\b"
_SPAN = r"\d+\s*(?:-|–|—|to)\s*\d+"
# a scale note between keyword and value: "Rating (1-3): 2", "Rating on a scale of 1-3: 3", "Score (out of 3): 3"
_SCALE = (rf"(?:[(\[]\s*(?:(?:on\s+)?(?:a\s+)?(?:scale\s+)?(?:of\s+|from\s+)?{_SPAN}|out\s+of\s+\d+)\s*[)\]]"
          rf"|(?:on\s+)?(?:a\s+)?scale\s+(?:of\s+|from\s+)?{_SPAN})")
_SEPARATOR = r"(?:[:=：]+|[-–—]|\bis\b|\bof\b|\b(?:would|should|will)\s+be\b)"
_RATING_PATTERNS = (
    # "Rating: 3", "So rating=3", "Rating = 3", "Rating - 2", "**Score:** 3", "rating of 2", "Rating (1-3): 2"
    re.compile(rf"\b(?:rating|score)\b{_MARK}(?:{_SCALE}{_MARK})?{_SEPARATOR}\s*{_MARK}{_VALUE}", re.I),
    # "Rating 3" without separator: only a number that ends the phrase
    re.compile(rf"\brating\b{_MARK}(?P<value>{_NUMBER})(?=[ \t*_`]*(?:$|[.!;,)\]\n]))", re.I | re.M),
    # "I would rate it a 2", "I give this answer a 3"
    re.compile(rf"\b(?:rate[sd]?|give[s]?)\s+(?:it|this(?:\s+(?:candidate\s+)?answer)?|the\s+(?:candidate\s+)?"
               rf"answer|the\s+candidate)\s+(?:as\s+)?(?:an?\s+)?{_VALUE}", re.I),
)
# what follows a value and makes it a span or a score on another scale
_SPAN_AFTER = re.compile(r"\s*(?:-|–|—|\bto\b|\bor\b)\s*(?:\d|one\b|two\b|three\b)", re.I)
_DENOMINATOR_AFTER = re.compile(r"\s*(?:/|\bout\s+of\b)\s*(\d+)", re.I)
# a bare rating that ends the reply: on a line of its own ("...\n3", "**3**", "Output: 3") or after a
# sentence ("... is correct. 3"), as the reference reads the last generated token
_BARE_LINE = re.compile(r"^[\s*_`#>\[(\"'“‘]*(?:output\s*:[\s*_`]*)?(?P<value>[1-3])[\s*_`\])\"'”’.!]*$", re.I)
_BARE_AFTER_SENTENCE = re.compile(r"[.!?][ \t*_`]+(?P<value>[1-3])[\s*_`.!]*$")
# a model continuing the few-shot pattern starts a new demonstration: "\nQuestion: ..."
_ECHOED_ITEM = re.compile(r"\n[ \t*_`]*Question\s*:", re.I)


class ParsedRating(NamedTuple):
    """A LAVE reply read: the 1-3 rating, or None and the reason (one of :data:`PARSE_REASONS`)."""

    rating: int | None
    reason: str | None


def _ratings_in(text: str) -> tuple[list[int], set[str]]:
    """Every rating the patterns find in ``text`` and the problems met (span, out of range)."""
    ratings: list[int] = []
    problems: set[str] = set()
    for pattern in _RATING_PATTERNS:
        for match in pattern.finditer(text):
            raw = match.group("value").lower()
            rest = text[match.end():]
            if _SPAN_AFTER.match(rest):
                problems.add(REASON_RANGE)
                continue
            denominator = _DENOMINATOR_AFTER.match(rest)
            value = _WORDS[raw] if raw in _WORDS else float(raw)
            if value not in (1, 2, 3) or (denominator and denominator.group(1) != "3"):
                problems.add(REASON_OUT_OF_RANGE)
                continue
            ratings.append(int(value))
    stripped = text.rstrip()
    last_line = stripped.rsplit("\n", 1)[-1]
    bare = _BARE_LINE.match(last_line) or _BARE_AFTER_SENTENCE.search(stripped)
    if bare:
        ratings.append(int(bare.group("value")))
    return ratings, problems


def parse_lave_reply(text: str | None) -> ParsedRating:
    """Read the rating of a LAVE reply (Table 4 LAVE column); see the README's judge notes.

    Accepted: ``Rating: X`` in Markdown or not (``**Rating:** 3``, ``RATING:3``), the reference's
    ``So rating=X``, ``Rating = X``, ``Rating - X``, ``Rating is X``, ``rating of X``,
    ``Rating (1-3): X``, ``Rating on a scale of 1-3: X``, ``Score: X``, ``X/3`` and ``X out of 3``,
    bracketed or quoted values, the words one/two/three, ``I would rate it a X`` / ``give it a X``,
    and a bare ``X`` ending the reply (own line, or after a sentence). The same rating repeated is
    fine; a reply that goes on with a new ``Question:`` demonstration is read up to it when a
    rating comes before it. Rejected, with the reason: no text (``empty``), nothing rating-like
    (``no rating``), a span such as ``1-3`` or ``2 or 3`` (``range``), a number off the 1-3 scale
    or a ``/5`` scale (``out of range``), several different ratings (``conflicting ratings``).
    """
    if text is None or not text.strip():
        return ParsedRating(None, REASON_EMPTY)
    echo = _ECHOED_ITEM.search(text)
    if echo:
        head_ratings, head_problems = _ratings_in(text[:echo.start()])
        if head_ratings or head_problems:
            text = text[:echo.start()]  # the rest is an invented further demonstration
    ratings, problems = _ratings_in(text)
    for reason in (REASON_RANGE, REASON_OUT_OF_RANGE):
        if reason in problems:
            return ParsedRating(None, reason)
    if len(set(ratings)) > 1:
        return ParsedRating(None, REASON_CONFLICT)
    if ratings:
        return ParsedRating(ratings[0], None)
    return ParsedRating(None, REASON_NO_RATING)


def parse_rating(text: str | None) -> int | None:
    """The 1-3 rating of a LAVE reply (Table 4), or None; :func:`parse_lave_reply` says why not."""
    return parse_lave_reply(text).rating


def _has_rating(text: str) -> bool:
    return parse_lave_reply(text).rating is not None


def lave_score(rating: int) -> float:
    """LAVE's score in [0, 1] from a 1-3 rating: ``(rating - 1) / 2`` (Table 4)."""
    return (rating - 1) / 2


# --- a batch ------------------------------------------------------------------------------------

def _describe(counts: collections.Counter) -> str:
    return ", ".join(f"{n} {status}" for status, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def lave(items: pd.DataFrame, *, judge: CachedJudge, prompt: str | None = None, unparseable: str | None = None,
         data_dir: Path | None = None, max_consecutive_failures: int | None = 10,
         progress: bool = True) -> pd.DataFrame:
    """Rate each candidate answer against its reference with LAVE (VizWiz-LF Table 4 LAVE column).

    ``items`` has columns ``question``, ``reference``, ``candidate`` (other columns are kept).
    ``prompt`` is ``vizwiz-lf`` or ``lave-reference`` (default ``VQALIB_JUDGE_PROMPT``, else
    ``vizwiz-lf``; ``data_dir`` locates the reference's demonstrations). ``unparseable`` is the
    policy for replies with text but no readable rating (default ``VQALIB_JUDGE_UNPARSEABLE``,
    else ``drop``): ``drop`` leaves their score missing, so they are out of the mean — the
    behaviour behind this compendium's numbers so far; VizWiz-LF does not say what it did, and
    its prompt demands ``Rating: X``. ``reference`` scores them as rating 2 (0.5), as mair-lab/lave
    does for any generation not ending in 1, 2 or 3, so means are comparable with published LAVE
    numbers. Under both, items whose call brought no text (empty reply, non-JSON body, timeout,
    connection or HTTP failure) keep a missing score: they are not the judge's verdict.

    Adds ``rationale`` (the reply, "" when none), ``rating`` (Int64: the rating read, NA when
    none), ``score`` (what enters the mean under the policy), ``status`` (``ok`` | ``unparseable``:
    ``ok`` exactly when a rating was read) and ``judge_status`` (``parsed``, ``unparseable:
    <reason>``, ``empty``, ``non-json``, ``timeout``, ``connection error``, ``http <code>``).
    ``.attrs["lave"]`` holds the prompt, the policy and the count of each ``judge_status``.
    A failure every further call would meet too (HTTP 401, 403, 404), or
    ``max_consecutive_failures`` failed calls in a row, ends the batch with :class:`JudgeError`;
    readable replies already obtained are cached, so a rerun resumes.
    """
    missing = {"question", "reference", "candidate"} - set(items.columns)
    if missing:
        raise ValueError(f"lave: items lack columns {sorted(missing)}")
    prompt = prompt if prompt is not None else setting("prompt")
    policy = unparseable if unparseable is not None else setting("unparseable")
    if prompt not in LAVE_PROMPTS:
        raise ValueError(f"unknown LAVE prompt {prompt!r}: use one of {', '.join(LAVE_PROMPTS)}")
    if policy not in UNPARSEABLE_POLICIES:
        raise ValueError(f"unknown unparseable policy {policy!r}: use one of {', '.join(UNPARSEABLE_POLICIES)}")
    demos = load_lave_demos(data_dir=data_dir) if prompt == "lave-reference" else None

    replies, ratings, statuses = [], [], []
    in_a_row = 0
    rows = items[["question", "reference", "candidate"]].itertuples(index=False)
    for number, row in enumerate(tqdm(rows, total=len(items), desc="LAVE", disable=not progress)):
        reference = row.reference if isinstance(row.reference, (list, tuple, np.ndarray)) else str(row.reference)
        try:
            messages = lave_messages(question=str(row.question), reference=reference, candidate=str(row.candidate),
                                     prompt=prompt, demos=demos)
        except ValueError as error:
            raise ValueError(f"LAVE item {number} (row {items.index[number]!r}): {error}") from None
        try:
            text = judge.complete(messages, prompt=prompt, accept=_has_rating)
        except JudgeError as error:
            if error.fatal:
                raise JudgeError(f"LAVE stopped at item {number} of {len(items)}: {error}",
                                 status=error.status, fatal=True) from error
            in_a_row += 1
            if max_consecutive_failures is not None and in_a_row >= max_consecutive_failures:
                raise JudgeError(f"LAVE stopped at item {number} of {len(items)}: {in_a_row} judge calls in a row "
                                 f"failed, the last with: {error}", status=error.status) from error
            replies.append("")
            ratings.append(None)
            statuses.append(error.status)
            continue
        in_a_row = 0
        parsed = parse_lave_reply(text)
        replies.append(text)
        ratings.append(parsed.rating)
        if parsed.rating is not None:
            statuses.append("parsed")
        elif parsed.reason == REASON_EMPTY:
            statuses.append("empty")
        else:
            statuses.append(f"unparseable: {parsed.reason}")

    fallback = lave_score(REFERENCE_FALLBACK_RATING) if policy == "reference" else math.nan
    scores = [lave_score(r) if r is not None else fallback if s.startswith("unparseable") else math.nan
              for r, s in zip(ratings, statuses)]
    out = items.copy()
    out["rationale"] = replies
    out["rating"] = pd.array(ratings, dtype="Int64")
    out["score"] = np.array(scores, dtype="float64")
    out["status"] = ["ok" if r is not None else "unparseable" for r in ratings]
    out["judge_status"] = statuses
    counts = collections.Counter(statuses)
    out.attrs["lave"] = {"prompt": prompt, "unparseable": policy, "counts": dict(counts)}
    unread = len(statuses) - counts["parsed"]
    effect = ("left out of the mean" if policy == "drop" else
              "replies without a rating scored 2 (reference); failed calls left out of the mean")
    detail = f" ({_describe(collections.Counter(s for s in statuses if s != 'parsed'))}; {effect})" if unread else ""
    print(f"{judge.summary()}; prompt {prompt}, unparseable {policy}; {counts['parsed']} of {len(statuses)} "
          f"replies rated, {unread} not{detail}")
    return out
