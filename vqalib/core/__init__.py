"""The paper-independent core (ARCHITECTURE.md, "Layers"): ``config`` (every setting and environment variable), ``io``
(project paths, safe file reading and atomic writing), ``data_registry`` and ``fetch`` (the upstream files at
pinned commits), ``validation`` (the report of repaired or dropped rows), ``shards`` (the content-addressed
cache store), ``encoders`` (the one embedding service), ``inference`` (t intervals, significance marks),
``metrics`` (one unit per metric with its citation), ``judge`` (LLM judge backends, cache, LAVE), ``report``
(tables, the paper comparison), ``figure_files`` (figure files: PNG, PDF, alt text), ``plots`` (style, contrast,
robust axes; the figures themselves are in ``vqalib.papers.<paper>.figures``), ``registry`` with ``specs`` and
``declarations`` (the table registry; the entries are each paper's ``declarations.toml``), ``contract`` (the reproduction contract: tiered comparison, provenance)."""
