"""The VLM answer runner: answers of vision-language models to the papers' questions (VizWiz-LF §3, §7,
A.1.3, A.4.2; CommVQA §5, A.1, A.3; AFGV Methods).

The commands are ``vqalib run``, ``vqalib models`` and ``vqalib runs`` (:mod:`vqalib.compendium.cli`). One
module per concept, and every name is imported from its own module (this package re-exports nothing):

- :mod:`~vqalib.runner.registry`: the model registry (VizWiz-LF A.1.3 / Table 25, CommVQA A.3, AFGV);
- ``prompts/``: prompt texts and chat templates stored as JSON, read by :func:`vqalib.core.prompts.load_prompt`;
- :mod:`~vqalib.runner.strategies`: prompts and prompting strategies (VizWiz-LF Tables 22-25, CommVQA A.1, AFGV);
- :mod:`~vqalib.runner.models`: loading models with transformers' own classes, test models;
- :mod:`~vqalib.runner.judges`: the self-consistency judge (VizWiz-LF Table 24);
- :mod:`~vqalib.runner.questions`: question loaders (VizWiz-LF §3, CommVQA §5, AFGV tiers);
- :mod:`~vqalib.runner.question_tables`: reading and checking a ``--questions`` table;
- :mod:`~vqalib.runner.images`: opening image sources, the download cache and its limits;
- :mod:`~vqalib.runner.image_downloads`: downloads with a per-read timeout, an overall deadline and a size cap;
- :mod:`~vqalib.runner.image_sources`: image names turned into sources, only inside ``--images``;
- :mod:`~vqalib.runner.answering`: the records of one question under one strategy;
- :mod:`~vqalib.runner.runfiles`: run-file format, resume and repair, one (model, strategy) per file, sharding;
- :mod:`~vqalib.runner.locks`: one writer per run file (keyed by its inode);
- :mod:`~vqalib.runner.engines`: the plain and Ray engines (:func:`~vqalib.runner.engines.run_generation`);
- :mod:`~vqalib.runner.handoff`: what the notebooks read (:func:`~vqalib.runner.handoff.discover_runs`,
  :func:`~vqalib.runner.handoff.load_run`);
- :mod:`~vqalib.runner.cli`: the runner's subcommands of ``vqalib`` (``run``, ``models``, ``runs``).
"""
