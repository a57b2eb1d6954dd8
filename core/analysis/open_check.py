"""Is "still improving at the cap" a sign that more steps help? The open rule (endpoints.is_open over
findings.still_improving) checked against what a raised cap showed next.

A run trained to a cap holds, in its curve, the run to every lower cap C: the schedule does not depend on the cap,
so its first C steps are that run's. So every run a raised cap trained past a lower cap C unsolved is read at C
twice: by the rule, from its stored curve up to C (recorder.late_trend, as in training, but on the evaluations
the store keeps: the kept one nearest 80% of C, and C), and by what followed: solved by 2C, the next cap, or not.
A cell here is one lr of one point at C, open as is_open reads it; what followed is whether any of its seeds
censored at C solved by 2C.
"""

import pandas as pd

from ..training.recorder import late_trend
from . import endpoints, findings, stats

FIRST_CAP = 6400  # the protocol's lowest cap; a raise doubles it, so every cap is FIRST_CAP * 2^k


def lower_caps(cap: int) -> list[int]:
    """The protocol's caps below this one: FIRST_CAP, 2 FIRST_CAP, ... (none for a cap of FIRST_CAP or less)."""
    caps, c = [], FIRST_CAP
    while c < cap:
        caps.append(c)
        c *= 2
    return caps


def cell_keys(runs: pd.DataFrame) -> list[str]:
    """A cell's columns here: its point (task and size), parameterization and lr."""
    return ["task", *[c for c in findings.SIZE if c in runs.columns], "attention", "lr"]


def at_lower_caps(runs: pd.DataFrame, curves: pd.DataFrame) -> pd.DataFrame:
    """One row per (criterion run, lower cap C it trained past unsolved): its cell, C, `improving` at C (the
    rule on its curve up to C) and `solved_next` (solved, confirmed on test, by 2C). curves: tidy run_id, step,
    metric, value rows with val_loss and val_acc; a run whose curve lacks C itself is left out."""
    crit = endpoints.criterion_runs(runs)
    crit = crit[crit.status == "ok"]
    solved = findings.solved(crit)
    by_run = {rid: list(zip(g.step, g.metric, g.value)) for rid, g in curves.groupby("run_id", sort=False)}
    keys, rows = cell_keys(crit), []
    for (_, r), ok in zip(crit.iterrows(), solved):
        metrics = by_run.get(r.run_id, [])
        stop = r.stop_step if r.stop_step == r.stop_step else r.steps  # NaN: trained to its cap
        for cap in lower_caps(int(r.steps)):
            if stop <= cap or (ok and r.solve_step <= cap):
                continue  # stopped by then, or solved: not censored at this cap
            upto = [m for m in metrics if m[0] <= cap]
            if not any(s == cap and k == "val_acc" for s, k, _ in upto):
                continue
            rows.append(
                {k: r[k] for k in keys}
                | {"run_id": r.run_id, "cap": cap, "solved_next": bool(ok and r.solve_step <= 2 * cap)}
                | late_trend(upto, cap)
            )
    pairs = pd.DataFrame(rows, columns=[*keys, "run_id", "cap", "solved_next", "val_loss_drop", "val_acc_gain"])
    pairs.insert(len(keys) + 2, "improving", findings.still_improving(pairs).astype(bool))
    return pairs.drop(columns=["val_loss_drop", "val_acc_gain"])


def check(pairs: pd.DataFrame) -> pd.DataFrame:
    """The rule against what followed, for seeds (improving or not at C) and for cells (open or not at C): per
    row, the unit, what the rule said, how many, how many were followed by a seed solved by 2C, its Wilson 95%
    interval, and p: Fisher's exact test of the unit's two rows (the same on both)."""
    keys = [k for k in cell_keys(pairs) if k in pairs.columns]
    cells = pairs.groupby([*keys, "cap"], dropna=False).agg(
        censored=("improving", "size"), improving=("improving", "sum"), solved_next=("solved_next", "any")
    )
    cells["open"] = [endpoints.is_open(cell) for cell in cells.itertuples()]
    rows = []
    for unit, said, flag, hit in (
        ("seeds", "still improving", pairs.improving, pairs.solved_next),
        ("seeds", "not improving", ~pairs.improving, pairs.solved_next),
        ("cells", "open", cells.open, cells.solved_next),
        ("cells", "closed", ~cells.open, cells.solved_next),
    ):
        n, k = int(flag.sum()), int((flag & hit).sum())
        lo, hi = stats.wilson(k, n)
        rows.append({"unit": unit, "said": said, "n": n, "solved_next": k, "lo": lo, "hi": hi})
    out = pd.DataFrame(rows)
    for unit in ("seeds", "cells"):
        (a, b) = out[out.unit == unit].itertuples()
        out.loc[out.unit == unit, "p"] = stats.fisher_exact(a.solved_next, a.n, b.solved_next, b.n)
    return out
