"""The cached LLM judge of VizWiz-LF Table 4 (LAVE column): replies stored on disk, so reruns cost no calls.

:class:`CachedJudge` wraps a :class:`~vqalib.core.judge.backends.JudgeBackend` with a
content-addressed JSON cache (one file per request, named by the SHA-256 of the canonical request
key: backend, endpoint, model, prompt variant, messages, generation settings) under
``cache_root("judge")``; :func:`judge_from_env` builds the judge the ``VQALIB_JUDGE_*``
variables configure.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Callable

from vqalib.core import config
from vqalib.core.io import cache_root, write_atomic
from vqalib.core.judge.backends import JudgeBackend, OpenAIChatBackend, TransformersBackend
from vqalib.core.judge.settings import BASE_URL_ENV, HF_MODEL_ENV, MODEL_ENV


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
        """What identifies a reply in the cache (written beside it, without credentials).

        Parameters
        ----------
        messages : list of dict
            The chat messages sent.
        temperature : float
            The sampling temperature.
        max_tokens : int
            The reply's token limit.
        prompt : str, optional
            The prompt variant's name (e.g. ``vizwiz-lf``).

        Returns
        -------
        dict
            ``backend``, ``endpoint`` (None for a backend without one), ``model``, ``prompt``, ``messages``,
            ``temperature``, ``max_tokens`` and ``seed`` (None for a backend without one).
        """
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
        Backend failures (:class:`JudgeError`) propagate and leave the cache untouched.

        Parameters
        ----------
        messages : list of dict
            Chat messages, each with ``role`` and ``content``.
        temperature : float, default 0.0
            Sampling temperature, passed to the backend.
        max_tokens : int, default 256
            The reply's token limit, passed to the backend.
        prompt : str, optional
            The prompt variant's name, part of the cache key only.
        accept : callable, optional
            ``accept(text) -> bool``: whether a reply may be served from or written to the cache; default any
            non-empty reply.

        Returns
        -------
        str
            The reply, cached or new (a new one may be empty or rejected by ``accept``: returned, not stored).
        """
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
        config.model_call(f"LLM judge {self.backend.name}:{self.backend.model}")
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


def judge_from_env(*, cache_dir: str | Path | None = None) -> CachedJudge | None:
    """The cached judge the environment configures for Table 4, or None (see :data:`ENABLE_HINT`).

    Parameters
    ----------
    cache_dir : str or Path, optional
        Where replies are stored; default ``cache_root("judge")`` (:func:`vqalib.core.io.cache_root`).

    Returns
    -------
    CachedJudge or None
        An :class:`OpenAIChatBackend` when ``VQALIB_JUDGE_BASE_URL`` and ``VQALIB_JUDGE_MODEL`` are
        set, else a :class:`TransformersBackend` when ``VQALIB_JUDGE_HF_MODEL`` is, wrapped in the
        cache; None when neither is configured.
    """
    if config.get(BASE_URL_ENV) and config.get(MODEL_ENV):
        backend: JudgeBackend = OpenAIChatBackend.from_env()
    elif config.get(HF_MODEL_ENV):
        backend = TransformersBackend.from_env()
    else:
        return None
    return CachedJudge(backend, cache_dir=cache_dir if cache_dir is not None else cache_root("judge"))
