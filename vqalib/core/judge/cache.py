"""The cached LLM judge (LAVE ratings): replies stored on disk, one JSON file per request's SHA-256, so reruns
cost no calls. Entries are sealed and verified when read, since others may have placed them."""

from __future__ import annotations

import hashlib
import json
import warnings
from pathlib import Path
from typing import Callable

from vqalib.core import config
from vqalib.core.caches import discard, read_entry, write_entry
from vqalib.core.io import cache_root
from vqalib.core.judge.backends import JudgeBackend, OpenAIChatBackend, TransformersBackend
from vqalib.core.judge.settings import BASE_URL_ENV, HF_MODEL_ENV, MAX_REPLY_BYTES_ENV, MODEL_ENV, setting

KIND = "judge cache"  # how warnings name this cache


def _canonical(request: object) -> str:
    """The request as the one JSON text its cache key is the SHA-256 of."""
    return json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _size(text: str) -> int:
    """UTF-8 bytes of ``text`` (a lone surrogate, which a JSON escape can produce, counted as 3)."""
    return len(text.encode("utf-8", errors="surrogatepass"))


class CachedJudge:
    """A judge backend whose replies are cached on disk, so reruns make no calls. An entry is served only if it is a
    regular file holding this exact request and a non-empty reply within ``max_reply_bytes``; others are deleted with
    a warning. A cache that cannot be written costs calls, never replies."""

    def __init__(self, backend: JudgeBackend, *, cache_dir: str | Path, max_reply_bytes: int | None = None) -> None:
        self.backend = backend
        self.max_reply_bytes = int(max_reply_bytes or getattr(backend, "max_reply_bytes", None)
                                   or setting("max_reply_bytes"))
        self.cache_dir = Path(cache_dir)
        self.enabled = True  # False: the folder could not be made, nothing is read or stored
        self.calls = 0
        self.cache_hits = 0
        self.not_stored = 0
        try:
            self.cache_dir.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            self.enabled = False
            warnings.warn(f"judge cache: cannot make the folder {self.cache_dir} ({error}); running uncached, "
                          "so every judge reply is asked for and none is stored", stacklevel=2)

    def request_key(self, messages: list[dict], *, temperature: float, max_tokens: int,
                    prompt: str | None = None) -> dict:
        """What identifies a reply in the cache: backend, endpoint, model, prompt, messages, settings, seed."""
        return {"backend": self.backend.name, "endpoint": getattr(self.backend, "endpoint", None),
                "model": self.backend.model, "prompt": prompt, "messages": messages, "temperature": temperature,
                "max_tokens": max_tokens, "seed": getattr(self.backend, "seed", None)}

    def _path(self, request: object) -> Path:
        digest = hashlib.sha256(_canonical(request).encode("utf-8", errors="surrogatepass")).hexdigest()
        return self.cache_dir / f"{digest}.json"

    def _read(self, path: Path, request: dict) -> str | None:
        """The stored reply to ``request`` when ``path`` holds exactly that, else None (bad entries discarded)."""
        canonical = _canonical(request)
        # JSON may spell a character in up to 6 bytes; anything longer cannot hold a reply within the cap
        limit = 6 * (self.max_reply_bytes + _size(canonical)) + 1024
        # an unsealed entry is served if its request checks out: a reply is a paid call and may not recur
        data = read_entry(path, kind=KIND, max_bytes=limit, unsealed_ok=True)
        if data is None:  # not asked before, or discarded (a pipe, a folder, over the limit, a broken seal)
            return None
        try:
            entry = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as error:
            entry, why = None, f"not UTF-8 JSON ({type(error).__name__}: {str(error)[:120]})"
        else:
            why = "not a JSON object with 'request' and 'text'"
        if isinstance(entry, dict):
            stored, text = entry.get("request"), entry.get("text")
            if stored is None or _canonical(stored) != canonical or self._path(stored) != path:
                why = "its stored request is not the request its file name is the key of"
            elif not isinstance(text, str) or not text:
                why = "its text is not a non-empty string"
            elif _size(text) > self.max_reply_bytes:
                why = f"its text is over the reply cap of {self.max_reply_bytes:,} bytes ({MAX_REPLY_BYTES_ENV})"
            else:
                return text
        discard(path, kind=KIND, why=why)
        return None

    def _store(self, path: Path, request: dict, text: str) -> None:
        """Write a sealed entry; a disk that refuses it (full, read-only) is warned about and counted, never raised."""
        entry = {"request": request, "text": text}
        try:
            data = json.dumps(entry, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate from a JSON escape: escaped, it reads back the same
            data = json.dumps(entry).encode("ascii")
        if not write_entry(path, data, kind=KIND):
            self.not_stored += 1

    def complete(self, messages: list[dict], *, temperature: float = 0.0, max_tokens: int = 256,
                 prompt: str | None = None, accept: Callable[[str], bool] | None = None) -> str:
        """The backend's reply to ``messages``, from the cache when this request was answered before; a new reply
        that is empty or rejected by ``accept(text)`` is returned, not stored; ``prompt`` is part of the key only."""
        request = self.request_key(messages, temperature=temperature, max_tokens=max_tokens, prompt=prompt)
        path = self._path(request) if self.enabled else None
        if path is not None:
            text = self._read(path, request)
            if text is not None and (accept is None or accept(text)):
                self.cache_hits += 1
                return text
        self.calls += 1
        config.model_call(f"LLM judge {self.backend.name}:{self.backend.model}")
        text = self.backend.complete(messages, temperature=temperature, max_tokens=max_tokens)
        if path is not None and text and _size(text) <= self.max_reply_bytes and (accept is None or accept(text)):
            self._store(path, request, text)
        return text

    def stats(self) -> dict[str, int]:
        """Backend calls (failed ones included) and cache hits so far."""
        return {"calls": self.calls, "cache_hits": self.cache_hits}

    def summary(self) -> str:
        """One line such as ``judge openai:gpt-4o: 120 calls, 240 cache hits`` (and replies not stored)."""
        line = f"judge {self.backend.name}:{self.backend.model}: {self.calls} calls, {self.cache_hits} cache hits"
        if not self.enabled:
            return f"{line} (cache off: {self.cache_dir} could not be made)"
        return f"{line}, {self.not_stored} replies not cached (cache not writable)" if self.not_stored else line


def judge_from_env(*, cache_dir: str | Path | None = None) -> CachedJudge | None:
    """The cached judge the ``VQALIB_JUDGE_*`` variables configure (HTTP, else ``transformers``), or None.

    Parameters
    ----------
    cache_dir : str or Path, optional
        Where replies are stored; default ``cache_root("judge")``.
    """
    if config.get(BASE_URL_ENV) and config.get(MODEL_ENV):
        backend: JudgeBackend = OpenAIChatBackend.from_env()
    elif config.get(HF_MODEL_ENV):
        backend = TransformersBackend.from_env()
    else:
        return None
    return CachedJudge(backend, cache_dir=cache_dir if cache_dir is not None else cache_root("judge"))
