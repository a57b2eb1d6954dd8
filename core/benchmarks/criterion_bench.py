"""The criterion protocol's cost against the fixed-budget one, on one grid, side by side in one run.

Both sweep the same grid (parameterizations x lrs x seeds) into fresh temporary stores on the same workers:
- fixed: the old protocol, `steps_fixed` steps under a cosine decay to them (until="steps");
- criterion: until="solved" with a constant lr after warmup and `cap` as the cap: members stop when solved,
  lrs that can no longer be chosen stop, stopped members are sliced out of their ensembles.
Reported: member-steps trained (from each run's own steps), wall time, their ratios, the share of members
stopped before the cap, and the utilisation of the training steps against the fp32 matmul peak.
"""

import tempfile
import time
from pathlib import Path

import pandas as pd

from ..experiments import sweep
from ..experiments.flops import measured_sweep
from ..results import store as st
from ..training.config import TrainConfig


def _one(label: str, jobs, device, workers: int, utilisation: bool) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp)
        missing = {}

        def run():
            return sweep.run(store, jobs, device, workers=workers, on_job=lambda j, n: missing.update({j: n}))

        t0 = time.perf_counter()
        if utilisation:  # the matmul peak is measured around the sweep (seconds): the tests skip it
            counts, report = measured_sweep(
                run, missing, device, workers, jobs[0].train.precision, runs=lambda: st.load_runs(store)
            )
        else:
            counts, report = run(), None
        seconds = time.perf_counter() - t0
        runs = st.load_runs(store)
    stopped_early = (runs.steps_done < runs.steps).mean()
    step_utilisation = float(report.step_utilisation.iloc[0]) if report is not None else float("nan")
    return {
        "kind": "criterion",
        "protocol": label,
        "runs": counts["trained"],
        "steps": int(runs.steps.max()),
        "member_steps": int(runs.steps_done.sum()),
        "seconds": seconds,
        "stopped_early": float(stopped_early),
        "solved": int((runs.stop == "solved").sum()),
        "pruned": int((runs.stop == "pruned").sum()),
        "step_utilisation": step_utilisation,
    }


def criterion_bench(
    attentions,
    task: str,
    seeds: int,
    lrs,
    steps_fixed: int,
    cap: int,
    eval_every: int,
    device,
    workers: int,
    log=print,
    utilisation: bool = True,
    model=None,
    task_size=None,
) -> pd.DataFrame:
    """The two protocols on one grid; the criterion row carries its ratios to the fixed one."""
    fixed = TrainConfig(steps=steps_fixed, eval_every=eval_every)
    crit = TrainConfig(steps=cap, eval_every=eval_every, schedule="constant", until="solved")
    rows = []
    for label, train in (("fixed", fixed), ("criterion", crit)):
        jobs = sweep.plan(attentions, [task], seeds, train, model, lrs, task_size)
        rows.append(_one(label, jobs, device, workers, utilisation))
        r = rows[-1]
        log(f"criterion bench, {label}: {r['member_steps']:,} member-steps in {r['seconds']:.1f} s")
    table = pd.DataFrame(rows)
    base = table.iloc[0]
    table["member_steps_ratio"] = table.member_steps / base.member_steps
    table["seconds_ratio"] = table.seconds / base.seconds
    return table
