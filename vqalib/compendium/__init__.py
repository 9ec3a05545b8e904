"""The compendium's tools, on top of every other layer (ARCHITECTURE.md, "Layers"): the README status table,
the claims check, ``make reproduce``, the reviewer site, scorecards and the ``vqalib`` command.
They may import ``core``, ``papers`` and ``runner``; nothing below imports them."""
