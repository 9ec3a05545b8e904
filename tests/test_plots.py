"""Figures: colour-blind-safe palette with a second cue, text contrast, robust axes, the SIMULATED mark."""

import itertools

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from colorspacious import cspace_convert, deltaE
from matplotlib.colors import to_rgb

from vqalib.core import figure_files, registry
from vqalib.core.plots import axes, contrast, style
from vqalib.papers.afgv import figures as afgv_figures
from vqalib.papers.commvqa import figures as commvqa_figures
from vqalib.papers.vizwiz_lf import figures as vizwiz_lf_figures

SOURCES = ["Expert", "GPT-4V", "Gemini", "LLaVA", "QWEN", "BLIP-2"]
ROLES = ["Confirmation", "Answer", "Ans. Failure", "Auxiliary", "Aux. Failure", "Explanation", "Suggestion", "Misc."]
CONTEXTS = ["shopping", "travel", "science magazines", "news", "health", "social media"]


def role_mix() -> pd.DataFrame:
    shares = {"Expert": [12, 34, 8, 24, 1, 15, 4, 2], "Gemini": [11, 55, 4, 14, 0, 6, 2, 8]}
    return pd.DataFrame([{"source": s, "label": r, "percent": float(p)} for s, row in shares.items()
                         for r, p in zip(ROLES, row)])


def cooccurrence() -> pd.DataFrame:
    counts = [[1689, 204, 97], [3854, 190, 670], [341, 500, 38], [1438, 86, 549], [21, 28, 0], [829, 672, 450],
              [76, 148, 363], [39, 8, 32]]
    return pd.DataFrame(counts, index=ROLES, columns=["Image Content", "Image Quality", "External Information"])


def agreement() -> pd.DataFrame:
    return pd.DataFrame({"reproduced": [50.0, 16.0, 12.5, 80.0, 30.0], "paper": [50.0, 6.0, 12.0, 80.0, np.nan],
                         "within_tolerance": [True, False, True, True, np.nan],
                         "table": ["Table 2", "Table 2", "Table 3", "Table 3", "Table 3"]})


def shift_summary() -> pd.DataFrame:
    rows = []
    for k, source in enumerate(SOURCES[1:] + ["InstructBLIP"]):
        for metric in ("rouge", "meteor"):
            for cand in ("l_c", "l_c_prime"):
                for ref, base in (("s_r", 0.05), ("l_r", 0.12)):
                    mean = base + 0.01 * k + 0.005 * (cand == "l_c")
                    rows.append({"metric": metric, "source": source, "candidate_kind": cand, "reference_kind": ref,
                                 "mean": mean, "ci_low": mean - 0.01, "ci_high": mean + 0.01})
    return pd.DataFrame(rows)


def tiers() -> pd.DataFrame:
    """Two question sets, 20 questions x 3 tiers; one CommVQA question has grade 197 in every tier."""
    rows = []
    for name in ("VizWiz-LF", "CommVQA"):
        for q in range(20):
            for shift, tier in enumerate(("simplified", "baseline", "complex")):
                grade = 197.2 if (name, q) == ("CommVQA", 7) else (q % 10) + 2.0 * shift - 2.0
                rows.append({"question_set": name, "question_id": q, "tier": tier, "fk_grade": grade})
    return pd.DataFrame(rows)


def human_eval() -> tuple[pd.DataFrame, pd.DataFrame]:
    means, marks = [], []
    for group, name in (("B", "BLV"), ("S", "sighted without image")):
        for criterion, label in (("ranking", "Ranking"), ("helpfulness", "Helpfulness")):
            for k, source in enumerate(("GPT-4V", "Gemini", "Expert")):
                mean = (0.7, 0.25, 0.6)[k]
                means.append({"group": group, "group_name": name, "criterion": criterion, "criterion_label": label,
                              "source": source, "mean": mean, "ci_low": mean - 0.08, "ci_high": mean + 0.08})
            for a, b, stars in (("GPT-4V", "Gemini", "***"), ("Gemini", "Expert", "**"), ("GPT-4V", "Expert", "*")):
                marks.append({"group": group, "criterion": criterion, "source_a": a, "source_b": b, "stars": stars,
                              "shown": True})
    return pd.DataFrame(means), pd.DataFrame(marks)


