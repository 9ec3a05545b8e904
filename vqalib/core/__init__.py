"""The paper-independent core (issue 17; DESIGN.md): ``config`` (every setting and environment variable), ``io``
(project paths, safe file reading and atomic writing), ``data_registry`` and ``fetch`` (the upstream files at
pinned commits), ``validation`` (the report of repaired or dropped rows), ``shards`` (the content-addressed
cache store), ``encoders`` (the one embedding service), ``inference`` (t intervals, significance marks),
``metrics`` (one unit per metric with its citation), ``judge`` (LLM judge backends, cache, LAVE), ``report``
(tables and figures, the paper comparison), ``plots`` (style, contrast, figure functions),
``specs``/``registry_entries``/``readme_status`` (the table registry's parts)."""
