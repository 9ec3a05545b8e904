"""vqalib: the package behind the accessible-VQA research compendium.

Four layers, each importing only the ones before it (ARCHITECTURE.md):

- :mod:`vqalib.core`: paper-free machinery (settings, files, caches, embeddings, metrics, the LLM judge, the
  table registry and the reproduction contract, reporting, the figure style);
- :mod:`vqalib.papers`: one subpackage per paper (``vizwiz_lf``, ``commvqa``, ``afgv``), one module per concept;
- :mod:`vqalib.runner`: answer generation with vision-language models;
- :mod:`vqalib.compendium`: the tools on top (README status, claims, ``make reproduce``, the reviewer site, the
  ``vqalib`` command).
"""

__version__ = "0.1.0"
