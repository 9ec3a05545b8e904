"""The LLM judge: LAVE ratings of answers against a reference (VizWiz-LF §5, Table 4 LAVE column).

One concept per module:

* :mod:`~vqalib.core.judge.settings` — the ``VQALIB_JUDGE_*`` settings and their defaults (README,
  "Models, caches and runs"), read by :func:`~vqalib.core.judge.settings.setting`;
* :mod:`~vqalib.core.judge.backends` — :class:`JudgeError`, the :class:`JudgeBackend` protocol, the
  OpenAI-compatible HTTP backend with its retry waits and the local ``transformers`` backend;
* :mod:`~vqalib.core.judge.cache` — :class:`CachedJudge` (content-addressed JSON reply cache, each entry
  verified when read) and :func:`judge_from_env`;
* :mod:`~vqalib.core.judge.prompts` — the LAVE prompts (VizWiz-LF Table 17 and mair-lab/lave's
  reference prompt); their texts are data, ``prompts/lave.json``, loaded by name;
* :mod:`~vqalib.core.judge.parsing` — :func:`parse_lave_reply`, reading the 1-3 rating of a reply;
* :mod:`~vqalib.core.judge.batch` — :func:`lave`, rating a frame of answers (Table 4 LAVE column).

Every name has its home in one submodule and is imported from there
(``from vqalib.core.judge.cache import CachedJudge``); this file re-exports and imports nothing, so importing
one submodule does not pull in the others.
"""
