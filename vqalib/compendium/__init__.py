"""The compendium's tools, on top of every other layer (ARCHITECTURE.md, "Layers").

They may import ``core``, ``papers`` and ``runner``; nothing below imports them:

- :mod:`~vqalib.compendium.status`: the README's status table, its numbers read from ``figures/``;
- :mod:`~vqalib.compendium.claims`: every number in the prose bound to its source;
- :mod:`~vqalib.compendium.reproduce`: ``make reproduce``, the notebooks run by papermill;
- :mod:`~vqalib.compendium.site`: the reviewer site and its browser audit;
- :mod:`~vqalib.compendium.site_html`: the HTML pieces of the site's pages;
- :mod:`~vqalib.compendium.cli`: the ``vqalib`` command.
"""
