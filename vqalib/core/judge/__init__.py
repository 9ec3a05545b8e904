"""The LLM judge: LAVE ratings of answers against a reference.

Submodules: settings, backends (HTTP, ``transformers``), cache (:class:`CachedJudge`), prompts (``prompts/lave.json``),
parsing (the 1-3 rating) and batch (:func:`lave`). This file imports nothing."""
