"""The statistical primitives core.analysis.findings builds its verdicts on. Pure numpy (the app ships no scipy).

Intervals: Wilson for proportions, Welch t for means (Welch-Satterthwaite df), t for a mean. Tests: Fisher's
exact for two counts, Welch's t for two means, TOST for equivalence, Holm's step-down for a family.
"""

import math

import numpy as np


def wilson(k: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score 95% interval for k successes in n trials."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def fisher_exact(k1: int, n1: int, k2: int, n2: int) -> float:
    """Two-sided Fisher exact p for the 2x2 table (k1 of n1) vs (k2 of n2)."""
    total, k = n1 + n2, k1 + k2

    def prob(a: int) -> float:
        return math.comb(n1, a) * math.comb(n2, k - a) / math.comb(total, k)

    observed = prob(k1)
    support = range(max(0, k - n2), min(k, n1) + 1)
    return min(1.0, sum(prob(a) for a in support if prob(a) <= observed * (1 + 1e-9)))


def _t_pdf(x: float, df: float) -> float:
    log_c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    return float(np.exp(log_c - (df + 1) / 2 * np.log1p(np.asarray(x) ** 2 / df)))


def t_cdf(x: float, df: float) -> float:
    """Student t CDF by integrating its density from 0 (trapezoids on a fine grid)."""
    if math.isinf(x):
        return 1.0 if x > 0 else 0.0
    grid = np.linspace(0.0, abs(x), 4001)
    log_c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    pdf = np.exp(log_c - (df + 1) / 2 * np.log1p(grid**2 / df))
    area = float(np.sum((pdf[1:] + pdf[:-1]) * np.diff(grid)) / 2)
    return min(1.0, max(0.0, 0.5 + math.copysign(area, x)))


def t_quantile(q: float, df: float) -> float:
    """The q-quantile (q > 0.5) of Student's t with df degrees of freedom, by Newton's method from 0: the CDF is
    concave for x > 0, so each step lands at or below the root and the iterates rise to it without overshoot."""
    x = 0.0
    for _ in range(100):
        step = (q - t_cdf(x, df)) / _t_pdf(x, df)
        x += step
        if step < 1e-9 * max(1.0, x):
            break
    return x


def welch(a, b) -> tuple[float, float, float]:
    """mean(a) - mean(b), its standard error and the Welch-Satterthwaite df."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    na, nb = len(a), len(b)
    va, vb = np.var(a, ddof=1) / na, np.var(b, ddof=1) / nb
    se = math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (na - 1) + vb**2 / (nb - 1)) if se > 0 else float(na + nb - 2)
    return float(np.mean(a) - np.mean(b)), se, float(df)


def welch_ci(a, b, level: float = 0.95) -> tuple[float, float, float, float]:
    """mean(a) - mean(b), its CI at `level` (Welch t), and the df."""
    diff, se, df = welch(a, b)
    if se == 0:
        return diff, diff, diff, df
    half = t_quantile(1 - (1 - level) / 2, df) * se
    return diff, diff - half, diff + half, df


def welch_p(a, b) -> float:
    """Two-sided Welch t-test p for mean(a) = mean(b)."""
    diff, se, df = welch(a, b)
    if se == 0:
        return 1.0 if diff == 0 else 0.0
    return min(1.0, 2 * (1 - t_cdf(abs(diff) / se, df)))


def tost_p(a, b, margin: float) -> float:
    """Two one-sided Welch tests of |mean(a) - mean(b)| < margin: the larger one-sided p. p < alpha exactly
    when the (1 - 2 alpha) interval lies inside the margin (TOST at alpha: a 90% interval for alpha = 5%)."""
    diff, se, df = welch(a, b)
    if se == 0:
        return 0.0 if abs(diff) < margin else 1.0
    p_low = 1 - t_cdf((diff + margin) / se, df)  # H0: diff <= -margin
    p_high = t_cdf((diff - margin) / se, df)  # H0: diff >= +margin
    return max(p_low, p_high)


def holm(p_values) -> np.ndarray:
    """Holm's step-down adjusted p-values (family-wise error control), in the input order; NaN stays NaN."""
    p = np.asarray(p_values, float)
    out = np.full_like(p, np.nan)
    idx = np.flatnonzero(~np.isnan(p))
    m = len(idx)
    order = idx[np.argsort(p[idx], kind="stable")]
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out


def mean_ci(values, level: float = 0.95) -> tuple[float, float, float]:
    """Mean and its t interval (n - 1 df); the interval is the mean itself when n < 2."""
    x = np.asarray(values, dtype=float)
    m = float(np.mean(x))
    if len(x) < 2:
        return m, m, m
    half = t_quantile(1 - (1 - level) / 2, len(x) - 1) * float(np.std(x, ddof=1)) / math.sqrt(len(x))
    return m, m - half, m + half


def p_text(p: float, alpha: float = 0.05) -> str:
    """A p-value in two significant digits, with more where two would round onto the decision line (0.0496 is
    '0.0496', not '0.05', when the rule is p < 0.05); 'no test' where none was made (NaN)."""
    if p is None or not np.isfinite(p):
        return "no test"
    text = f"{p:.2g}"
    return f"{p:.3g}" if float(text) == alpha and p != alpha else text
