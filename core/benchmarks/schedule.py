"""A store's criterion sweeps replayed: each job's measured seconds, scheduled on the sweep's workers in three orders.

A sweep's wall time is its workers' makespan. Under the criterion, jobs differ in length by the steps their members
train, so the order they start in decides how long one core is left alone with the last job:
- flops: by work per step alone (sweep.cost), the order sweeps took before longest_first;
- history: sweep.longest_first's, with the shares of the store's other criterion sweeps (never the sweep's own);
- best: the longest measured job first, the order the measured times allow;
- bound: max(longest job, total / workers), which no order beats.
A replay, not a measurement: each job keeps the time it took beside the others as they ran. Only sweeps whose runs
all record a start at step 0 are replayed (an extension's or a resumed job's clock holds earlier parts).
"""

import heapq
import re
from dataclasses import fields

import pandas as pd

from ..experiments.sweep import criterion_shares, expected, work
from ..training.config import ModelConfig

MODEL = [f.name for f in fields(ModelConfig)]  # the runs table holds each one as a column of its own


def makespan(seconds, workers: int) -> float:
    """Wall time of jobs taken in this order, each by the first of `workers` workers free."""
    free = [0.0] * workers
    for s in seconds:
        heapq.heappush(free, heapq.heappop(free) + float(s))
    return max(free)


def _plain(v):
    return v.item() if hasattr(v, "item") else v  # numpy scalars: the configs validate Python types


def jobs_of(runs: pd.DataFrame) -> pd.DataFrame:
    """One sweep's runs as its jobs (one per task and model): measured seconds, members and work at the cap."""
    rows = []
    for _, g in runs.groupby(["task", "attention"], sort=False):
        r = g.iloc[0]
        model = ModelConfig(**{k: _plain(r[k]) for k in MODEL if k in r})
        w = work(model, int(r.steps), int(r.batch_size), len(g))
        rows.append({"task": r.task, "attention": r.attention, "seconds": g.train_seconds.max(), "work": w})
    return pd.DataFrame(rows)


def replay(runs: pd.DataFrame) -> pd.DataFrame:
    """Per replayable criterion sweep of a store (its recorded command): jobs, workers, and the makespan in seconds
    of each order (module docstring), with flops and history as ratios to best."""
    if "until" not in runs or "command" not in runs:
        runs = pd.DataFrame(columns=["until", "command"])
    crit = runs[(runs.until == "solved") & runs.command.notna()]
    rows = []
    for command, g in crit.groupby("command", sort=False):
        workers = int(m.group(1)) if (m := re.search(r"--workers (\d+)", command)) else 1
        fresh = "steps_from" in g and (g.steps_from == 0).all()
        if not fresh or workers < 2 or g[["task", "attention"]].drop_duplicates().shape[0] <= workers:
            continue  # no order to choose, or job clocks that hold earlier parts
        jobs = jobs_of(g)
        share = criterion_shares(crit[crit.command != command])
        history = pd.Series([expected(w, share, t, a) for w, t, a in zip(jobs.work, jobs.task, jobs.attention)])
        best = makespan(jobs.seconds.sort_values(ascending=False), workers)
        rows.append(
            {
                "command": command,
                "jobs": len(jobs),
                "workers": workers,
                "flops": makespan(jobs.seconds[jobs.work.sort_values(ascending=False, kind="stable").index], workers),
                "history": makespan(jobs.seconds[history.sort_values(ascending=False, kind="stable").index], workers),
                "best": best,
                "bound": max(jobs.seconds.max(), jobs.seconds.sum() / workers),
            }
        )
    out = pd.DataFrame(rows, columns=["command", "jobs", "workers", "flops", "history", "best", "bound"])
    return out.assign(flops_vs_best=out.flops / out.best, history_vs_best=out.history / out.best)