def protocol_steps() -> pd.DataFrame:
    rows = []
    for model, condition in itertools.product(("IDEFICS", "BLIP-2"), ("baseline", "contextual")):
        for metric in ("BLEU-1", "CIDEr"):
            rows.append({"model": model, "condition": condition, "metric": metric, "authors": 0.3, "paper": 0.3,
                         "corrected_all_rows": 0.4, "ci_low": 0.37, "ci_high": 0.43})
    return pd.DataFrame(rows)


def pairwise_matrix() -> pd.DataFrame:
    names = ["Shopping", "Travel", "News", "Health"]
    values = np.array([[np.nan, 0.79, 0.62, 0.95], [0.79, np.nan, 0.70, 0.55], [0.62, 0.70, np.nan, 0.80],
                       [0.95, 0.55, 0.80, np.nan]])
    return pd.DataFrame(values, index=names, columns=names)


def entity_rates() -> pd.DataFrame:
    return pd.DataFrame([{"entity": e, "context": c, "per_answer": 0.02 * (k + 1) + 0.1 * (e == "any entity"),
                          "ci_low": 0.01 * (k + 1), "ci_high": 0.03 * (k + 1) + 0.1 * (e == "any entity")}
                         for e in ("PERSON", "ORG", "any entity") for k, c in enumerate(CONTEXTS)])


def similarity() -> tuple[pd.DataFrame, pd.DataFrame]:
    summary = pd.DataFrame([("Human", "human", 0.32), ("IDEFICS", "baseline", 0.39), ("IDEFICS", "contextual", 0.41),
                            ("BLIP-2", "baseline", 0.26), ("BLIP-2", "contextual", 0.37)],
                           columns=["source", "condition", "mean"])
    summary = summary.assign(ci_low=summary["mean"] - 0.01, ci_high=summary["mean"] + 0.01)
    return summary, pd.DataFrame({"source": ["IDEFICS", "BLIP-2"], "stars": ["*", "***"]})


FIGURES = {
    "stacked_shares": lambda: vizwiz_lf_figures.stacked_shares(role_mix(), title="Roles per source (%)", label_order=ROLES),
    "heatmap": lambda: vizwiz_lf_figures.heatmap(cooccurrence(), title="Role x source", xlabel="information source",
                                     ylabel="functional role"),
    "paper_agreement": lambda: vizwiz_lf_figures.paper_agreement(agreement(), title="Tables 2-3", unit="% of answers",
                                                     tolerance=registry.band("vizwiz-lf_table02_roles_by_answerability",
                                                                           decimals=0), hue="table"),
    "reference_shift": lambda: vizwiz_lf_figures.reference_shift(shift_summary(), metrics=["rouge", "meteor"],
                                                     metric_names={"rouge": "ROUGE"}, title="Reference shift"),
    "tier_distribution": lambda: afgv_figures.tier_distribution(tiers(), value="fk_grade", by="question_set",
                                                         title="FK grade by tier", ylabel="Flesch–Kincaid grade"),
    "human_eval_bars": lambda: vizwiz_lf_figures.human_eval_bars(*human_eval(), title="SIMULATED data: Fig. 2",
                                                     watermark="SIMULATED"),
    "protocol_comparison": lambda: commvqa_figures.protocol_comparison(protocol_steps(), metrics=["BLEU-1", "CIDEr"],
                                                             title="Table 1"),
    "accuracy_heatmap": lambda: commvqa_figures.accuracy_heatmap(pairwise_matrix(), title="Pairwise accuracy"),
    "rates_by_context": lambda: commvqa_figures.rates_by_context(entity_rates(), value="per_answer", group="entity",
                                                       title="Entities", xlabel="per answer"),
    "description_similarity_bars": lambda: commvqa_figures.description_similarity_bars(*similarity(), title="Fig. 4"),
}


@pytest.fixture
def drawn(request):
    fig = FIGURES[request.param]()
    yield fig
    plt.close(fig)


