"""The statistics' primitives (Student's t, Wilson, Fisher, Welch, Holm) against tables, hand computations and
scipy's values."""

import math

import numpy as np
import pytest

from core.analysis import findings, stats


def test_t_quantiles_match_the_tables():
    for df, q975 in [(2, 4.303), (4, 2.776), (10, 2.228), (1000, 1.962)]:
        assert findings.t_quantile(0.975, df) == pytest.approx(q975, abs=2e-3)


def test_wilson_and_fisher_match_known_values():
    lo, hi = findings.wilson(2, 3)
    assert (round(lo, 3), round(hi, 3)) == (0.208, 0.939)
    assert findings.wilson(0, 5)[0] == 0 and findings.wilson(5, 5)[1] == 1
    assert findings.fisher_exact(1, 3, 2, 3) == pytest.approx(1.0)  # 1/3 vs 2/3: indistinguishable
    assert findings.fisher_exact(0, 5, 5, 5) == pytest.approx(2 / 252)  # scipy.stats.fisher_exact: 0.00794


def test_welch_interval_matches_a_hand_computation():
    a, b = np.array([1.0, 2.0, 3.0]), np.array([2.0, 4.0, 6.0, 8.0])
    diff, lo, hi, df = findings.welch_ci(a, b)
    va, vb = 1.0 / 3, np.var(b, ddof=1) / 4
    want_df = (va + vb) ** 2 / (va**2 / 2 + vb**2 / 3)
    half = findings.t_quantile(0.975, want_df) * math.sqrt(va + vb)
    assert diff == -3.0 and df == pytest.approx(want_df) and (lo, hi) == pytest.approx((-3 - half, -3 + half))


def test_stat_primitives_match_scipy():
    a, b = np.array([1.0, 2.0, 3.0]), np.array([2.0, 4.0, 6.0, 8.0])
    assert stats.welch_p(a, b) == pytest.approx(0.0999129, abs=1e-5)  # scipy.stats.ttest_ind(equal_var=False)
    assert stats.t_cdf(1.5, 4.2) == pytest.approx(0.8976596, abs=1e-6)  # scipy.stats.t.cdf
    assert list(stats.holm([0.01, 0.04, 0.03, 0.2])) == pytest.approx([0.04, 0.09, 0.09, 0.2])
