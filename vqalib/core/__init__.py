"""The paper-independent core: settings, safe file I/O, the upstream data registry and fetch, caches, the embedding
service, statistics, metrics, the LLM judge, reports and figure files, plots, the table registry (each paper's
``declarations.toml``) and the reproduction contract."""