def simulate(colours, cvd_type):
    return cspace_convert(np.array([to_rgb(c) for c in colours]),
                          {"name": "sRGB1+CVD", "cvd_type": cvd_type, "severity": 100}, "sRGB1").clip(0, 1)


@pytest.mark.parametrize("cvd_type", style.CVD_TYPES)
@pytest.mark.parametrize("n", sorted(style.CVD_MIN_DELTA_E))
def test_first_colours_stay_apart_under_colour_vision_deficiencies(n, cvd_type):
    """The first n colours, as a deuteranope, protanope or tritanope sees them, differ by at least the
    stated CAM02-UCS distance (n = 8 is the most categories a figure uses: the functional roles)."""
    seen = simulate(style.PALETTE[:n], cvd_type)
    nearest = min(deltaE(a, b) for a, b in itertools.combinations(seen, 2))
    assert nearest >= style.CVD_MIN_DELTA_E[n], f"{cvd_type}: nearest pair of the first {n} colours at {nearest:.1f}"


def test_palette_covers_every_figure_and_each_colour_has_a_second_cue():
    assert len(style.PALETTE) == len(ROLES) == max(style.CVD_MIN_DELTA_E)
    assert len(set(style.PALETTE)) == len(style.PALETTE)
    assert len(set(style.HATCHES)) == len(set(style.MARKERS)) == len(style.PALETTE)
    with pytest.raises(ValueError, match="palette"):
        style.colours(len(style.PALETTE) + 1)


def test_text_colour_on_any_fill_reaches_the_minimum_contrast():
    for fill in [*style.PALETTE, "#808080", "#767676", "#21918c", "#ffffff", "#000000"]:
        assert contrast.contrast_ratio(contrast.text_colour_on(fill), fill) >= contrast.MIN_CONTRAST
    assert contrast.text_colour_on("#F0E442") == "black" and contrast.text_colour_on("#0072B2") == "white"
    assert contrast.contrast_ratio("black", "white") == 21.0 and contrast.contrast_ratio("#abcdef", "#abcdef") == 1.0


@pytest.mark.parametrize("drawn", list(FIGURES), indirect=True)
def test_every_figure_passes_the_contrast_check(drawn):
    assert contrast.contrast_problems(drawn) == []


def test_contrast_check_flags_white_on_yellow_and_a_faint_watermark():
    fig, ax = plt.subplots()
    ax.bar([0, 1], [1, 1], color=["#F0E442", "#0072B2"])
    ax.text(0, 0.5, "12", color="white", ha="center")  # 1.2:1 on yellow
    ax.text(1, 0.5, "34", color="white", ha="center")  # 5.3:1 on blue: fine
    fig.text(0.5, 0.5, "SIMULATED", fontsize=60, color="0.5", alpha=0.18, ha="center", rotation=30)
    ax.text(0.5, 1.1, "", color="white")  # empty: ignored
    ax.text(0.5, 1.2, "hidden", color="white", visible=False)  # not drawn: ignored
    problems = contrast.contrast_problems(fig)
    plt.close(fig)
    assert len(problems) == 2
    assert problems[0].startswith("text '12': #ffffff on #f0e442 has contrast")
    assert problems[1].startswith("text 'SIMULATED'") and "below 4.5:1" in problems[1]


def test_contrast_check_reads_heatmap_cells_and_skips_hidden_axes():
    fig, (ax, hidden) = plt.subplots(1, 2)
    ax.pcolormesh([[0.0, 1.0]], cmap="viridis")
    ax.text(0.5, 0.5, "dark cell", color="black")  # black on viridis' darkest purple
    hidden.set_title("white title", color="white")
    hidden.set_visible(False)
    problems = contrast.contrast_problems(fig)
    plt.close(fig)
    assert len(problems) == 1 and problems[0].startswith("text 'dark cell': #000000 on #440154")


def test_contrast_check_leaves_the_saved_figure_unchanged(tmp_path):
    fig = FIGURES["stacked_shares"]()
    fig.savefig(tmp_path / "before.png")
    contrast.contrast_problems(fig)
    fig.savefig(tmp_path / "after.png")
    plt.close(fig)
    assert (tmp_path / "before.png").read_bytes() == (tmp_path / "after.png").read_bytes()


