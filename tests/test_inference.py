"""vqalib.core.inference: the t interval and significance marks the papers share."""

import math

import numpy as np
import pytest
from scipy import stats as scistats

from vqalib.core import inference
from vqalib.papers.commvqa import context
from vqalib.papers.vizwiz_lf import human_eval, table4


@pytest.mark.parametrize("p, three, two, fig4", [
    (0.0005, "***", "**", "***"), (0.005, "**", "**", "**"), (0.03, "*", "*", "*"), (0.2, "", "", "n.s."),
    (0.001, "**", "**", "**"), (0.05, "", "", "n.s."), (float("nan"), "", "", "n.s."), (None, "", "", "n.s.")])
def test_each_paper_keeps_its_marks(p, three, two, fig4):
    assert human_eval.stars(p) == three  # VizWiz-LF Fig. 2
    assert table4.significance_stars(p if p is not None else float("nan")) == two  # VizWiz-LF Table 18
    assert context.stars(p) == fig4  # CommVQA Fig. 4


def test_mean_ci_is_the_t_interval_and_handles_no_spread():
    rng = np.random.default_rng(0)
    v = rng.normal(size=30)
    mean, sd, lo, hi = inference.mean_ci(v, confidence=0.9)
    ref = scistats.ttest_1samp(v, 0.0).confidence_interval(0.9)
    assert mean == v.mean() and sd == v.std(ddof=1)
    assert lo == pytest.approx(ref.low) and hi == pytest.approx(ref.high)
    assert inference.mean_ci([2.0, 2.0]) == (2.0, 0.0, 2.0, 2.0)
    one = inference.mean_ci([1.0])
    assert one[0] == 1.0 and math.isnan(one[1]) and one[2] == one[3] == 1.0
    assert all(math.isnan(x) for x in inference.mean_ci([]))


def test_bootstrap_mean_cis_are_scipys_bit_for_bit():
    rng = np.random.default_rng(1)
    samples = [rng.random(n) for n in (2, 9, 9, 600, 600, 31)] + [rng.integers(0, 3, 50).astype(float)]
    got = inference.bootstrap_mean_cis(samples, n_resamples=400, confidence=0.9, seed=4)
    for sample, (low, high) in zip(samples, got):
        ci = scistats.bootstrap((sample,), np.mean, n_resamples=400, confidence_level=0.9, method="percentile",
                                random_state=np.random.default_rng(4)).confidence_interval
        assert (low, high) == (ci.low, ci.high)  # exactly: one index matrix per size, the same draws
    assert inference.bootstrap_mean_cis([], n_resamples=10).shape == (0, 2)
