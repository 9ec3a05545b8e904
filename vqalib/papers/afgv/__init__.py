"""AFGV: Accessible VQA Evaluation Using Reading-Level Controlled GQA (reading-level controlled
question rewrites and tier statistics).

One module per concept, so that each table or figure's code can be read (and imported) on its own:

- :mod:`~vqalib.papers.afgv.vectors`: word vectors (word2vec-format files or the packaged GloVe;
  pickles refused) and their nearest neighbours (Methods, Implementation Details).
- :mod:`~vqalib.papers.afgv.readability`: textstat syllables and Flesch-Kincaid grade with the
  offline CMUdict (Readability Analysis, Table 2).
- :mod:`~vqalib.papers.afgv.tiers`: the tier rule and row statuses (Readability Analysis, Table 2).
- :mod:`~vqalib.papers.afgv.rewrite`: the rewrite pipeline, simpler and more complex rewrites (Fig. 1).
- :mod:`~vqalib.papers.afgv.intent`: intent and answer similarity via the shared embedding service.
- :mod:`~vqalib.papers.afgv.accuracy`: tier accuracy, Wald CIs, z-scores, implied n (Table 1).
- :mod:`~vqalib.papers.afgv.question_sets`: GQA and the offline accessibility question sets (Methods).
- :mod:`~vqalib.papers.afgv.gqa`: fetching GQA's questions, ``vqalib fetch-gqa``.
- :mod:`~vqalib.papers.afgv.predictions`: model predictions per tier (Table 1 from predictions).
- :mod:`~vqalib.papers.afgv.tables`: notebook 06's Table 1 and Table 2 summaries.
- :mod:`~vqalib.papers.afgv.figures`: the FK-grade box plots by tier (Table 2).

The package re-exports nothing: every name has one home, its module (ARCHITECTURE.md, "Layers").
"""
