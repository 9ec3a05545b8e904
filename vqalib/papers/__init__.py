"""Paper-specific analyses, one subpackage per paper: ``vizwiz_lf`` (Huh et al., COLM 2024), ``commvqa``
(Naik, Potts, Kreiss, 2024) and ``afgv`` (reading-level controlled GQA). Each module is one concept:
loading, a table family, an analysis.

A module that uses another paper's module names it in its docstring and says why:
:mod:`vqalib.papers.commvqa.loading` counts words with :mod:`vqalib.papers.vizwiz_lf.wordcounts`, and
:mod:`vqalib.papers.afgv.question_sets` loads VizWiz-LF's questions with :mod:`vqalib.papers.vizwiz_lf.loading`
(ARCHITECTURE.md, "Layers")."""
