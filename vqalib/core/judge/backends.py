"""How the LLM judge (LAVE ratings) reaches its model: an OpenAI-compatible HTTP server with deadlines,
retries and a reply-size cap, or a local ``transformers`` causal LM."""

from __future__ import annotations

import email.utils
import json
import re
import threading
import time
import urllib.parse
from datetime import datetime, timezone
from typing import Any, Callable, Protocol, runtime_checkable

import requests
import urllib3

from vqalib.core import config
from vqalib.core.judge.settings import (API_KEY_ENV, BASE_URL_ENV, DEFAULT_DEADLINE, DEFAULT_MAX_REPLY_BYTES,
                                        DEFAULT_TIMEOUT, DEVICE_ENV, HF_MODEL_ENV, MAX_REPLY_BYTES_ENV,
                                        MAX_RETRY_AFTER, MODEL_ENV, setting)

RETRY_STATUSES = (429, 500, 502, 503, 504)
# the endpoint, key or model is wrong: every other item would fail the same way
FATAL_STATUSES = (401, 403, 404)
READ_SIZE = 65536  # bytes asked of the socket per read of a reply body


class JudgeError(RuntimeError):
    """The judge model could not be reached or refused the request; ``status`` is the per-item ``judge_status``,
    ``fatal`` marks failures every further request would meet."""

    def __init__(self, message: str, *, status: str = "error", fatal: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.fatal = fatal


@runtime_checkable
class JudgeBackend(Protocol):
    """A chat model that the LAVE judge sends its prompts to."""

    name: str
    model: str

    def complete(self, messages: list[dict], *, temperature: float = 0.0, max_tokens: int = 256) -> str:
        """The assistant's reply text to chat ``messages`` (each with ``role`` and ``content``); temperature 0 is
        greedy, ``max_tokens`` the longest reply."""
        ...


def retry_wait(*, attempt: int, backoff_factor: float, retry_after: str | None = None,
               max_retry_after: float = MAX_RETRY_AFTER, now: datetime | None = None) -> float:
    """Seconds (>= 0) to wait before retry ``attempt`` (from 0): a valid ``Retry-After`` (seconds or HTTP date),
    else exponential backoff; capped at ``max_retry_after`` because a server may ask for hours (21600 s seen)."""
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


def _declared_length(response: Any) -> int:
    """The reply's ``Content-Length`` as a number, -1 when absent or unreadable."""
    value = response.headers.get("Content-Length", "").strip()
    return int(value) if re.fullmatch(r"[0-9]+", value) else -1


def _error_message(error: Any) -> str:
    """The server's words from a reply's ``error`` member, cut to 300 characters."""
    if isinstance(error, dict):
        message = error.get("message")
        detail = ", ".join(f"{k} {error[k]}" for k in ("type", "code") if error.get(k) not in (None, ""))
        text = (str(message) if message not in (None, "") else json.dumps(error, ensure_ascii=False)) + (
            f" ({detail})" if detail else "")
    else:
        text = str(error)
    return repr(text[:300])


def _without_userinfo(url: str) -> str:
    """``url`` without ``user:password@`` (it is written into cache files)."""
    parts = urllib.parse.urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


class OpenAIChatBackend:
    """An OpenAI-compatible ``/chat/completions`` endpoint as LAVE judge: ``timeout`` bounds each socket read,
    ``deadline`` the whole call (attempts, slow bodies, retry waits); a 2xx body over ``max_reply_bytes`` raises
    ``too large`` without a retry; ``sleep``/``clock`` are for tests."""

    name = "openai"

    def __init__(self, *, base_url: str, model: str, api_key: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT, deadline: float = DEFAULT_DEADLINE, max_retries: int = 4,
                 backoff_factor: float = 0.5, max_retry_after: float = MAX_RETRY_AFTER,
                 max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES, sleep: Callable[[float], Any] = time.sleep,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.timeout = timeout
        self.deadline = deadline
        self.max_retries = max_retries
        self.backoff_factor = backoff_factor
        self.max_retry_after = max_retry_after
        self.max_reply_bytes = max_reply_bytes
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
        ``_DEADLINE``/``_MAX_RETRY_AFTER``/``_MAX_REPLY_BYTES``."""
        base_url, model = config.get(BASE_URL_ENV), config.get(MODEL_ENV)
        if not base_url or not model:
            raise JudgeError(f"{BASE_URL_ENV} and {MODEL_ENV} must both be set")
        api_key = config.get(API_KEY_ENV) or config.get("OPENAI_API_KEY")
        return cls(base_url=base_url, model=model, api_key=api_key, timeout=setting("timeout"),
                   deadline=setting("deadline"), max_retry_after=setting("max_retry_after"),
                   max_reply_bytes=setting("max_reply_bytes"))

    def _attempt(self, url: str, body: bytes, *, remaining: float) -> tuple[int, Any, bytes, bool]:
        """One POST in a worker thread, abandoned after ``remaining`` s (requests' timeout is per read only); reads
        at most ``max_reply_bytes`` and returns (status, headers, body, over the cap)."""
        box: dict[str, Any] = {}
        done, cancel = threading.Event(), threading.Event()
        read_timeout = min(self.timeout, remaining)
        cap = self.max_reply_bytes

        def work() -> None:
            try:
                with self.session.post(url, data=body, headers={"Content-Type": "application/json"},
                                       timeout=(read_timeout, read_timeout), stream=True) as response:
                    chunks, size = [], 0
                    # a 2xx body declared over the cap is refused before any of it is read
                    over = 200 <= response.status_code < 300 and _declared_length(response) > cap
                    while not over and not cancel.is_set():
                        chunk = response.raw.read1(READ_SIZE, decode_content=True)
                        if not chunk:
                            break
                        size += len(chunk)
                        over = size > cap
                        chunks.append(chunk)
                    # leaving the block closes the connection: the rest of a long body is never read
                    box["result"] = (response.status_code, response.headers, b"".join(chunks), over)
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
            content = None
        # some servers and proxies answer 200 with an error object in place of the completion
        if content is None and isinstance(payload, dict) and payload.get("error") not in (None, "", {}):
            raise JudgeError(f"judge reply from {url} (model {self.model}) is an error, not a completion: "
                             f"{_error_message(payload['error'])}", status="server error")
        return content if isinstance(content, str) else ""  # JSON without completion text: counted as empty

    def complete(self, messages: list[dict], *, temperature: float = 0.0, max_tokens: int = 256) -> str:
        """One chat completion (a LAVE rationale and rating); "" when the reply has no text. Raises
        :class:`JudgeError` with its ``status`` when no usable reply comes before the deadline."""
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
                code, headers, data, over = self._attempt(url, body, remaining=remaining)
            except JudgeError as error:
                if error.status == "timeout" and self.clock() >= deadline_at:
                    raise JudgeError(f"{where}: {error}", status="timeout") from error
                failure = JudgeError(f"{where} failed after {attempt + 1} attempt(s): {error}", status=error.status)
            else:
                if 200 <= code < 300:
                    if over:  # the same request would bring the same body: not retried, counted per item
                        raise JudgeError(f"{where}: the reply body is over the cap of {self.max_reply_bytes:,} "
                                         f"bytes ({MAX_REPLY_BYTES_ENV}); reading stopped there, nothing cached",
                                         status="too large")
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
    """A local ``transformers`` causal LM as LAVE judge; runs in this process, so no HTTP deadline applies."""

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
        """The prompt text for ``messages``, up to the reply: the chat template, else ``Role: content`` turns."""
        if getattr(self.tokenizer, "chat_template", None):
            return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        turns = [f"{m['role'].capitalize()}: {m['content']}" for m in messages]
        return "\n\n".join(turns + ["Assistant:"])

    def complete(self, messages: list[dict], *, temperature: float = 0.0, max_tokens: int = 256) -> str:
        """The new tokens of a reply to ``messages``, decoded and stripped: greedy at temperature 0, else seeded
        sampling (the global RNG is untouched)."""
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