def test_clipped_leaves_out_only_the_far_outlier():
    values = pd.Series([1.0, 2, 2, 3, 3, 3, 4, 4, 5, 9, 197.2])
    clip = axes.clipped(values)
    assert (clip.n_below, clip.n_above, clip.largest, clip.smallest) == (0, 1, 197.2, 1.0)
    assert 9 < clip.high < 197.2 and clip.low < 1
    assert clip.note() == f"1 value above {clip.high:.1f} not shown (largest 197.2)"
    assert axes.clipped(values[:-1]).n_clipped == 0  # no far outlier: the whole range, padded
    assert axes.clipped(values[:-1]).note() == ""


def test_clipped_fences_come_from_the_widest_box():
    """A value that is far out only for a narrow box stays on the axis when a wider box reaches it."""
    values = pd.Series([0.0, 1, 1, 1, 2] + [0.0, 10, 20, 30, 40])
    groups = ["narrow"] * 5 + ["wide"] * 5
    assert axes.clipped(values, groups=groups).n_clipped == 0
    assert axes.clipped(values[:5]).n_clipped == 0 and axes.clipped(pd.Series([0.0, 1, 1, 1, 2, 40])).n_above == 1


def test_tier_distribution_cuts_the_axis_and_says_so():
    frame = tiers()
    fig = FIGURES["tier_distribution"]()
    clip = axes.clipped(frame["fk_grade"], groups=[frame["question_set"], frame["tier"]])
    notes = [t.get_text() for t in fig.texts]
    ticks = [t.get_text() for ax in fig.axes for t in ax.get_xticklabels()]
    low, high = fig.axes[0].get_ylim()
    plt.close(fig)
    assert clip.n_above == 3 and clip.largest == 197.2 and (low, high) == (clip.low, clip.high)
    assert any(clip.note() in t for t in notes)
    assert ticks == ["simplified", "baseline", "complex"] + [f"{t}\n↑ 1 off scale" for t in ("simplified", "baseline",
                                                                                              "complex")]
    given = afgv_figures.tier_distribution(frame, value="fk_grade", by="question_set", title="t", ylabel="y", clip=clip)
    assert given.axes[0].get_ylim() == (clip.low, clip.high)
    plt.close(given)
    unclipped = afgv_figures.tier_distribution(frame, value="fk_grade", by="question_set", title="t", ylabel="y", clip=False)
    assert unclipped.axes[0].get_ylim()[1] > 197
    plt.close(unclipped)


def test_simulated_mark_is_a_banner_and_a_label_in_every_panel():
    fig = FIGURES["human_eval_bars"]()
    banner = [t for t in fig.texts if t.get_text().startswith("SIMULATED DATA")]
    band = [a for a in fig.artists if to_rgb(a.get_facecolor()) == to_rgb(style.BANNER_FACE)]
    panels = [[t for t in ax.texts if t.get_text() == "SIMULATED"] for ax in fig.axes]
    assert len(banner) == 1 and banner[0].get_fontsize() >= 14 and banner[0].get_alpha() is None
    assert len(band) == 1 and band[0].get_width() == 1 and band[0].get_alpha() is None  # solid, full width
    assert all(len(p) == 1 and p[0].get_bbox_patch() is not None for p in panels)
    assert contrast.contrast_problems(fig) == []
    plt.close(fig)
    plain = vizwiz_lf_figures.human_eval_bars(*human_eval(), title="human data")
    assert not [t for t in plain.texts if "SIMULATED" in t.get_text()]
    plt.close(plain)


def test_bars_carry_a_distinct_hatch_per_series_also_in_the_legend():
    fig = FIGURES["stacked_shares"]()
    ax = fig.axes[0]
    hatches = [c.patches[0].get_hatch() or "" for c in ax.containers]
    legend = [h.get_hatch() or "" for h in fig.legends[0].get_patches()]
    plt.close(fig)
    assert len(set(hatches)) == len(ROLES) and legend == hatches
    for name, n in (("rates_by_context", len(CONTEXTS)), ("human_eval_bars", 3), ("description_similarity_bars", 3)):
        fig = FIGURES[name]()
        legend = fig.legends[0] if fig.legends else fig.axes[0].get_legend()
        assert len({h.get_hatch() or "" for h in legend.get_patches()}) == n, name
        plt.close(fig)


