"""CommVQA: Situating Visual Question Answering in Communicative Contexts (Naik, Potts, Kreiss, 2024).

One module per concept, so that each table or figure's code can be read (and imported) on its own:

- :mod:`~vqalib.papers.commvqa.names`: contexts, models, conditions, metrics, protocols, the two
  populations (benchmark subset, full release); §3, Table 1.
- :mod:`~vqalib.papers.commvqa.loading`: loader and validation of the release (§3).
- :mod:`~vqalib.papers.commvqa.protocols`: the authors' and the corrected Table 1 protocols.
- :mod:`~vqalib.papers.commvqa.table1`: Table 1 scoring, protocol steps, context effect (§5).
- :mod:`~vqalib.papers.commvqa.table1_cache`: :class:`~vqalib.papers.commvqa.table1_cache.ProtocolScores`
  and their Parquet/npz cache.
- :mod:`~vqalib.papers.commvqa.table1_runs`: Table 1 rows of the VLM runner; cells not run.
- :mod:`~vqalib.papers.commvqa.text`: question and answer text analyses (§4, Appendix A.2.2).
- :mod:`~vqalib.papers.commvqa.entities`: named entities (Figures 3 and 5, §5.1).
- :mod:`~vqalib.papers.commvqa.context`: sentence-embedding analyses, context from the question
  (§4.2, Figure 2) and answer-description similarity (§5, Figure 4).
- :mod:`~vqalib.papers.commvqa.facts`: the paper's stated numbers beside ours (§3–§5, A.2).
- :mod:`~vqalib.papers.commvqa.figures`: the plots of Figures 2–5 and of the Table 1 protocols.

The package re-exports nothing: every name has one home, its module (ARCHITECTURE.md, "Layers").
"""
