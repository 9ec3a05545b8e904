"""``python -m vqalib``: the same command as ``vqalib`` (:func:`vqalib.compendium.cli.main`)."""

import sys

from vqalib.compendium.cli import main

sys.exit(main())
