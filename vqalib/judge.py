"""The LLM judge: LAVE ratings of answers against a reference (VizWiz-LF §5, Table 4 LAVE column).

A facade: the judge lives in the package :mod:`vqalib.core.judge`, one concept per module, and
every name that code, tests and notebooks use from ``vqalib.judge`` is re-exported here
unchanged.

LAVE (Mañas et al. 2023, AAAI 2024; reference implementation github.com/mair-lab/lave) asks a
language model to rate a candidate answer against reference answers on a 1-3 scale. Two
prompts can be chosen (``prompt=`` / ``VQALIB_JUDGE_PROMPT``; :mod:`vqalib.core.judge.prompts`,
texts in ``vqalib/core/judge/prompts/lave.json``):

* ``vizwiz-lf`` (default): VizWiz-LF's adaptation, Appendix A.3.1, Table 17 — one expert
  reference, four demonstrations, replies end with ``Rating: X``. This is the prompt behind
  the paper's LAVE column.
* ``lave-reference``: the reference implementation's prompt (``LaveBase.build_prompt`` of
  mair-lab/lave at :data:`vqalib.datasets.LAVE_COMMIT`): its task definition with the yes/no
  rule, its first eight demonstrations (the yes/no set when the most common reference is
  "yes" or "no"), demonstrations ending ``So rating=X``. The demonstrations are read from the
  upstream files that the data registry fetches and hash-checks (``data/raw/lave/``); the
  repository declares no licence, so they are not copied into the project.

Replies are read by :func:`parse_lave_reply` (:mod:`vqalib.core.judge.parsing`); one that
carries no single 1-3 rating is handled by the ``unparseable`` policy
(``VQALIB_JUDGE_UNPARSEABLE``): ``drop`` (default; left out of the mean) or ``reference``
(scored as rating 2, as mair-lab/lave does). :func:`lave` (:mod:`vqalib.core.judge.batch`)
rates a frame of answers.

The model is reached through a :class:`JudgeBackend` (:mod:`vqalib.core.judge.backends`): an
OpenAI-compatible HTTP server (hosted APIs, vLLM, Ollama's ``/v1``) or a local ``transformers``
causal LM. :class:`CachedJudge` (:mod:`vqalib.core.judge.cache`) stores replies on disk, keyed
by endpoint, model, prompt variant, messages and generation settings, so reruns of the
notebooks cost no model calls.

Configuration (README, "Models, caches and runs"), read in one place (:func:`setting`,
:mod:`vqalib.core.judge.settings`): ``VQALIB_JUDGE_BASE_URL`` + ``VQALIB_JUDGE_MODEL`` (+
``VQALIB_JUDGE_API_KEY`` or ``OPENAI_API_KEY``, ``VQALIB_JUDGE_TIMEOUT``,
``VQALIB_JUDGE_DEADLINE``, ``VQALIB_JUDGE_MAX_RETRY_AFTER``), or ``VQALIB_JUDGE_HF_MODEL`` (+
``VQALIB_JUDGE_DEVICE``); ``VQALIB_JUDGE_PROMPT``, ``VQALIB_JUDGE_UNPARSEABLE``; cache in
``VQALIB_CACHE_DIR``.
"""

from __future__ import annotations

from vqalib import datasets
from vqalib.core.judge.backends import (FATAL_STATUSES, RETRY_STATUSES, JudgeBackend, JudgeError, OpenAIChatBackend,
                                        TransformersBackend, retry_wait)
from vqalib.core.judge.batch import lave, lave_score
from vqalib.core.judge.cache import CachedJudge, default_cache_dir, judge_from_env
from vqalib.core.judge.parsing import (PARSE_REASONS, REASON_CONFLICT, REASON_EMPTY, REASON_NO_RATING,
                                       REASON_OUT_OF_RANGE, REASON_RANGE, ParsedRating,
                                       parse_lave_reply, parse_rating)
from vqalib.core.judge.prompts import (LAVE_DEMO_KEYS, LAVE_EXAMPLES, LAVE_INSTRUCTION, LAVE_REFERENCE_INSTRUCTION,
                                       LAVE_REFERENCE_SHOTS, LaveDemos, _checked_demos, filter_references,
                                       format_references, is_binary_question, lave_messages, load_lave_demos,
                                       load_prompt)
from vqalib.core.judge.settings import (API_KEY_ENV, BASE_URL_ENV, DEADLINE_ENV, DEFAULT_DEADLINE, DEFAULT_PROMPT,
                                        DEFAULT_TIMEOUT, DEFAULT_UNPARSEABLE, DEVICE_ENV, ENABLE_HINT, HF_MODEL_ENV,
                                        LAVE_PROMPTS, MAX_RETRY_AFTER, MAX_RETRY_AFTER_ENV, MODEL_ENV, PROMPT_ENV,
                                        REFERENCE_FALLBACK_RATING, SETTINGS, TIMEOUT_ENV, UNPARSEABLE_ENV,
                                        UNPARSEABLE_POLICIES, setting)

__all__ = [
    # settings (README, "Models, caches and runs")
    "API_KEY_ENV", "BASE_URL_ENV", "DEADLINE_ENV", "DEFAULT_DEADLINE", "DEFAULT_PROMPT", "DEFAULT_TIMEOUT",
    "DEFAULT_UNPARSEABLE", "DEVICE_ENV", "ENABLE_HINT", "HF_MODEL_ENV", "LAVE_PROMPTS", "MAX_RETRY_AFTER",
    "MAX_RETRY_AFTER_ENV", "MODEL_ENV", "PROMPT_ENV", "REFERENCE_FALLBACK_RATING", "SETTINGS", "TIMEOUT_ENV",
    "UNPARSEABLE_ENV", "UNPARSEABLE_POLICIES", "setting",
    # backends
    "FATAL_STATUSES", "RETRY_STATUSES", "JudgeBackend", "JudgeError", "OpenAIChatBackend", "TransformersBackend",
    "retry_wait",
    # cache
    "CachedJudge", "default_cache_dir", "judge_from_env",
    # prompts (Table 17 and mair-lab/lave's)
    "LAVE_DEMO_KEYS", "LAVE_EXAMPLES", "LAVE_INSTRUCTION", "LAVE_REFERENCE_INSTRUCTION", "LAVE_REFERENCE_SHOTS",
    "LaveDemos", "filter_references", "format_references", "is_binary_question", "lave_messages",
    "load_lave_demos", "load_prompt",
    # reading a reply
    "PARSE_REASONS", "REASON_CONFLICT", "REASON_EMPTY", "REASON_NO_RATING", "REASON_OUT_OF_RANGE", "REASON_RANGE",
    "ParsedRating", "parse_lave_reply", "parse_rating",
    # a batch (Table 4 LAVE column, Table 5 ans-acc)
    "lave", "lave_score",
    # used by tests through this module: the data registry's errors and the demonstration check
    "datasets", "_checked_demos",
]
