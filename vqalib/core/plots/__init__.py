"""What every figure shares: style, contrast checks and robust axes; the figure functions live with their paper.
Re-exports nothing; selects the headless Agg backend before any submodule imports :mod:`matplotlib.pyplot`."""

import matplotlib

matplotlib.use("Agg")
