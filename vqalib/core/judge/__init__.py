"""The LLM judge: LAVE ratings of answers against a reference. Submodules: settings, backends (HTTP,
``transformers``), cache, prompts (``prompts/lave.json``), parsing (the 1-3 rating), batch (:func:`lave`)."""
