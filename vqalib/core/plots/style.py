"""The figure style and the pieces every figure shares, readable with a colour-vision deficiency: the Okabe–Ito
:data:`PALETTE`, and colour never the only cue (bars carry :data:`HATCHES`, points and lines :data:`MARKERS`)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
from matplotlib.colors import to_rgba
from matplotlib.patches import Patch

from vqalib.core.plots.contrast import _over, text_colour_on

# Okabe & Ito (2008), reordered so that under simulated CVD the first three colours are >= 22 apart in CAM02-UCS
# and the first six and all eight >= 11 (seaborn's "colorblind": 6). Yellow last (vanishes in thin lines on white),
# black next-to-last (it already marks reference values, error bars and outlines).
PALETTE = ["#0072B2",  # blue
           "#E69F00",  # orange
           "#56B4E9",  # sky blue
           "#D55E00",  # vermillion
           "#009E73",  # bluish green
           "#CC79A7",  # reddish purple
           "#000000",  # black
           "#F0E442"]  # yellow
SEQUENTIAL_CMAP = "viridis"  # perceptually uniform and colour-blind safe
CVD_TYPES = ("deuteranomaly", "protanomaly", "tritanomaly")  # colorspacious names; simulated at severity 100
CVD_MIN_DELTA_E = {3: 20.0, 6: 10.0, len(PALETTE): 10.0}  # first n colours: least pairwise CAM02-UCS distance
# The second cue that goes with PALETTE[i]: a hatch for bars (solid first), a marker for points and lines.
HATCHES = ("", "/", ".", "x", "\\", "o", "+", "-")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
BANNER_FACE = "#F0E442"  # the SIMULATED banner: Okabe–Ito yellow, black text at 16:1, reads as a warning
# Figures are laid out for the narrowest place they are shown at full size: a JupyterLab cell (about 750 CSS px),
# the site's column and the vector PDF. At 7.5 in a PNG of 150 dpi is 1125 px, so in a 750 px cell text keeps two
# thirds of its size: MIN_FONT_PT = 9 pt shows as 12.5 px (tests/test_plots.py checks every committed PNG's width).
DISPLAY_WIDTH_IN = 7.5
MIN_FONT_PT = 9.0


def use_style() -> None:
    """Set the one figure style: seaborn whitegrid, :data:`PALETTE`, matplotlib's bundled fonts."""
    bundled_fonts_only()
    sns.set_theme(context="notebook", style="whitegrid", palette=PALETTE)
    plt.rcParams.update({"figure.dpi": 100, "savefig.dpi": 150, "savefig.bbox": "tight",
                         "pdf.fonttype": 42, "svg.hashsalt": "vqalib", "hatch.linewidth": 0.8})


def bundled_fonts_only() -> None:
    """Resolve every font to the files matplotlib ships, so PNGs and PDFs are the same on every machine (a system
    DejaVu Sans has another PDF font subset)."""
    from pathlib import Path

    import matplotlib
    from matplotlib import font_manager

    bundled = str(Path(matplotlib.get_data_path(), "fonts", "ttf"))
    manager = font_manager.fontManager
    if not any(f.fname.startswith(bundled) for f in manager.ttflist):  # a cache built without them
        for path in sorted(Path(bundled).glob("*.ttf")):
            manager.addfont(str(path))
    kept = [f for f in manager.ttflist if f.fname.startswith(bundled)]
    if kept != manager.ttflist:
        manager.ttflist = kept
        font_manager.FontManager._findfont_cached.cache_clear()


def colours(n: int) -> list[tuple[float, float, float]]:
    """The first ``n`` colours of :data:`PALETTE` as RGB triples (a figure never cycles the palette: ``ValueError``).

    Parameters
    ----------
    n : int
        Number of categories; at most ``len(PALETTE)``.
    """
    if n > len(PALETTE):
        raise ValueError(f"{n} categories, but the colour-blind-safe palette has {len(PALETTE)} colours; "
                         "group the rarest categories or split the figure")
    return [to_rgba(c)[:3] for c in PALETTE[:n]]


# --- shared pieces --------------------------------------------------------------------------

def _hatch_colour(face) -> tuple:
    """Hatch lines halfway between a fill and its text colour: visible, yet quieter than the text."""
    return tuple(_over(to_rgba(text_colour_on(face)), 0.5, np.asarray(to_rgba(face)[:3])))


def _bar_style(k: int, face) -> dict:
    """Fill, hatch and edge of the ``k``-th bar series (the hatch is the cue besides colour)."""
    return {"color": face, "hatch": HATCHES[k], "hatchcolor": _hatch_colour(face), "edgecolor": "0.2", "linewidth": 0.5}


def _bar_legend_handles(labels: list[str], faces: list, series: list[int] | None = None) -> list[Patch]:
    """Legend swatches with the fill and hatch of bar series ``series`` (default 0, 1, ...)."""
    series = series if series is not None else list(range(len(labels)))
    return [Patch(label=label, facecolor=face, hatch=HATCHES[k], hatchcolor=_hatch_colour(face), edgecolor="0.2",
                  linewidth=0.5) for label, face, k in zip(labels, faces, series)]


BAR_LEGEND = {"handlelength": 2.4, "handleheight": 1.5}  # legend swatches large enough to show the hatch


def _label_cells(ax: plt.Axes) -> None:
    """Recolour a seaborn heatmap's annotations for contrast with their cell (seaborn's own cut leaves white on
    mid-viridis far below 4.5:1)."""
    mesh = ax.collections[0]
    cells = np.ma.asarray(mesh.get_array())  # rows x columns, as drawn
    for text in ax.texts:
        x, y = text.get_position()
        text.set_color(text_colour_on(mesh.to_rgba(cells[int(y), int(x)])))
