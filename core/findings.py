"""Sentences that state a finding, computed from the runs (never typed in). Pure pandas."""

import numpy as np
import pandas as pd

SOLVED = 0.95  # eval accuracy that counts as solving a task
LOSS_TOL = 0.01  # absolute eval-loss difference too small to matter (both near zero)


def summary(runs: pd.DataFrame, tasks: list[str], attentions: list[str]) -> pd.DataFrame:
    """Per (task, attention) over the finished runs' seeds: counts, eval loss and accuracy mean and std,
    parameter counts and seconds per step, in the given task and parameterization order."""
    ok = runs[runs.status == "ok"]
    if ok.empty:
        return pd.DataFrame()
    order = {n: i for i, n in enumerate([*tasks, *attentions])}
    ok = ok.sort_values(["task", "attention"], key=lambda col: col.map(order), kind="stable")
    out = ok.groupby(["task", "attention"], sort=False).agg(
        seeds=("seed", "count"),
        eval_loss=("eval_loss", "mean"),
        eval_loss_std=("eval_loss", "std"),
        eval_acc=("eval_acc", "mean"),
        eval_acc_std=("eval_acc", "std"),
        params_attention=("params_attention", "first"),
        params_total=("params_total", "first"),
        seconds_per_step=("seconds_per_step", "mean"),
    )
    return out.fillna({"eval_loss_std": 0.0, "eval_acc_std": 0.0}).reset_index()


def per_config(runs: pd.DataFrame) -> pd.DataFrame:
    """summary() indexed by (attention, task), with the short names compare_to uses."""
    s = summary(runs, sorted(set(runs.task)), sorted(set(runs.attention)))
    short = {
        "eval_loss": "loss",
        "eval_loss_std": "loss_std",
        "eval_acc": "acc",
        "eval_acc_std": "acc_std",
        "seeds": "n",
    }
    return s.rename(columns=short).set_index(["attention", "task"])


def same_within_noise(a: pd.Series, b: pd.Series) -> bool:
    """Mean eval losses differ by less than two standard errors of the difference (or LOSS_TOL)."""
    se = np.sqrt(a.loss_std**2 / max(a.n, 1) + b.loss_std**2 / max(b.n, 1))
    return abs(a.loss - b.loss) <= max(2 * se, LOSS_TOL)


def compare_to(runs: pd.DataFrame, reference: str = "standard") -> pd.DataFrame:
    """Per (attention, task): same as the reference within seed noise? solved?"""
    stats = per_config(runs)
    rows = []
    for (name, task), s in stats.iterrows():
        if (reference, task) not in stats.index or name == reference:
            continue
        ref = stats.loc[(reference, task)]
        rows.append(
            {
                "attention": name,
                "task": task,
                "same": same_within_noise(s, ref),
                "worse": s.loss > ref.loss,
                "solved": s.acc >= SOLVED,
                "ref_solved": ref.acc >= SOLVED,
            }
        )
    return pd.DataFrame(rows)


def sentences(runs: pd.DataFrame, order: list[str], reference: str = "standard") -> list[str]:
    """One sentence per parameterization: how it compares with the reference, task by task."""
    cmp = compare_to(runs, reference)
    if cmp.empty:
        return []
    out = []
    for name in [n for n in order if n in set(cmp.attention)]:
        c = cmp[cmp.attention == name]
        n_same, n = int(c.same.sum()), len(c)
        line = f"**{name}** reaches the same final eval loss as {reference} within seed noise on {n_same}/{n} tasks"
        worse = c[~c.same & c.worse].task.tolist()
        better = c[~c.same & ~c.worse].task.tolist()
        if worse:
            line += f"; worse on {', '.join(worse)}"
        if better:
            line += f"; better on {', '.join(better)}"
        unsolved = c[~c.solved & c.ref_solved].task.tolist()
        if unsolved:
            line += f"; below {SOLVED:.0%} accuracy where {reference} is above it on {', '.join(unsolved)}"
        out.append(line + ".")
    return out
