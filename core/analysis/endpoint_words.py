"""The criterion endpoints in words: solved by the cap and steps to solve against standard (endpoints.endpoints),
for the verdict matrix, the Overview, `summary` and docs/results.md. Nothing here computes a statistic."""

import numpy as np
import pandas as pd

from . import stats
from .endpoints import is_open
from .endpoints import verdict as endpoints_verdict


def steps_text(v: float) -> str:
    """Steps to solve as said: '1,100', or 'never' past the cap."""
    return "never" if v == float("inf") else f"{v:,.0f}"


def cell(row) -> str:
    """A criterion cell's text in the verdict matrix: solved k/n where the counts differ, else the ratio of the
    Kaplan-Meier medians of steps to solve ('1.5× steps')."""
    if row.solved != row.ref_solved or row.seeds != row.ref_seeds or not np.isfinite(row.median_steps):
        return f"{row.solved}/{row.seeds}" + (" open" if is_open(row) else "")
    return f"{row.median_steps / row.ref_median:.2g}× steps"


def hover(row) -> str:
    return (
        f"{row.attention} vs standard on {row.task}, to the criterion (cap {row.cap:,}): "
        f"{endpoints_verdict(row)}<br>solved by the cap {row.solved}/{row.seeds} vs "
        f"{row.ref_solved:.0f}/{row.ref_seeds:.0f} (Fisher, Holm p {stats.p_text(row.fisher_holm)})<br>"
        f"steps to solve, median {steps_text(row.median_steps)} [{steps_text(row.median_lo)}, "
        f"{steps_text(row.median_hi)}] vs "
        f"{steps_text(row.ref_median)} (log-rank, Holm p {stats.p_text(row.logrank_holm)})<br>lr {row.lr:g}"
    )


def sentences(table: pd.DataFrame) -> list[str]:
    """One sentence per criterion cell against standard, from endpoints.endpoints."""
    out = []
    for r in table[(table.attention != "standard") & table.ref_seeds.notna()].itertuples():
        out.append(
            f"**{r.attention}** on {r.task} (to the criterion, cap {r.cap:,}; lr {r.lr:g}): {endpoints_verdict(r)}; "
            f"solved by the cap {r.solved}/{r.seeds} [{r.solved_lo:.2f}, {r.solved_hi:.2f}] against "
            f"{r.ref_solved:.0f}/{r.ref_seeds:.0f} (Holm p {stats.p_text(r.fisher_holm)}); steps to solve "
            f"{steps_text(r.median_steps)} [{steps_text(r.median_lo)}, {steps_text(r.median_hi)}] against "
            f"{steps_text(r.ref_median)} (log-rank Holm p {stats.p_text(r.logrank_holm)})."
        )
    return out


def power_note(table: pd.DataFrame) -> str:
    """Where the criterion table cannot show any difference by its design (endpoints.smallest_holm_p), say so:
    for the whole table, or for the tasks with too few seeds beside those with enough."""
    from .endpoints import ALPHA, smallest_holm_p

    m = 2 * int((table.attention != "standard").sum())
    groups = table.groupby("task", sort=False) if "task" in table else [("", table)]
    seeds = {task: int(min(g.seeds.min(), g.ref_seeds.min())) for task, g in groups}
    floors = {task: smallest_holm_p(g, m) for task, g in groups}
    weak = [t for t, f in floors.items() if f >= ALPHA]
    if not weak:
        return ""
    floor, n = max(floors[t] for t in weak), min(seeds[t] for t in weak)
    strong = [f"{t} ({seeds[t]} seeds a side)" for t in floors if t not in weak]
    which = "" if not strong else f" on {', '.join(weak)}"
    return (
        f"With {n} seeds a side and {m} comparisons, the smallest Holm-adjusted p this table can reach{which} is "
        f"{floor:.3f} (two fully separated groups), not below {ALPHA}: no difference "
        f"{'there' if strong else 'here'} can be shown, however large the medians' gap"
        + (f"; it can on {', '.join(strong)}." if strong else ".")
        + " More seeds per cell, not a looser rule, is what would decide them."
    )


def glance(table: pd.DataFrame, name: str) -> str:
    """`name`'s criterion cells in a few words: where it solves fewer seeds than standard, or as many at a speed
    more than 1.5× apart ('`tied_qkv` 6× steps on associative_recall, 3/5 open on induction'); 'about standard's
    steps on every task' where neither. Empty where it has no criterion cell."""
    mine = table[(table.attention == name) & table.ref_seeds.notna()] if not table.empty else table
    if mine.empty:  # no cell of it, or no standard to compare with
        return ""
    parts = []
    for r in mine.itertuples():
        ratio = r.median_steps / r.ref_median if np.isfinite(r.median_steps) and r.ref_median > 0 else np.nan
        if r.solved < r.ref_solved:  # fewer seeds solved: the count says it
            parts.append(f"{r.solved}/{r.seeds}" + (" open" if is_open(r) else "") + f" on {r.task}")
        elif np.isfinite(ratio) and not 1 / 1.5 <= ratio <= 1.5:  # as many or more, at a different speed
            parts.append(f"{ratio:.2g}× steps on {r.task}")
    return f"`{name}` " + (", ".join(parts) if parts else "about standard's steps on every task")


def verdict_line(verdicts: pd.DataFrame, names: list[str], short: bool = False) -> str:
    """'`stacked` worse on induction; inconclusive on associative_recall, ...' from endpoints.task_verdicts;
    short: the tasks where it differs named, the rest counted ('inconclusive on 4 tasks')."""
    out = []
    for name in names:
        c = verdicts[verdicts.attention == name]
        parts = []
        for v in ("worse", "better", "inconclusive", "equivalent"):
            tasks = list(c[c.verdict == v].task)
            if not tasks:
                continue
            named = not short or v in ("worse", "better")
            parts.append(f"{v} on " + (", ".join(tasks) if named else f"{len(tasks)} task" + "s" * (len(tasks) > 1)))
        out += [f"`{name}` " + (", " if short else "; ").join(parts)] if parts else []
    return " · ".join(out)