def test_lines_and_points_carry_a_distinct_marker_per_series():
    fig = FIGURES["reference_shift"]()
    lines = [line for line in fig.axes[0].get_lines() if line.get_marker() not in ("None", "_", "", None)]
    by_source = {}
    for line in lines:
        by_source.setdefault(to_rgb(line.get_color()), set()).add(line.get_marker())
    plt.close(fig)
    assert len(by_source) == len(SOURCES) and all(len(m) == 1 for m in by_source.values())
    assert len({next(iter(m)) for m in by_source.values()}) == len(SOURCES)
    fig = FIGURES["paper_agreement"]()
    markers = {str(c.get_label()): c.get_paths()[0].vertices.shape for c in fig.axes[0].collections[1:]}
    plt.close(fig)
    assert set(markers) == {"Table 2", "Table 3", "outside tolerance"}
    assert markers["Table 2"] != markers["Table 3"]


def test_figure_files_use_style_is_the_plots_style():
    figure_files.use_style()
    assert plt.rcParams["hatch.linewidth"] == 0.8
    cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    assert [to_rgb(c) for c in cycle] == [to_rgb(c) for c in style.PALETTE]


def test_figure_functions_live_in_their_papers():
    """Core plots hold the shared style only; each paper's figure functions are in its ``figures`` module."""
    import importlib
    import pathlib

    package = pathlib.Path(importlib.import_module("vqalib.core.plots").__file__).parent
    assert {p.stem for p in package.glob("*.py")} == {"__init__", "style", "contrast", "axes"}
    homes = {"vizwiz_lf": ["stacked_shares", "heatmap", "paper_agreement", "reference_shift", "human_eval_bars"],
             "afgv": ["tier_distribution"],
             "commvqa": ["protocol_comparison", "accuracy_heatmap", "rates_by_context", "description_similarity_bars"]}
    for paper, names in homes.items():
        module = importlib.import_module(f"vqalib.papers.{paper}.figures")
        for name in names:
            assert getattr(module, name).__module__ == module.__name__


def test_figures_use_matplotlibs_bundled_fonts_whatever_the_system_or_font_cache_lists(monkeypatch):
    """A system DejaVu Sans (Debian's fonts-dejavu, installed with chromium) listed by the user's font cache, or a
    cache rebuilt while matplotlib's own fonts were missing, changed the font subsets embedded in the PDFs: every
    font must resolve to the files matplotlib ships."""
    from pathlib import Path

    import matplotlib
    from matplotlib import font_manager

    from vqalib.core.plots.style import bundled_fonts_only

    bundled = str(Path(matplotlib.get_data_path(), "fonts", "ttf"))
    manager = font_manager.fontManager
    system_like = [font_manager.FontEntry(fname="/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", name="DejaVu Sans",
                                          style="normal", variant="normal", weight=400, stretch="normal", size="scalable")]
    monkeypatch.setattr(manager, "ttflist", system_like)  # a cache that lists only a system copy
    font_manager.FontManager._findfont_cached.cache_clear()
    try:
        bundled_fonts_only()
        found = font_manager.findfont(font_manager.FontProperties(family="DejaVu Sans"))
        assert found.startswith(bundled) and all(f.fname.startswith(bundled) for f in manager.ttflist)
    finally:
        font_manager.FontManager._findfont_cached.cache_clear()


def test_every_committed_figure_fits_the_display_width_so_its_9_pt_text_stays_readable():
    from PIL import Image

    from vqalib.core.io import project_root
    from vqalib.core.plots.style import DISPLAY_WIDTH_IN

    pngs = sorted((project_root() / "figures").glob("*.png"))
    assert pngs
    for path in pngs:
        with Image.open(path) as image:
            dpi = image.info["dpi"][0]
            assert image.size[0] / dpi <= DISPLAY_WIDTH_IN + 0.01, (path.name, image.size, dpi)
