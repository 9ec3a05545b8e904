"""What every figure of the compendium shares: style, contrast checks and robust axes (figures are saved by
:mod:`vqalib.core.figure_files`).

The figure functions themselves live with their paper (``vqalib.papers.<paper>.figures``): each takes a tidy
table from the paper's analysis and returns a matplotlib Figure; none reads or writes files. One concept per
module, here and in the papers:

* :mod:`~vqalib.core.plots.style` — the figure style: the Okabe–Ito :data:`PALETTE` (ordered for
  colour-vision deficiency), hatches and markers, :func:`use_style`, :func:`colours`, and the bar,
  legend and heatmap-label pieces every figure shares;
* :mod:`~vqalib.core.plots.contrast` — WCAG 2.x contrast: :func:`relative_luminance`,
  :func:`contrast_ratio`, :func:`text_colour_on` and :func:`contrast_problems` (a recording renderer);
* :mod:`~vqalib.core.plots.axes` — robust axes: :class:`Clip` and :func:`clipped`;
* :mod:`~vqalib.papers.vizwiz_lf.figures` — VizWiz-LF figures (notebooks 02-05: Tables 2-3, 15-16,
  Figs. 2, 3 and 5, Table 4 reference shift);
* :mod:`~vqalib.papers.afgv.figures` — AFGV figure (notebook 06: FK grade by tier, Table 2);
* :mod:`~vqalib.papers.commvqa.figures` — CommVQA figures (notebook 07: Figs. 2-5; notebook 08: Table 1).

This package re-exports nothing: submodules are imported explicitly
(``from vqalib.core.plots.style import use_style``). The only thing this file does is select the
headless Agg backend before any submodule imports :mod:`matplotlib.pyplot`, as :mod:`vqalib.core.figure_files`
does: figures are written to files, notebooks show them inline.
"""

import matplotlib

matplotlib.use("Agg")
