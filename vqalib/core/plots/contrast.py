"""WCAG 2.x contrast checks, so low-vision readers can read every text of a figure: :func:`contrast_problems`
lists every drawn text below :data:`MIN_CONTRAST` against what lies under it (saving refuses such a figure)."""

from __future__ import annotations

import itertools

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.backend_bases import RendererBase
from matplotlib.backends.backend_agg import RendererAgg
from matplotlib.colors import to_hex, to_rgba

MIN_CONTRAST = 4.5  # WCAG 2.x, success criterion 1.4.3 (AA, normal-size text)


def relative_luminance(colour) -> float:
    """WCAG 2.x relative luminance, 0 (black) to 1 (white), of an opaque matplotlib colour (alpha is ignored)."""
    rgb = np.array(to_rgba(colour)[:3])
    linear = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    return float(linear @ [0.2126, 0.7152, 0.0722])


def contrast_ratio(a, b) -> float:
    """WCAG 2.x contrast ratio of two opaque colours, from 1 (same luminance) to 21 (black on white)."""
    la, lb = sorted((relative_luminance(a), relative_luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def text_colour_on(colour) -> str:
    """``"black"`` or ``"white"``, whichever contrasts more with the opaque fill ``colour``; one of the two always
    reaches 4.58:1, so text on any fill passes :data:`MIN_CONTRAST` (a fixed cut does not).

    Parameters
    ----------
    colour : matplotlib colour
        The fill the text sits on.
    """
    return "black" if contrast_ratio(colour, "black") >= contrast_ratio(colour, "white") else "white"


def _over(top, alpha: float, below: np.ndarray) -> np.ndarray:
    """``top`` with opacity ``alpha`` composited over the opaque RGB ``below``."""
    return alpha * np.asarray(top[:3], dtype=float) + (1 - alpha) * below


class _Recorder(RendererBase):
    """A renderer that paints nothing: it records, in drawing order, every fill, image and text a save would draw."""

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
    """Every text of the drawn ``fig`` whose contrast with what lies under it is below ``minimum``, one line each;
    the background is every fill and image drawn before the text, composited at its centre (hatching not counted).

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The finished figure (it is drawn, not changed).
    minimum : float, default :data:`MIN_CONTRAST`
        The least acceptable contrast ratio.
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
