"""The VLM answer runner behind ``vqalib run``, ``models`` and ``runs``: answers of vision-language models to the
papers' questions (VizWiz-LF §3, §7, A.1.3, A.4.2; CommVQA §5, A.1, A.3; AFGV Methods). One module per concept
(``model_specs``, ``strategies``, ``models``, ``questions``, ``images``, ``answering``, ``runfiles``, ``locks``,
``engines``, ``handoff``, ``cli``; prompt texts in ``prompts/``); this package re-exports nothing."""
