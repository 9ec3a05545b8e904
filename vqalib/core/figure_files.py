"""The one place that writes figures: PNG + PDF in one colour-blind-safe style after a WCAG contrast check, with the
long description in ``figures/<name>.alt.txt`` (ARCHITECTURE.md, "Data flow"); notebooks show the saved file inline.
"""

from __future__ import annotations

import base64
import fnmatch
import html
import io
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless: figures are written to files, notebooks show them inline
import matplotlib.pyplot as plt  # noqa: E402

from vqalib.core import registry, saved_by  # noqa: E402
from vqalib.core.plots import contrast  # noqa: E402
from vqalib.core.plots import style  # noqa: E402
from vqalib.core.io import write_atomic  # noqa: E402
from vqalib.core.report import figures_dir  # noqa: E402


def use_style() -> None:
    """The compendium's one figure style (:func:`vqalib.core.plots.style.use_style`)."""

    style.use_style()


def short_alt(name: str) -> str:
    """The figure's short alt text: its registry title, the paper figure it reproduces, and "SIMULATED data" if so.

    Parameters
    ----------
    name : str
        The figure's registry stem.
    """
    spec = registry.figure(name)
    text = spec.title
    if spec.reproduces and spec.reproduces not in text:
        text += f" ({spec.paper} {spec.reproduces})"
    if "SIMULATED" in name:
        text = "SIMULATED data: " + text
    return text


@dataclass
class SavedFigure:
    """What :func:`save_figure` wrote; shown in a notebook as the saved PNG (short alt on the image, the long
    description as its caption), so the notebook holds exactly the committed figure.
    """

    png: Path
    pdf: Path
    alt_path: Path
    alt_text: str

    @property
    def name(self) -> str:
        return self.png.stem

    def _repr_mimebundle_(self, include=None, exclude=None):
        data = base64.b64encode(self.png.read_bytes()).decode("ascii")
        alt = short_alt(self.name)
        described = f"{self.name}-description"
        body = (f'<figure class="vqalib-figure" data-figure="{html.escape(self.name, quote=True)}">'
                f'<img src="data:image/png;base64,{data}" alt="{html.escape(alt, quote=True)}" '
                f'aria-describedby="{described}" style="max-width:100%;height:auto">'
                f'<figcaption><strong>Figure <code>{html.escape(self.name)}</code></strong> (long description, '
                f'also in <code>figures/{html.escape(self.alt_path.name)}</code>): '
                f'<span id="{described}">{html.escape(self.alt_text)}</span></figcaption></figure>')
        return ({"text/html": body, "image/png": data, "text/plain": repr(self)},
                {"image/png": {"alt": alt}})

    def __repr__(self) -> str:  # no absolute paths: a notebook's output must not depend on where the checkout is
        return f"SavedFigure({self.png.stem!r})"


def save_figure(fig: plt.Figure, name: str, *, alt_text: str,
                directory: str | Path | None = None) -> SavedFigure:
    """Write ``figures/<name>.png``, ``.pdf`` and ``.alt.txt`` after checking every text's contrast (WCAG 4.5:1), and
    close ``fig``.

    A figure drawn from a table :func:`vqalib.core.report.save` kept in this run (logged by
    :mod:`vqalib.core.saved_by`) is kept too, so its image matches the committed numbers.

    Parameters
    ----------
    fig : Figure
    name : str
    alt_text : str
        The long description, at least 10 words.
    directory : str or Path, optional

    Returns
    -------
    SavedFigure
    """

    if not alt_text or len(alt_text.split()) < 10:
        raise ValueError(f"figure {name!r}: give a one-paragraph alt text describing what it shows")
    spec = registry.figure(name)
    problems = contrast.contrast_problems(fig)
    small = sorted({t.get_text()[:30] for t in fig.findobj(matplotlib.text.Text)
                    if t.get_visible() and t.get_text().strip() and t.get_fontsize() < style.MIN_FONT_PT})
    if small:  # legend and tick text must stay readable where the figure is shown
        raise ValueError(f"figure {name!r}: text under {style.MIN_FONT_PT:g} pt: " + "; ".join(small))
    if problems:  # text a low-vision reader cannot read is a bug of the figure, not a style choice
        raise ValueError(f"figure {name!r}: text below {contrast.MIN_CONTRAST}:1 contrast: " + "; ".join(problems))
    out = figures_dir(directory)
    png, pdf, alt = out / f"{name}.png", out / f"{name}.pdf", out / f"{name}.alt.txt"
    outcomes = {line["file"]: line["outcome"] for line in saved_by.logged()}  # a file's last save wins
    kept_tables = [Path(file).stem for file, outcome in outcomes.items() if outcome == "kept"]
    kept = (any(fnmatch.fnmatchcase(stem, pattern) for stem in kept_tables for pattern in spec.data)
            and png.exists() and pdf.exists() and alt.exists())
    if not kept:
        # each file replaced whole (rendered in memory, then a rename): a killed run never leaves half an image
        for path, metadata in ((png, {"Software": None}), (pdf, {"CreationDate": None, "Creator": None, "Producer": None})):
            buffer = io.BytesIO()
            fig.savefig(buffer, format=path.suffix[1:], metadata=metadata)
            write_atomic(path, buffer.getvalue())
        write_atomic(alt, (alt_text.strip() + "\n").encode("utf-8"))
    plt.close(fig)
    saved_by.log(png, "kept" if kept else "written")
    return SavedFigure(png=png, pdf=pdf, alt_path=alt, alt_text=alt.read_text(encoding="utf-8").strip())


def remove_figure(name: str, *, directory: str | Path | None = None) -> list[Path]:
    """Delete ``figures/<name>.png``, ``.pdf`` and ``.alt.txt`` if present (a figure "not run" this time).

    Parameters
    ----------
    name : str
    directory : str or Path, optional

    Returns
    -------
    list of Path
        What was deleted.
    """
    out = figures_dir(directory)
    removed = [p for p in (out / f"{name}.png", out / f"{name}.pdf", out / f"{name}.alt.txt") if p.exists()]
    for p in removed:
        p.unlink()
    return removed
