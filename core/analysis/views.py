"""The tables the pages show, aggregated here so that a page only reads and plots them.

Seed statistics of curves (curve_bands, with W&B's smoothing, ema), the Runtime page's step times per ensemble
(runtime_bars), the Learning rate page's best-lr table and solve counts (best_lr_table, solve_by_lr), the
In practice page's per-layer, per-head and encoder/decoder summaries (per_layer, per_head, by_kind, summary) and
the strongest head of each kept model (strongest_heads).
"""

import numpy as np
import pandas as pd


def ema(values: np.ndarray, alpha: float) -> np.ndarray:
    """Debiased exponential moving average as W&B/TensorBoard smooth (alpha = smoothing weight in [0, 1))."""
    if not alpha:  # no smoothing: the values themselves, exactly what the loop below gives
        return np.asarray(values, dtype=float)
    out, acc, norm = np.empty(len(values)), 0.0, 0.0
    for i, v in enumerate(values):
        acc, norm = alpha * acc + (1 - alpha) * v, alpha * norm + (1 - alpha)
        out[i] = acc / norm if norm else v
    return out


def curve_bands(df: pd.DataFrame, x: str, smoothing: float) -> pd.DataFrame:
    """df rows: attention, task, run_id, x, value. Smooth each run, then mean/std/min/max across seeds per x."""
    df = df.sort_values(x).copy()
    if smoothing:
        df["value"] = df.groupby("run_id")["value"].transform(lambda v: ema(v.to_numpy(), smoothing))
    if x == "wall_time":  # runs of one ensemble share a clock; align seeds by step index
        df["_x"] = df.groupby(["attention", "task", "step"])[x].transform("mean")
    else:
        df["_x"] = df[x]
    agg = df.groupby(["task", "attention", "_x"])["value"].agg(["mean", "std", "min", "max", "count"]).reset_index()
    return agg.rename(columns={"_x": x}).fillna({"std": 0.0})


def runtime_bars(runs: pd.DataFrame, y: str) -> pd.DataFrame:
    """Per task and parameterization: y's mean and std over ensembles, and their count. Every member of one
    ensemble (its seeds x lrs) stores the ensemble's clock, so a row per clock, not per seed, is one reading."""
    clock = ["train_seconds", "step_seconds"]
    ensembles = runs.drop_duplicates(["task", "attention", "d_model", "n_heads", "d_head", "steps", *clock])
    per = ensembles.groupby(["task", "attention"], sort=False)[y].agg(["mean", "std", "size"]).reset_index()
    return per.rename(columns={"mean": y, "size": "ensembles"}).fillna({"std": 0.0})


def best_lr_table(runs: pd.DataFrame, best: pd.DataFrame, order: list[str]) -> pd.DataFrame:
    """Each cell's best lr (best: findings.best_lr) with its mean validation loss, its seeds, and whether it sits
    at the edge of the lr grid the runs span (there the optimum may lie outside it); rows in `order`
    (tasks, then parameterizations)."""
    grid = sorted(set(runs.lr))
    rank = {n: i for i, n in enumerate(order)}
    table = best.sort_values(["task", "attention"], key=lambda c: c.map(rank))[
        ["task", "attention", "lr", "val_loss", "n"]
    ]
    table = table.rename(columns={"val_loss": "mean val loss", "n": "seeds"})
    table["at the grid's edge"] = table.lr.isin([grid[0], grid[-1]]) & (len(grid) > 1)
    return table.reset_index(drop=True)


def solve_by_lr(runs: pd.DataFrame, steps: pd.Series, best: pd.DataFrame) -> tuple[pd.DataFrame, ...]:
    """Finished runs with their steps to solve (steps: run_id -> step, NaN where never solved); per (task,
    attention, lr) how many solved of how many; and the runs at each cell's best lr."""
    ok = runs[runs.status == "ok"]
    solve = ok.assign(time_to_solve=ok.run_id.map(steps).astype(float))
    counts = solve.groupby(["task", "attention", "lr"]).time_to_solve.agg(solved="count", seeds="size").reset_index()
    at_best = solve.merge(best[["task", "attention", "lr"]], on=["task", "attention", "lr"])
    return solve, counts, at_best


def per_layer(d: pd.DataFrame, metric: str) -> pd.DataFrame:
    """d rows: attention, layer, head, value. Mean and std over heads per layer, the mean named `metric`."""
    out = d.groupby(["attention", "layer"], as_index=False)["value"].agg(["mean", "std"]).fillna(0.0)
    return out.rename(columns={"mean": metric})


def per_head(d: pd.DataFrame) -> pd.DataFrame:
    """Mean value per (attention, layer, head): over seeds or runs where several share a head."""
    return d.groupby(["attention", "layer", "head"], as_index=False)["value"].mean()


def by_kind(pretrained: pd.DataFrame, metric: str = "sym_QK") -> pd.DataFrame:
    """Per model and kind (encoder, decoder): the metric's mean and std over its layers and heads."""
    on = pretrained[pretrained.metric == metric]
    return on.groupby(["attention", "kind"])["value"].agg(["mean", "std"]).reset_index()


def summary(pretrained: pd.DataFrame) -> pd.DataFrame:
    """One row per model and kind, one column per metric: its mean over layers and heads."""
    table = pretrained.groupby(["attention", "kind", "metric"], as_index=False)["value"].mean()
    return table.pivot_table(index=["attention", "kind"], columns="metric", values="value").reset_index()


def strongest_heads(scores: pd.DataFrame, runs: pd.DataFrame, order: list[str]) -> pd.DataFrame:
    """Per kept model (scores: core.analysis.heads' table, one row per run, layer, head and metric): its
    parameterization, layers, lr and test accuracy, and the highest score of each metric over its heads, so a
    model that answers without an induction head shows it; by layers, then parameterizations in `order`."""
    if scores.empty:
        return pd.DataFrame()
    best = scores.pivot_table(index="run_id", columns="metric", values="value", aggfunc="max")
    about = runs.set_index("run_id")[["attention", "n_layers", "lr", "test_acc"]]
    table = about.join(best, how="inner").reset_index()
    rank = {n: i for i, n in enumerate(order)}
    return table.sort_values(["n_layers", "attention"], key=lambda c: c.map(rank) if c.name == "attention" else c)
