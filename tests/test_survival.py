"""Kaplan-Meier and the log-rank test against scipy's implementations, on synthetic censored data."""

import math
import warnings

import numpy as np
import pytest
from scipy import stats  # a dev requirement (requirements-dev.txt): the reference

from core.analysis.survival import kaplan_meier, km_median, logrank


def censored(seed: int, n: int = 20, cap: float = 1000.0):
    rng = np.random.default_rng(seed)
    t = np.round(rng.exponential(rng.uniform(200, 900), n) / 50) * 50 + 50  # evaluations every 50 steps: ties
    return np.minimum(t, cap), t <= cap


@pytest.mark.parametrize("seed", range(12))
def test_kaplan_meier_and_its_interval_match_scipy(seed):
    t, e = censored(seed)
    km = kaplan_meier(t, e)
    ref = stats.ecdf(stats.CensoredData(uncensored=t[e], right=t[~e])).sf
    assert np.allclose(km["surv"], ref.evaluate(km["time"]))
    with warnings.catch_warnings():  # scipy warns where S is 0 or 1 and the interval undefined, as ours is there
        warnings.simplefilter("ignore", RuntimeWarning)
        ci = ref.confidence_interval(0.95, method="log-log")
    finite = km["surv"] > 0
    assert np.allclose(km["lo"][finite], ci.low.evaluate(km["time"])[finite], equal_nan=True)
    assert np.allclose(km["hi"][finite], ci.high.evaluate(km["time"])[finite], equal_nan=True)
    median, lo, hi = km_median(t, e)
    assert lo <= median <= hi
    for got, curve in ((median, ref), (lo, ci.low), (hi, ci.high)):  # the first time each falls to one half
        below = km["time"][curve.evaluate(km["time"]) <= 0.5]
        assert got == (below[0] if len(below) else math.inf)


def test_the_median_is_infinite_when_fewer_than_half_solve():
    median, lo, hi = km_median([100, 6400, 6400, 6400], [True, False, False, False])
    assert median == math.inf and hi == math.inf and lo == 100


@pytest.mark.parametrize("seed", range(12))
def test_logrank_matches_scipy(seed):
    (t1, e1), (t2, e2) = censored(seed), censored(seed + 100, n=15)
    ref = stats.logrank(
        stats.CensoredData(uncensored=t1[e1], right=t1[~e1]), stats.CensoredData(uncensored=t2[e2], right=t2[~e2])
    )
    assert logrank(t1, e1, t2, e2) == pytest.approx(ref.pvalue, rel=1e-6)
