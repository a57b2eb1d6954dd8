"""Sentences that state a finding, computed from the runs (never typed in). Pure pandas."""

import numpy as np
import pandas as pd

SOLVED = 0.95  # eval accuracy that counts as solving a task
LOSS_TOL = 0.01  # absolute eval-loss difference too small to matter (both near zero)


def per_config(runs: pd.DataFrame) -> pd.DataFrame:
    """Mean, std and count over seeds per (attention, task) of the finished runs."""
    ok = runs[runs.status == "ok"]
    g = ok.groupby(["attention", "task"])
    return g.agg(
        loss=("eval_loss", "mean"),
        loss_std=("eval_loss", "std"),
        acc=("eval_acc", "mean"),
        acc_std=("eval_acc", "std"),
        n=("seed", "count"),
    ).fillna(0.0)


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
