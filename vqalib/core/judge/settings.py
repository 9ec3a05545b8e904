"""Settings of the LLM judge (LAVE): its environment variables, defaults, prompt variants and the policies for a
reply without a rating; :func:`setting` reads them through :mod:`vqalib.core.config`."""

from __future__ import annotations

import math
from typing import Any, Callable

from vqalib.core import config

BASE_URL_ENV = "VQALIB_JUDGE_BASE_URL"
MODEL_ENV = "VQALIB_JUDGE_MODEL"
API_KEY_ENV = "VQALIB_JUDGE_API_KEY"
TIMEOUT_ENV = "VQALIB_JUDGE_TIMEOUT"
DEADLINE_ENV = "VQALIB_JUDGE_DEADLINE"
MAX_RETRY_AFTER_ENV = "VQALIB_JUDGE_MAX_RETRY_AFTER"
MAX_REPLY_BYTES_ENV = "VQALIB_JUDGE_MAX_REPLY_BYTES"
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
# largest reply body read: a LAVE reply is a few hundred bytes, so 1 MiB only stops a runaway or hostile server
DEFAULT_MAX_REPLY_BYTES = 1_048_576

# the prompts the papers declare, then mair-lab/lave's own (vqalib.core.config reads the declarations)
LAVE_PROMPTS = config.SETTINGS[PROMPT_ENV].choices
DEFAULT_PROMPT = config.SETTINGS[PROMPT_ENV].default
# drop: an unparseable reply is left out of the mean (the paper does not say); reference: scored as rating 2
UNPARSEABLE_POLICIES = ("drop", "reference")
DEFAULT_UNPARSEABLE = "drop"
REFERENCE_FALLBACK_RATING = 2  # lave_ft5.py LaveFT5.postprocess: any last token not in 1/2/3 becomes '2'


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


def _positive_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise ValueError("must be a whole number of bytes >= 1") from None
    if number < 1:
        raise ValueError("must be a whole number of bytes >= 1")
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
    "max_reply_bytes": (MAX_REPLY_BYTES_ENV, DEFAULT_MAX_REPLY_BYTES, _positive_int),
    "prompt": (PROMPT_ENV, DEFAULT_PROMPT, _choice(LAVE_PROMPTS)),
    "unparseable": (UNPARSEABLE_ENV, DEFAULT_UNPARSEABLE, _choice(UNPARSEABLE_POLICIES)),
}


def setting(name: str) -> Any:
    """One setting of the LAVE judge (a key of :data:`SETTINGS`) from its environment variable, else its default;
    a bad value is a ValueError."""
    variable, default, parse = SETTINGS[name]
    raw = config.get(variable)
    if raw is None:
        return default
    try:
        return parse(raw)
    except ValueError as error:
        raise ValueError(f"{variable}={raw!r}: {error}") from None
