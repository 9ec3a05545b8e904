"""Figures of the compendium, as matplotlib Figures (saved by :mod:`vqalib.report`).

Each function takes a tidy table from the analysis modules and returns a Figure; none
reads or writes files.

Accessibility (issue 14). Categorical colours come from :data:`PALETTE` (Okabe–Ito, ordered so
that the first colours stay far apart under simulated colour-vision deficiencies), and colour is
never the only cue: bars carry :data:`HATCHES`, lines and points :data:`MARKERS` and line styles,
or the categories are labelled directly. Text on a filled area is black or white as
:func:`text_colour_on` chooses, and :func:`contrast_problems` lists every drawn text below
:data:`MIN_CONTRAST` against what lies under it. Axes that one extreme value would squash are cut
by :func:`clipped`, and the figure says what was cut.
"""

from __future__ import annotations

import itertools
import math
from typing import NamedTuple

import matplotlib

matplotlib.use("Agg")  # headless, as in vqalib.report: figures are written to files, notebooks show them inline
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib.backend_bases import RendererBase  # noqa: E402
from matplotlib.backends.backend_agg import RendererAgg  # noqa: E402
from matplotlib.colors import to_hex, to_rgba  # noqa: E402
from matplotlib.patches import Patch, Rectangle  # noqa: E402

# Okabe & Ito (2008), "Color universal design", reordered so that the colours most figures use
# stay apart for every viewer: under simulated deuteranopia, protanopia and tritanopia the first
# three (sources of Fig. 2, conditions, tiers) are at least 22 apart in CAM02-UCS, the first six
# (sources of Table 4, CommVQA contexts) and all eight (functional roles) at least 11 (seaborn's
# "colorblind" palette: 6 for its first six). Yellow comes last because thin lines and small
# markers in it vanish on white, black next-to-last because black already marks reference
# values, error bars and outlines. tests/test_plots.py checks CVD_MIN_DELTA_E.
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
MIN_CONTRAST = 4.5  # WCAG 2.x, success criterion 1.4.3 (AA, normal-size text)
FAR_OUT = 3.0  # clipped(): Tukey's "far out" fence, Q3 + 3 IQR (box-plot whiskers stop at 1.5 IQR)
AXIS_PAD = 0.05  # clipped(): share of the kept range added on each side
BANNER_FACE = "#F0E442"  # the SIMULATED banner: Okabe–Ito yellow, black text at 16:1, reads as a warning


def use_style() -> None:
    """The compendium's one figure style (seaborn whitegrid, :data:`PALETTE`)."""
    sns.set_theme(context="notebook", style="whitegrid", palette=PALETTE)
    plt.rcParams.update({"figure.dpi": 100, "savefig.dpi": 150, "savefig.bbox": "tight",
                         "pdf.fonttype": 42, "svg.hashsalt": "vqalib", "hatch.linewidth": 0.8})


def colours(n: int) -> list[tuple[float, float, float]]:
    """The first ``n`` colours of :data:`PALETTE` as RGB triples (a figure never cycles the palette)."""
    if n > len(PALETTE):
        raise ValueError(f"{n} categories, but the colour-blind-safe palette has {len(PALETTE)} colours; "
                         "group the rarest categories or split the figure")
    return [to_rgba(c)[:3] for c in PALETTE[:n]]


# --- contrast (WCAG 2.x) --------------------------------------------------------------------

def relative_luminance(colour) -> float:
    """WCAG 2.x relative luminance of an opaque colour (any matplotlib colour; alpha is ignored)."""
    rgb = np.array(to_rgba(colour)[:3])
    linear = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    return float(linear @ [0.2126, 0.7152, 0.0722])


