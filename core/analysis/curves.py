"""Statistics from the metrics over training (the curves, not the final row of a run): paired differences
against the reference, time to solve, the size of each step's update and the step-size ratio of seeds 000/003,
and the final-weight metrics beside their matched step-0 and random-init baselines."""

import numpy as np
import pandas as pd

from . import findings, stats


def paired_difference(curves: pd.DataFrame, reference: str = "standard") -> pd.DataFrame:
    """Each run's curve minus the reference's run of the same task, seed and step (the same training batches:
    a seed fixes the data), for every other parameterization. curves: attention, task, seed, run_id, step,
    value; returns the same columns with value = difference. Band it over seeds as any curve."""
    keys = ["task", "seed", "step"]
    ref = curves[curves.attention == reference][keys + ["value"]].rename(columns={"value": "reference"})
    others = curves[curves.attention != reference].merge(ref, on=keys)
    return others.assign(value=others.value - others.reference).drop(columns="reference")


def joined_wall_time(wall: pd.DataFrame) -> pd.DataFrame:
    """wall_time rows (run_id, step, value), each run's readings on one clock. A run extended from a shorter cap
    before the training carried its clock over (core.training.train) restarted it at 0, so from each fall on a
    reading adds the one before the fall: the time the shorter cap had taken, to the nearest kept reading."""
    wall = wall.sort_values(["run_id", "step"])
    before = wall.groupby("run_id").value.shift()
    offset = before.where(wall.value < before, 0.0).groupby(wall.run_id).cumsum()
    return wall.assign(value=wall.value + offset)


def time_to_solve(metrics: pd.DataFrame) -> pd.Series:
    """Per run_id: the first evaluation step with validation accuracy >= findings.SOLVED (absent if never)."""
    v = metrics[(metrics.metric == "val_acc") & (metrics.value >= findings.SOLVED)]
    return v.groupby("run_id").step.min()


def update_sizes(metrics: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """Mean relative update per step of the effective W_QK and W_OV: rows matrix, attention, lr, step, value
    (mean over seeds, layers and the runs' tasks). Each (attention, lr) runs up to the earliest last step of its
    runs: a mean over runs that drop out as they solve would jump wherever one stops."""
    m = metrics[metrics.metric.str.startswith("update_")]
    if m.empty:
        return pd.DataFrame(columns=["matrix", "attention", "lr", "step", "value"])
    m = m.assign(matrix=m.metric.str.slice(7, 9).map({"qk": "W_QK", "ov": "W_OV"}))
    m = m.merge(runs[["run_id", "attention", "lr"]], on="run_id")
    end = m.groupby("run_id").step.transform("max")
    m = m[m.step <= end.groupby([m.attention, m.lr]).transform("min")]
    return m.groupby(["matrix", "attention", "lr", "step"], as_index=False).value.mean()


def step_size(metrics: pd.DataFrame, runs: pd.DataFrame, name: str = "stacked", ref: str = "standard") -> dict | None:
    """Seeds 000/003's numbers: per lr, how far `name`'s effective W_QK moves per step as a multiple of `ref`'s
    (ratio: a Series by lr; pairs: the seed pairs behind each), and per task the ratio of their best lrs
    (best_ratio: ref's over name's); None where no pair has both. A pair is the two runs of one task, seed and lr
    (the same batches), compared over the steps both trained (neither had stopped); per lr the geometric mean."""
    qk = metrics[metrics.metric.str.startswith("update_qk.")]
    qk = qk.groupby(["run_id", "step"], as_index=False).value.mean()  # mean over layers
    qk = qk.merge(runs[["run_id", "attention", "task", "lr", "seed"]], on="run_id")
    keys = ["task", "lr", "seed", "step"]
    both = qk[qk.attention == name][[*keys, "value"]].merge(qk[qk.attention == ref][[*keys, "value"]], on=keys)
    per_pair = both.groupby(["task", "lr", "seed"])[["value_x", "value_y"]].mean()
    log_ratio = np.log(per_pair.value_x / per_pair.value_y).replace([np.inf, -np.inf], np.nan).dropna()
    if log_ratio.empty:
        return None
    best = findings.best_lr(runs)
    b = best[best.attention.isin([name, ref])].pivot_table(index="task", columns="attention", values="lr")
    best_ratio = (b[ref] / b[name]).dropna() if name in b and ref in b else pd.Series(dtype=float)
    by_lr = log_ratio.groupby(level="lr")
    return {"name": name, "ref": ref, "ratio": np.exp(by_lr.mean()), "pairs": by_lr.size(), "best_ratio": best_ratio}


def matched_baselines(
    trained: pd.DataFrame, init: pd.DataFrame, random: pd.DataFrame, runs: pd.DataFrame, metric: str
) -> pd.DataFrame:
    """Per (task, attention): the metric after training (mean over layers and heads, then over seeds), at each
    run's own step 0, the paired change with its 95% t interval over seeds, the parameterization's own
    random-init mean and std, and whether the metric holds by construction there (its random std is 0)."""
    per_run = lambda df: df[df.metric == metric].groupby("run_id").value.mean()  # noqa: E731
    t, s0 = per_run(trained), per_run(init) if not init.empty else pd.Series(dtype=float)
    rows = []
    for (task, name), g in runs.groupby(["task", "attention"], sort=False):
        ids = [r for r in g.run_id if r in t.index]
        if not ids:
            continue
        paired = [t[r] - s0[r] for r in ids if r in s0.index]
        change = stats.mean_ci(paired) if paired else (np.nan, np.nan, np.nan)
        rr = random[(random.attention == name) & (random.metric == metric)] if not random.empty else random
        rows.append(
            {
                "task": task,
                "attention": name,
                "seeds": len(ids),
                "trained": t[ids].mean(),
                "trained_std": t[ids].std(),
                "step0": s0.reindex(ids).mean(),
                "change": change[0],
                "change_lo": change[1],
                "change_hi": change[2],
                "random_init": rr["mean"].iloc[0] if len(rr) else np.nan,
                "random_init_std": rr["std"].iloc[0] if len(rr) else np.nan,
                "by_construction": bool(rr.by_construction.iloc[0]) if len(rr) else False,
            }
        )
    return pd.DataFrame(rows)
