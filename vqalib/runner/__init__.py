"""The VLM answer runner behind :mod:`vqalib.vqa` (VizWiz-LF §3, §7, A.1.3, A.4.2; CommVQA §5, A.1, A.3; AFGV Methods).

One module per concept; :mod:`vqalib.vqa` re-exports their public names and stays the entry point
(``python -m vqalib.vqa``):

- :mod:`~vqalib.runner.registry`: the model registry (VizWiz-LF A.1.3 / Table 25, CommVQA A.3, AFGV);
- :mod:`~vqalib.runner.resources`: prompt texts and chat templates stored as JSON in ``prompts/``;
- :mod:`~vqalib.runner.strategies`: prompts and prompting strategies (VizWiz-LF Tables 22-25, CommVQA A.1, AFGV);
- :mod:`~vqalib.runner.models`: loading models with transformers' own classes, test models;
- :mod:`~vqalib.runner.judges`: the self-consistency judge (VizWiz-LF Table 24);
- :mod:`~vqalib.runner.questions`: question loaders (VizWiz-LF §3, CommVQA §5, AFGV tiers);
- :mod:`~vqalib.runner.answering`: the records of one question under one strategy;
- :mod:`~vqalib.runner.runfiles`: run-file format, resume and repair, sharding;
- :mod:`~vqalib.runner.locks`: one writer per run file;
- :mod:`~vqalib.runner.engines`: the plain and Ray engines (:func:`~vqalib.runner.engines.run_generation`);
- :mod:`~vqalib.runner.handoff`: what the notebooks read (:func:`~vqalib.runner.handoff.discover_runs`,
  :func:`~vqalib.runner.handoff.load_run`);
- :mod:`~vqalib.runner.cli`: the ``python -m vqalib.vqa`` command line.
"""