def contrast_ratio(a, b) -> float:
    """WCAG 2.x contrast ratio of two opaque colours, from 1 (same luminance) to 21 (black on white)."""
    la, lb = sorted((relative_luminance(a), relative_luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def text_colour_on(colour) -> str:
    """``"black"`` or ``"white"``, whichever contrasts more with the opaque fill ``colour``.

    One of the two always reaches 4.58:1, so text on any fill passes :data:`MIN_CONTRAST`
    (a fixed luminance cut such as seaborn's 0.408 does not)."""
    return "black" if contrast_ratio(colour, "black") >= contrast_ratio(colour, "white") else "white"


def _over(top, alpha: float, below: np.ndarray) -> np.ndarray:
    """``top`` with opacity ``alpha`` composited over the opaque RGB ``below``."""
    return alpha * np.asarray(top[:3], dtype=float) + (1 - alpha) * below


class _Recorder(RendererBase):
    """A renderer that paints nothing: it records, in drawing order, every filled shape and image
    (what text can sit on) and every text, so :func:`contrast_problems` sees exactly what a save
    would draw (hidden axes, switched-off tick labels and empty texts are never drawn)."""

    def __init__(self, fig: plt.Figure):
        super().__init__()
        self.width, self.height = fig.bbox.width, fig.bbox.height
        self.dpi = fig.dpi
        self._metrics = RendererAgg(1, 1, fig.dpi)  # text sizes exactly as Agg measures them
        self.fills: list[tuple] = []  # (order, display path, rgb, alpha, clip bbox, clip path)
        self.images: list[tuple] = []  # (order, x, y, rgba array, clip bbox)
        self.texts: list[tuple] = []  # (order, Text, rgba, display centre)
        self._seen: set[int] = set()
        self._order = itertools.count()  # drawing order: what is drawn later lies on top

    def get_text_width_height_descent(self, s, prop, ismath):
        return self._metrics.get_text_width_height_descent(s, prop, ismath)

    def get_canvas_width_height(self):
        return self.width, self.height

    def points_to_pixels(self, points):
        return points * self.dpi / 72

    @staticmethod
    def _clip(gc):
        rect = gc.get_clip_rectangle()
        path, affine = gc.get_clip_path()
        return (rect.frozen() if rect is not None else None,
                affine.transform_path(path) if path is not None else None)

    def draw_path(self, gc, path, transform, rgbFace=None):  # noqa: N803 (matplotlib's name)
        if rgbFace is None:
            return  # a stroke (grid line, error bar, outline) is never the background of a text
        # the alpha Agg paints a fill with
        alpha = gc.get_alpha() if gc.get_forced_alpha() else (rgbFace[3] if len(rgbFace) > 3 else 1.0)
        if alpha > 0:
            self.fills.append((next(self._order), transform.transform_path(path), tuple(rgbFace[:3]), float(alpha),
                               *self._clip(gc)))

    def draw_image(self, gc, x, y, im, transform=None):
        self.images.append((next(self._order), x, y, np.asarray(im), self._clip(gc)[0]))

    def draw_text(self, gc, x, y, s, prop, angle, ismath=False, mtext=None):
        if mtext is None or id(mtext) in self._seen or not s.strip():
            return  # later lines of a multi-line text share its centre
        self._seen.add(id(mtext))
        box = mtext.get_window_extent(self)
        centre = ((box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2)
        rect = gc.get_clip_rectangle()
        if rect is not None and not rect.contains(*centre):
            return  # clipped away (e.g. a label outside its axes' limits)
        self.texts.append((next(self._order), mtext, tuple(gc.get_rgb()), centre))

    def draw_tex(self, gc, x, y, s, prop, angle, *, mtext=None):
        self.draw_text(gc, x, y, s, prop, angle, mtext=mtext)

    def draw_gouraud_triangles(self, gc, triangles_array, colors_array, transform):
        pass  # shaded triangles: not used by these figures


def _describe(text, fg, bg, ratio: float, minimum: float) -> str:
    words = text.get_text().replace("\n", " ")
    words = words if len(words) <= 40 else words[:37] + "..."
    where = ""
    if text.axes is not None and text.axes.get_title():
        where = f" in panel {text.axes.get_title()!r}"
    return (f"text {words!r}{where}: {to_hex(fg)} on {to_hex(bg)} has contrast {ratio:.2f}:1, "
            f"below {minimum:g}:1")


def contrast_problems(fig: plt.Figure, *, minimum: float = MIN_CONTRAST) -> list[str]:
    """Every text of the drawn ``fig`` whose contrast with what lies under it is below ``minimum``.

    The figure is drawn once on a recording renderer (nothing is painted). For each visible,
    non-empty text, the background at the centre of its box is the composite, in drawing order,
    of every filled patch, collection cell, marker and image drawn before it that covers that
    point (inside its clip box), over the figure's facecolor (on white); the text colour is
    blended with its own alpha. A fully transparent text is skipped. Hatching and strokes under
    a text are not counted. Returns one readable line per problem (text, colours, ratio); ``[]``
    when every text passes WCAG 2.x at ``minimum``.
    """
    rec = _Recorder(fig)
    fig.draw(rec)
    fills = rec.fills
    extents = np.array([p.get_extents().extents for _, p, *_ in fills]).reshape(-1, 4)
    paper = _over(to_rgba(fig.get_facecolor()), to_rgba(fig.get_facecolor())[3], np.ones(3))
    problems = []
    for order, text, rgba, (cx, cy) in rec.texts:
        if rgba[3] <= 0:
            continue
        layers = []
        near = np.flatnonzero((extents[:, 0] <= cx) & (cx <= extents[:, 2]) & (extents[:, 1] <= cy)
                              & (cy <= extents[:, 3]))
        for i in near:
            at, path, rgb, alpha, rect, clip_path = fills[i]
            if at > order or (rect is not None and not rect.contains(cx, cy)):
                continue
            if (clip_path is not None and not clip_path.contains_point((cx, cy))) or not path.contains_point((cx, cy)):
                continue
            layers.append((at, rgb, alpha))
        for at, x, y, im, rect in rec.images:
            row, col = im.shape[0] - 1 - int(cy - y), int(cx - x)
            if at < order and 0 <= row < im.shape[0] and 0 <= col < im.shape[1] and (rect is None or rect.contains(cx, cy)):
                pixel = im[row, col] / (255.0 if im.dtype == np.uint8 else 1.0)
                layers.append((at, tuple(pixel[:3]), float(pixel[3])))
        bg = paper
        for _, rgb, alpha in sorted(layers, key=lambda layer: layer[0]):
            bg = _over(rgb, alpha, bg)
        fg = _over(rgba, rgba[3], bg)
        ratio = contrast_ratio(fg, bg)
        if ratio < minimum:
            problems.append(_describe(text, fg, bg, ratio, minimum))
    return problems


# --- robust axes ----------------------------------------------------------------------------

class Clip(NamedTuple):
    """Axis limits that leave out far outliers, and what they leave out (see :func:`clipped`)."""

    low: float
    high: float
    n_below: int
    n_above: int
    smallest: float  # the smallest value of all (below ``low`` when n_below > 0)
    largest: float  # the largest value of all (above ``high`` when n_above > 0)

    @property
    def n_clipped(self) -> int:
        return self.n_below + self.n_above

    def note(self, decimals: int = 1) -> str:
        """What the limits leave out, e.g. ``"5 values above 21.7 not shown (largest 197.2)"``; ``""`` if nothing."""
        parts = []
        if self.n_above:
            parts.append(f"{self.n_above} value{'s' * (self.n_above != 1)} above {self.high:.{decimals}f} not shown "
                         f"(largest {self.largest:.{decimals}f})")
        if self.n_below:
            parts.append(f"{self.n_below} value{'s' * (self.n_below != 1)} below {self.low:.{decimals}f} not shown "
                         f"(smallest {self.smallest:.{decimals}f})")
        return "; ".join(parts)


def clipped(values, *, groups=None, k: float = FAR_OUT, pad: float = AXIS_PAD) -> Clip:
    """Robust axis limits for box plots of ``values`` (one box per ``groups`` key, e.g. AFGV FK grade
    per question set and tier).

    The kept range runs from the lowest to the highest Tukey fence of the boxes (Q1 - k IQR,
    Q3 + k IQR; quartiles as box plots draw them), but never beyond the data, and is padded by
    ``pad`` of its width on each side. With ``k = 3`` every whisker and every ordinary outlier
    stays on the axis; only values "far out" of all boxes are left out, and counted. A box whose
    IQR is 0 keeps its whole range.
    ``groups``: anything :meth:`pandas.Series.groupby` accepts (``None``: one box).
    """
    values = pd.Series(values, dtype=float).dropna()
    if values.empty:
        raise ValueError("clipped: no values")
    grouped = values.groupby(groups if groups is not None else np.zeros(len(values)), observed=True, sort=False)
    q1, q3 = grouped.quantile(0.25), grouped.quantile(0.75)
    spread = (q3 - q1) > 0  # a box without spread gives no scale for "far out": all its values stay
    lower = max(float((q1 - k * (q3 - q1)).where(spread, grouped.min()).min()), float(values.min()))
    upper = min(float((q3 + k * (q3 - q1)).where(spread, grouped.max()).max()), float(values.max()))
    margin = pad * (upper - lower) if upper > lower else 0.5
    low, high = lower - margin, upper + margin
    return Clip(low=low, high=high, n_below=int((values < low).sum()), n_above=int((values > high).sum()),
                smallest=float(values.min()), largest=float(values.max()))


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
    """Recolour a seaborn heatmap's annotations for contrast with the cell they sit on (seaborn's own
    choice, a luminance cut at 0.408, leaves white on mid-viridis far below 4.5:1)."""
    mesh = ax.collections[0]
    cells = np.ma.asarray(mesh.get_array())  # rows x columns, as drawn
    for text in ax.texts:
        x, y = text.get_position()
        text.set_color(text_colour_on(mesh.to_rgba(cells[int(y), int(x)])))


# --- VizWiz-LF (notebooks 02-05) -------------------------------------------------------------

def stacked_shares(distribution: pd.DataFrame, *, title: str, label_order: list[str]) -> plt.Figure:
    """Horizontal stacked bars: share of each label per source (VizWiz-LF Tables 15–16 role mix;
    Fig. 3, roles before/after the abstention instruction).

    Each label has a colour and a hatch, both in the legend. A segment wide enough holds its
    percentage in black or white on a patch of the segment's colour (so the hatch never runs
    through the digits). A label missing for a source counts as 0%.
    """
    use_style()
    wide = distribution.pivot(index="source", columns="label", values="percent")
    wide = wide.reindex(index=list(dict.fromkeys(distribution["source"]))[::-1], columns=label_order).fillna(0.0)
    faces = colours(len(label_order))
    height = 0.45 * len(wide) + 2.4
    fig, ax = plt.subplots(figsize=(9, height))
    left = pd.Series(0.0, index=wide.index)
    for k, (face, label) in enumerate(zip(faces, label_order)):
        ax.barh(wide.index, wide[label], left=left, label=label,
                **{**_bar_style(k, face), "edgecolor": "white", "linewidth": 0.6})  # white seams between segments
        for y, (x0, w) in enumerate(zip(left, wide[label])):
            if w >= 6:  # label segments wide enough to hold the number
                ax.text(x0 + w / 2, y, f"{w:.0f}", ha="center", va="center", fontsize=8, color=text_colour_on(face),
                        bbox={"boxstyle": "round,pad=0.2", "facecolor": face, "edgecolor": "none"})
        left = left + wide[label]
    ax.set_xlim(0, 100)
    ax.set_xlabel("share of annotations (%)")
    ax.set_ylabel("")
    ax.set_title(title)
    legend_rows = math.ceil(len(label_order) / 4)
    fig.legend(handles=_bar_legend_handles(label_order, faces), ncol=4, loc="lower center", bbox_to_anchor=(0.5, 0.01),
               frameon=False, fontsize=9, **BAR_LEGEND)
    fig.tight_layout(rect=(0, (0.05 + 0.25 * legend_rows) / height, 1, 1))  # room for the legend below the axes
    return fig


def heatmap(matrix: pd.DataFrame, *, title: str, xlabel: str, ylabel: str, fmt: str = "d") -> plt.Figure:
    """Annotated heatmap of a count matrix (role x information source, VizWiz-LF Fig. 5); each number
    is black or white, whichever contrasts more with its cell."""
    use_style()
    fig, ax = plt.subplots(figsize=(1.6 * matrix.shape[1] + 3, 0.5 * matrix.shape[0] + 1.5))
    sns.heatmap(matrix, annot=True, fmt=fmt, cmap=SEQUENTIAL_CMAP, linewidths=0.5, ax=ax,
                cbar_kws={"label": "sentences"})
    _label_cells(ax)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    fig.tight_layout()
    return fig


def paper_agreement(comparison: pd.DataFrame, *, title: str, unit: str, tolerance: float,
                    hue: str | None = None) -> plt.Figure:
    """Reproduced against reported values, one point per cell, with the tolerance band (VizWiz-LF
    Tables 2–3).

    Each ``hue`` level has its own colour and marker; a cell outside the tolerance is circled in
    black and, when there are at most five, labelled with its reported and reproduced value.
    """
    use_style()
    data = comparison.dropna(subset=["reproduced", "paper"])
    levels = list(dict.fromkeys(data[hue])) if hue else [None]
    lo = float(min(data["reproduced"].min(), data["paper"].min()))
    hi = float(max(data["reproduced"].max(), data["paper"].max()))
    fig, ax = plt.subplots(figsize=(6, 5.5))
    ax.fill_between([lo, hi], [lo - tolerance, hi - tolerance], [lo + tolerance, hi + tolerance],
                    color="0.85", label=f"±{tolerance:g} (tolerance)")
    ax.plot([lo, hi], [lo, hi], color="0.4", linewidth=0.8)
    for k, (level, face) in enumerate(zip(levels, colours(len(levels)))):
        part = data if level is None else data[data[hue] == level]
        ax.scatter(part["paper"], part["reproduced"], marker=MARKERS[k], s=40, color=face, edgecolor="white",
                   linewidth=0.5, zorder=3, label="cell" if level is None else str(level))
    outside = data[data["within_tolerance"].eq(False)]
    if len(outside):
        ax.scatter(outside["paper"], outside["reproduced"], marker="o", s=220, facecolor="none", edgecolor="black",
                   linewidth=1.3, zorder=4, label="outside tolerance")
    if len(outside) <= 5:  # direct labels while they fit
        for row in outside.itertuples():
            prefix = f"{getattr(row, hue)}: " if hue else ""
            ax.annotate(f"{prefix}{row.paper:g} reported, {row.reproduced:.3g} here", (row.paper, row.reproduced),
                        xytext=(12, 0), textcoords="offset points", va="center", fontsize=8, zorder=5,
                        bbox={"boxstyle": "round,pad=0.2", "facecolor": "white", "edgecolor": "0.6", "linewidth": 0.5})
    ax.set_xlabel(f"reported in the paper ({unit})")
    ax.set_ylabel(f"reproduced here ({unit})")
    ax.set_title(title)
    ax.legend(fontsize=8, loc="upper left", frameon=True)
    fig.tight_layout()
    return fig


def reference_shift(summary: pd.DataFrame, *, metrics: list[str], metric_names: dict[str, str],
                    title: str) -> plt.Figure:
    """Mean score with short (s_r) vs long (l_r) references, per source and metric (Table 4, §5).

    One panel per metric; for each source a line from its s_r score to its l_r score, for
    the whole answer (l_c, solid, filled marker) and its Answer sentences (l'_c, dashed, open
    marker), with 95% CIs. Each source has its own colour and marker, and is nudged sideways a
    little so that overlapping intervals stay apart.
    """
    use_style()
    data = summary[summary["metric"].isin(metrics) & summary["reference_kind"].isin(["s_r", "l_r"])]
    sources = [s for s in dict.fromkeys(data["source"]) if (data["source"].eq(s) & data["reference_kind"].eq("l_r")).any()]
    faces = dict(zip(sources, colours(len(sources))))
    fig, axes = plt.subplots(1, len(metrics), figsize=(4.2 * len(metrics), 4.6), sharey=False, squeeze=False)
    for ax, metric in zip(axes[0], metrics):
        for k, source in enumerate(sources):
            nudge = 0.04 * (k - (len(sources) - 1) / 2)
            for cand, style in (("l_c", "-"), ("l_c_prime", "--")):
                part = data[(data["metric"] == metric) & (data["source"] == source) & (data["candidate_kind"] == cand)]
                part = part.set_index("reference_kind").reindex(["s_r", "l_r"])
                ax.errorbar([nudge, 1 + nudge], part["mean"],
                            yerr=[part["mean"] - part["ci_low"], part["ci_high"] - part["mean"]],
                            color=faces[source], linestyle=style, marker=MARKERS[k], markersize=6,
                            markerfacecolor=faces[source] if cand == "l_c" else "white", markeredgewidth=1.2,
                            capsize=3, linewidth=1.4, label=f"{source}, {'l_c' if cand == 'l_c' else 'l′_c'}")
        ax.set_xticks([0, 1], ["short reference s_r", "long reference l_r"])
        ax.set_xlim(-0.3, 1.3)
        ax.set_title(metric_names.get(metric, metric))
        ax.set_ylabel("mean score (95% CI)")
    axes[0][-1].legend(fontsize=8, bbox_to_anchor=(1.02, 1), loc="upper left", frameon=False)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def tier_distribution(frame: pd.DataFrame, *, value: str, by: str, title: str, ylabel: str,
                      clip: bool | Clip = True) -> plt.Figure:
    """Box plots of ``value`` per AFGV tier, one panel per ``by`` group (FK grade by tier, AFGV Table 2).

    With ``clip`` true, the shared value axis stops at :func:`clipped`'s limits over all boxes
    (``clipped(frame[value], groups=[frame[by], frame["tier"]])``), so one absurd value (a CommVQA
    question "ghhhh…" has grade 197) does not squash the boxes; pass that :class:`Clip` itself to
    quote the same numbers in the alt text, or ``False`` for the full range. The boxes and means
    still use every value. Each box with values off the axis says how many, and a note under the
    figure gives :meth:`Clip.note`.
    """
    use_style()
    tiers = ["simplified", "baseline", "complex"]
    groups = list(dict.fromkeys(frame[by]))
    if isinstance(clip, Clip):
        limits = clip
    else:
        limits = clipped(frame[value], groups=[frame[by], frame["tier"]]) if clip else None
    fig, axes = plt.subplots(1, len(groups), figsize=(4.5 * len(groups), 4.2 + 0.3 * bool(limits and limits.n_clipped)),
                             sharey=True, squeeze=False)
    for ax, group in zip(axes[0], groups):
        part = frame[frame[by] == group]
        sns.boxplot(data=part, x="tier", y=value, hue="tier", ax=ax, palette=PALETTE[:len(tiers)], legend=False,
                    order=tiers, hue_order=tiers, showmeans=True,
                    meanprops={"marker": "D", "markerfacecolor": "white", "markeredgecolor": "black"})
        ax.set_title(f"{group} (n = {part['question_id'].nunique()})")
        ax.set_xlabel("tier")
        ax.set_ylabel(ylabel)
        if limits is not None:  # under each box, how many of its values are off the axis (not over its fliers)
            labels = []
            for tier in tiers:
                values = part.loc[part["tier"] == tier, value]
                off = [f"{arrow} {n} off scale" for n, arrow in ((int((values > limits.high).sum()), "↑"),
                                                                  (int((values < limits.low).sum()), "↓")) if n]
                labels.append("\n".join([tier, *off]))
            ax.set_xticks(range(len(tiers)), labels)
    if limits is not None:
        axes[0][0].set_ylim(limits.low, limits.high)
    fig.suptitle(title)
    if limits is not None and limits.n_clipped:
        fig.text(0.01, 0.01, f"Axis cut to keep the boxes readable: {limits.note()}.", ha="left", va="bottom",
                 fontsize=9, color="0.15")
        fig.tight_layout(rect=(0, 0.05, 1, 1))
    else:
        fig.tight_layout()
    return fig


def human_eval_bars(means: pd.DataFrame, marks: pd.DataFrame, *, title: str, watermark: str | None = None) -> plt.Figure:
    """Normalised rankings and ratings per answer source, groups x criteria, with 95% CIs and
    Bonferroni-corrected significance stars (VizWiz-LF Fig. 2, §6).

    ``means`` comes from ``stats.source_means`` (one bar per row), ``marks`` from
    ``stats.significance_marks`` (a bracket with stars for each row whose ``shown`` is
    true). Rows of panels are groups, columns criteria; each source has a colour and a hatch.
    ``watermark`` (e.g. ``SIMULATED``) is written in a solid banner across the top of the figure
    and in a label inside every panel, so that no crop of the figure loses it.
    """
    use_style()
    groups = list(dict.fromkeys(means["group"]))
    criteria = list(dict.fromkeys(means["criterion"]))
    sources = list(dict.fromkeys(means["source"]))
    faces = colours(len(sources))
    height = 2.3 * len(groups) + 1.2 + 0.45 * bool(watermark)
    fig, axes = plt.subplots(len(groups), len(criteria), figsize=(2.5 * len(criteria) + 1.2, height),
                             sharey=True, squeeze=False)
    for i, group in enumerate(groups):
        for j, criterion in enumerate(criteria):
            ax = axes[i][j]
            part = means[(means["group"] == group) & (means["criterion"] == criterion)].set_index("source")
            part = part.reindex(sources)
            x = list(range(len(sources)))
            for k, face in enumerate(faces):
                ax.bar(x[k], part["mean"].iloc[k], width=0.7, **_bar_style(k, face))
            ax.errorbar(x, part["mean"], yerr=[part["mean"] - part["ci_low"], part["ci_high"] - part["mean"]],
                        fmt="none", ecolor="0.15", elinewidth=1, capsize=3)
            shown = marks[(marks["group"] == group) & (marks["criterion"] == criterion) & marks["shown"]]
            level = 1.04
            spans = sorted((abs(sources.index(r.source_b) - sources.index(r.source_a)),
                            min(sources.index(r.source_a), sources.index(r.source_b)), r) for r in shown.itertuples())
            for _, _, row in spans:  # narrow brackets first, the widest on top
                a, b = sources.index(row.source_a), sources.index(row.source_b)
                ax.plot([a, a, b, b], [level, level + 0.03, level + 0.03, level], color="0.15", linewidth=0.8)
                ax.text((a + b) / 2, level + 0.025, row.stars, ha="center", va="bottom", fontsize=9)
                level += 0.14
            ax.set_ylim(0, 1.62 if watermark else 1.5)  # room for the panel's label above the brackets
            ax.set_yticks([0, 0.25, 0.5, 0.75, 1.0])
            ax.set_xticks(x, sources if i == len(groups) - 1 else [""] * len(sources), rotation=30, fontsize=8)
            label = part["criterion_label"].dropna().iloc[0]
            top_label = means.loc[means["criterion"] == criterion, "criterion_label"].iloc[0]
            if i == 0 or label != top_label:  # the S+I row rates Correctness in the Plausibility column
                ax.set_title(label, fontsize=10)
            if j == 0:
                ax.set_ylabel(f"{group}: {part['group_name'].dropna().iloc[0]}\nmean score (0-1)", fontsize=8)
            if watermark:
                ax.text(0.98, 0.97, watermark, transform=ax.transAxes, ha="right", va="top", fontsize=7,
                        fontweight="bold", color=text_colour_on(BANNER_FACE), zorder=5,
                        bbox={"boxstyle": "square,pad=0.25", "facecolor": BANNER_FACE, "edgecolor": "black",
                              "linewidth": 0.6})
    fig.legend(handles=_bar_legend_handles(sources, faces), ncol=len(sources), loc="lower center", frameon=False,
               bbox_to_anchor=(0.5, -0.01), **BAR_LEGEND)
    top = 1.0
    if watermark:
        band = 0.42 / height  # a 0.42-inch band, whatever the number of rows
        top = 1 - band
        fig.add_artist(Rectangle((0, top), 1, band, transform=fig.transFigure, facecolor=BANNER_FACE,
                                 edgecolor="black", linewidth=1.0))
        fig.text(0.5, 1 - band / 2, f"{watermark} DATA – NOT THE PAPER'S RESULTS", ha="center", va="center",
                 fontsize=14, fontweight="bold", color=text_colour_on(BANNER_FACE))
    fig.suptitle(title, fontsize=11, y=top - 0.06 / height, va="top")
    fig.tight_layout(rect=(0, 0.03, 1, top))  # tight_layout keeps the axes below the suptitle
    return fig


# --- CommVQA (notebook 07) -------------------------------------------------------------

def protocol_comparison(steps: pd.DataFrame, *, metrics: list[str], title: str) -> plt.Figure:
    """CommVQA Table 1 under the authors' and the corrected protocol, beside the paper's values.

    ``steps`` has model, condition, metric, authors, corrected_all_rows, ci_low, ci_high and
    paper. One panel per metric; one row per model and condition. The three values differ in
    marker (square, circle, cross) as well as colour.
    """
    use_style()
    faces = colours(2)
    rows = list(dict.fromkeys(zip(steps["model"], steps["condition"])))
    labels = [f"{m} ({c})" for m, c in rows]
    fig, axes = plt.subplots(1, len(metrics), figsize=(3.1 * len(metrics), 0.55 * len(rows) + 1.9), sharey=True,
                             squeeze=False)
    for ax, metric in zip(axes[0], metrics):
        part = steps[steps["metric"] == metric].set_index(["model", "condition"]).reindex(rows)
        y = list(range(len(rows)))
        ax.errorbar(part["corrected_all_rows"], [v - 0.15 for v in y],
                    xerr=[part["corrected_all_rows"] - part["ci_low"], part["ci_high"] - part["corrected_all_rows"]],
                    fmt="s", color=faces[0], capsize=3, label="corrected: all rows, 95% CI")
        ax.plot(part["authors"], [v + 0.15 for v in y], "o", color=faces[1], label="authors' protocol")
        ax.plot(part["paper"], [v + 0.15 for v in y], "x", color="black", markersize=8, label="paper (Table 1)")
        ax.set_title(metric)
        ax.set_yticks(y, labels)
        ax.set_xlabel("score")
    # shared y, first row on top as in the paper's table; half a row of room so no marker is cut at the edge
    axes[0][0].set_ylim(len(rows) - 0.4, -0.6)
    axes[0][-1].legend(fontsize=8, bbox_to_anchor=(1.02, 1), loc="upper left", frameon=False)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def accuracy_heatmap(matrix: pd.DataFrame, *, title: str, label: str = "cross-validated accuracy") -> plt.Figure:
    """Annotated heatmap of pairwise accuracies (CommVQA Figure 2); the diagonal stays empty and each
    number is black or white, whichever contrasts more with its cell."""
    use_style()
    fig, ax = plt.subplots(figsize=(1.2 * matrix.shape[1] + 2.5, 0.8 * matrix.shape[0] + 1.5))
    sns.heatmap(matrix, annot=True, fmt=".2f", cmap=SEQUENTIAL_CMAP, vmin=0.5, vmax=1.0, linewidths=0.5,
                square=True, ax=ax, cbar_kws={"label": label})
    _label_cells(ax)
    ax.grid(False)  # the whitegrid style would draw lines across the empty diagonal
    ax.set_title(title)
    fig.tight_layout()
    return fig


def rates_by_context(frame: pd.DataFrame, *, value: str, group: str, title: str, xlabel: str,
                     groups: list[str] | None = None, contexts: list[str] | None = None) -> plt.Figure:
    """Grouped horizontal bars with 95% CI error bars (``ci_low``/``ci_high``): one bar per
    context within each group, each context with its colour and hatch (CommVQA Figures 3 and 5:
    named entities per answer by context)."""
    use_style()
    groups = groups or list(dict.fromkeys(frame[group]))
    contexts = contexts or list(dict.fromkeys(frame["context"]))
    faces = colours(len(contexts))
    height = 0.8 / len(contexts)
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(groups) * len(contexts) * 0.35 + 1.8))
    for k, (context, face) in enumerate(zip(contexts, faces)):
        part = frame[frame["context"] == context].set_index(group).reindex(groups)
        y = [i + (k - (len(contexts) - 1) / 2) * height for i in range(len(groups))]
        ax.barh(y, part[value], height=height, label=context, **_bar_style(k, face),
                xerr=[part[value] - part["ci_low"], part["ci_high"] - part[value]],
                error_kw={"elinewidth": 0.8, "capsize": 2})
    ax.set_yticks(range(len(groups)), groups)
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    ax.legend(handles=_bar_legend_handles(contexts, faces), title="context", fontsize=8, bbox_to_anchor=(1.02, 1),
              loc="upper left", frameon=False, **BAR_LEGEND)
    fig.tight_layout()
    return fig


def description_similarity_bars(summary: pd.DataFrame, tests: pd.DataFrame, *, title: str) -> plt.Figure:
    """Mean answer-description cosine similarity per source and condition with 95% CIs and the
    baseline-vs-contextual significance marks (CommVQA Figure 4).

    Each condition has a colour and a hatch, and every bar is named under the axis (condition,
    then its source below)."""
    use_style()
    conditions = ["human", "baseline", "contextual"]
    faces = dict(zip(conditions, colours(len(conditions))))
    sources = list(dict.fromkeys(summary["source"]))
    fig, ax = plt.subplots(figsize=(1.8 * len(sources) + 2.5, 4.4))
    x = 0.0
    ticks, centres = [], []
    for source in sources:
        part = summary[summary["source"] == source].set_index("condition")
        present = [c for c in conditions if c in part.index]
        xs = [x + 0.4 * k for k in range(len(present))]
        for xi, c in zip(xs, present):
            r = part.loc[c]
            ax.bar(xi, r["mean"], width=0.38, yerr=[[r["mean"] - r["ci_low"]], [r["ci_high"] - r["mean"]]],
                   capsize=3, **_bar_style(conditions.index(c), faces[c]))
            ticks.append((xi, c))
        test = tests[tests["source"] == source]
        if len(present) == 2 and not test.empty:
            top = float(part["ci_high"].max()) + 0.02
            ax.plot(xs, [top, top], color="0.3", linewidth=0.8)
            ax.text(sum(xs) / 2, top + 0.005, test["stars"].iloc[0], ha="center", va="bottom", fontsize=10)
        centres.append((sum(xs) / len(xs), source))
        x = xs[-1] + 0.8
    ax.set_xticks([t for t, _ in ticks], [c for _, c in ticks], fontsize=8)
    for centre, source in centres:  # the source under its bars' condition labels
        ax.annotate(source, (centre, 0), xycoords=("data", "axes fraction"), xytext=(0, -20),
                    textcoords="offset points", ha="center", va="top", fontsize=11)
    ax.set_ylim(0, float(summary["ci_high"].max()) + 0.08)  # room for the highest bracket and its stars
    ax.set_ylabel("cosine similarity to the description")
    ax.set_title(title)
    shown = [c for c in conditions if c in set(summary["condition"])]
    ax.legend(handles=_bar_legend_handles(shown, [faces[c] for c in shown], [conditions.index(c) for c in shown]),
              title="answers", fontsize=8,
              frameon=False, **BAR_LEGEND)
    fig.tight_layout()
    return fig
