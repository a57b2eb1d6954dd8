"""Steps to solve as a time-to-event endpoint: a run that did not solve by its cap is censored there, not a
failure at the cap and not a missing value. Pure numpy (the app ships no scipy; tests check against it).

- kaplan_meier: the survival curve S(t) = P(not yet solved after t steps) with Greenwood's variance and the
  log-log 95% interval (scipy.stats.ecdf(CensoredData).sf, method="log-log", gives the same);
- km_median: the median steps to solve and its 95% interval (Brookmeyer-Crowley: the times at which the
  interval of S crosses 0.5); inf where fewer than half of the runs solved;
- logrank: the log-rank test of two groups' curves (scipy.stats.logrank gives the same two-sided p).
"""

import math

import numpy as np

Z95 = 1.959963984540054


def kaplan_meier(durations, solved, z: float = Z95) -> dict[str, np.ndarray]:
    """At each distinct solve time t: S(t), its interval (lo, hi), runs at risk and solves at t."""
    t, e = np.asarray(durations, float), np.asarray(solved, bool)
    times = np.unique(t[e])
    at_risk = np.array([(t >= u).sum() for u in times], float)
    events = np.array([((t == u) & e).sum() for u in times], float)
    surv = np.cumprod(1 - events / at_risk)
    with np.errstate(divide="ignore", invalid="ignore"):
        greenwood = np.cumsum(events / (at_risk * (at_risk - events)))
        se = np.sqrt(greenwood) / np.abs(np.log(surv))  # of log(-log S)
        lo, hi = surv ** np.exp(z * se), surv ** np.exp(-z * se)
    done = surv == 0  # every run at risk solved: the curve and its interval are 0 from here on
    lo, hi = np.where(done, 0.0, lo), np.where(done, 0.0, hi)
    return {"time": times, "surv": surv, "lo": lo, "hi": hi, "at_risk": at_risk, "events": events}


def _first_below(times: np.ndarray, curve: np.ndarray) -> float:
    hit = np.flatnonzero(curve <= 0.5)
    return float(times[hit[0]]) if len(hit) else math.inf


def km_median(durations, solved, z: float = Z95) -> tuple[float, float, float]:
    """(median, lo, hi) steps to solve; inf where the curve (or its bound) never falls to one half."""
    if len(np.asarray(durations)) == 0:
        return math.nan, math.nan, math.nan
    km = kaplan_meier(durations, solved, z)
    # the interval's lower curve falls to one half first: the earliest median the data allow
    return (
        _first_below(km["time"], km["surv"]),
        _first_below(km["time"], km["lo"]),
        _first_below(km["time"], km["hi"]),
    )


def logrank(d1, e1, d2, e2) -> float:
    """Two-sided p of the log-rank test that two groups solve at the same rate (NaN with no solve at all)."""
    t = np.concatenate([np.asarray(d1, float), np.asarray(d2, float)])
    e = np.concatenate([np.asarray(e1, bool), np.asarray(e2, bool)])
    g = np.concatenate([np.zeros(len(d1), bool), np.ones(len(d2), bool)])
    observed = expected = variance = 0.0
    for u in np.unique(t[e]):
        risk = t >= u
        n, n1 = risk.sum(), (risk & ~g).sum()
        d, d1_ = ((t == u) & e).sum(), ((t == u) & e & ~g).sum()
        observed += d1_
        expected += d * n1 / n
        if n > 1:
            variance += d * (n1 / n) * (1 - n1 / n) * (n - d) / (n - 1)
    if variance <= 0:
        return math.nan
    chi2 = (observed - expected) ** 2 / variance
    return math.erfc(math.sqrt(chi2 / 2))  # chi-square with 1 df: P(|Z| > sqrt(chi2))
