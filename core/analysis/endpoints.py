"""The two endpoints of a cell trained to the criterion (until="solved"), each at its best lr, against standard.

- solved by the cap: seeds that met the criterion on validation with their test accuracy at the stop agreeing
  (findings.solved), k/n with a Wilson 95% interval, compared with standard's by Fisher's exact test. Can it
  learn this at all within the budget?
- steps to solve: the solve step (first evaluation at SOLVED on validation) of each of those seeds, every
  other seed censored at its stop (the cap); the Kaplan-Meier median with its 95% interval,
  compared with standard's by the log-rank test. How fast?
The family is every comparison in the table (both endpoints, every non-standard cell), Holm-corrected
together: a difference is claimed where the adjusted p < ALPHA, and "same" is never claimed from a test of
difference.
"""

import numpy as np
import pandas as pd

from ..attention import NAMES
from . import findings, stats, survival

ALPHA = findings.ALPHA


def criterion_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs trained to the criterion (until="solved")."""
    return runs[runs.get("until", pd.Series("steps", index=runs.index)) == "solved"] if len(runs) else runs


def durations(g: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(steps, event): the solve step of a solved seed (the event of solved by the cap too); any other seed is
    censored where it stopped (the cap, or a criterion met on validation that its test accuracy did not confirm)."""
    solved = findings.solved(g).to_numpy()
    stop = g.get("stop_step", g.steps).fillna(g.steps).astype(float)
    return np.where(solved, g.solve_step.astype(float), stop), solved


def endpoints(runs: pd.DataFrame, attentions: list[str], tasks: list[str]) -> pd.DataFrame:
    """One row per (task, attention) of the criterion runs at their best lr: both endpoints, their intervals, the
    tests against standard and their Holm-adjusted p over the whole table."""
    best = findings.at_best_lr(criterion_runs(runs))
    rows = []
    for task in tasks:
        ref = best[(best.task == task) & (best.attention == "standard")]
        for name in attentions:
            g = best[(best.task == task) & (best.attention == name)]
            if g.empty:
                continue
            k, n = int(findings.solved(g).sum()), len(g)
            lo, hi = stats.wilson(k, n)
            d, e = durations(g)
            median, m_lo, m_hi = survival.km_median(d, e)
            row = {
                "task": task,
                "attention": name,
                "lr": g.lr.iloc[0],
                "cap": int(g.steps.max()),
                "seeds": n,
                **censored_improving(g),
                "solved": k,
                "solved_lo": lo,
                "solved_hi": hi,
                "median_steps": median,
                "median_lo": m_lo,
                "median_hi": m_hi,
                "fisher_p": np.nan,
                "logrank_p": np.nan,
                "ref_share": np.nan,
                "ref_median": np.nan,
                "ref_solved": np.nan,
                "ref_seeds": np.nan,
            }
            if name != "standard" and not ref.empty:
                k0 = int(findings.solved(ref).sum())
                row["ref_share"], row["ref_median"] = k0 / len(ref), survival.km_median(*durations(ref))[0]
                row["ref_solved"], row["ref_seeds"] = k0, len(ref)
                row["fisher_p"] = stats.fisher_exact(k, n, k0, len(ref))
                row["logrank_p"] = survival.logrank(d, e, *durations(ref))
            rows.append(row)
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    adjusted = stats.holm(np.concatenate([table.fisher_p, table.logrank_p]))
    table["fisher_holm"], table["logrank_holm"] = adjusted[: len(table)], adjusted[len(table) :]
    return table


def censored_improving(g: pd.DataFrame) -> dict:
    """A cell's seeds censored at the cap, and how many of those were still improving there (is_open reads both)."""
    censored = g[g.stop == "cap"]
    return {"censored": len(censored), "improving": int(findings.still_improving(censored).sum())}


OPEN_SHARE = 0.1  # a cell is open while more than this share of its censored seeds still improved at the cap


def is_open(row) -> bool:
    """More than OPEN_SHARE of the censored seeds were still improving at the cap: the cap, not the
    parameterization, may be what stopped them; the cell is open (its cap is to be raised), not a failure."""
    return row.censored > 0 and row.improving > OPEN_SHARE * row.censored


def open_cells(runs: pd.DataFrame) -> pd.DataFrame:
    """Every open cell of the criterion runs (each task and size at its longest cap, at its best lr; is_open): its
    size, cap, best lr, censored and improving seeds, and its point at that cap (every lr and parameterization trained
    there to the same cap): the commands its runs came from, its parameterizations, its largest seed count, its
    lrs and its runs, so the line that made them can raise the cap (widening the lrs where the best one is an end
    of them). Empty where none is open."""
    return _flagged(cells(runs), "open")


def edge_cells(runs: pd.DataFrame) -> pd.DataFrame:
    """Every cell of the criterion runs (as open_cells reads them, with the same columns) whose best lr is an end of
    its point's lrs, where the point trained more than one: its optimum may lie outside the grid, so the protocol
    widens the point's lrs that way (core.experiments.lines.beyond_edges). Empty where none is."""
    return _flagged(cells(runs), "at_an_end")


FLAGS = ["open", "at_an_end"]


def cells(runs: pd.DataFrame) -> pd.DataFrame:
    """Every cell of the criterion runs (each task and size at its longest cap, at its best lr) with its point, as
    open_cells gives them, and FLAGS: open (is_open) and at_an_end (_at_an_end). One pass for both lists."""
    longest = findings.at_longest(criterion_runs(runs))
    best = findings.at_best_lr(longest)
    keys = ["task", *[c for c in findings.SIZE if c in best.columns]]
    points, rows = {}, []
    for cell, g in best.groupby([*keys, "attention"], sort=False):
        row = dict(zip([*keys, "attention"], cell)) | {"cap": int(g.steps.max()), "seeds": len(g), "lr": g.lr.iloc[0]}
        at = tuple((k, v) for k, v in zip(keys, cell) if k != "n_kv_heads")  # mqa and gqa train beside the others
        if (at, row["cap"]) not in points:  # a point's cells share it
            here = (longest[[k for k, _ in at]] == pd.Series(dict(at))).all(axis=1) & (longest.steps == row["cap"])
            points[at, row["cap"]] = _point(longest[here])
        row |= censored_improving(g) | points[at, row["cap"]]
        rows.append(row | {"open": is_open(pd.Series(row)), "at_an_end": _at_an_end(row)})
    cols = [*keys, "attention", "cap", "seeds", "lr", "censored", "improving"]
    cols += ["commands", "trained", "point_seeds", "point_lrs", "point_ids", *FLAGS]
    return pd.DataFrame(rows, columns=cols)


def _flagged(table: pd.DataFrame, flag: str) -> pd.DataFrame:
    """The rows of cells() whose `flag` holds, without the flags."""
    return table[table[flag].astype(bool)].drop(columns=FLAGS).reset_index(drop=True)


def _at_an_end(row: dict) -> bool:
    """The cell's best lr is the lowest or the highest of its point's lrs (of more than one)."""
    lrs = row["point_lrs"]
    return len(lrs) > 1 and row["lr"] in (lrs[0], lrs[-1])


def _point(point: pd.DataFrame) -> dict:
    """The commands a point's runs came from, its parameterizations (in registry order), its most seeds, its lrs
    (ascending) and its run ids."""
    return {
        "commands": tuple(dict.fromkeys(point.command)),
        "trained": tuple(sorted(set(point.attention), key=list(NAMES).index)),
        "point_seeds": int(point.seed.max()) + 1,
        "point_lrs": tuple(sorted(set(point.lr))),
        "point_ids": tuple(point.run_id),
    }


def _shown(row) -> tuple[bool | None, bool | None]:
    """(more solved?, faster?) against standard where Holm's p < ALPHA, None where no difference is shown: the
    shares solved, and the Kaplan-Meier medians (or the shares where both medians are past the cap)."""
    share = row.solved / row.seeds
    more = share > row.ref_share if row.fisher_holm < ALPHA else None
    later = row.median_steps > row.ref_median or (row.median_steps == row.ref_median and share < row.ref_share)
    faster = not later if row.logrank_holm < ALPHA else None
    return more, faster


def verdict(row) -> str:
    """Against standard: 'fewer solved' / 'more solved', 'slower' / 'faster' where shown (_shown); else 'no
    difference shown'."""
    words = ["reference"] if row.attention == "standard" else []
    if not words:
        more, faster = _shown(row)
        words += [] if more is None else ["more solved" if more else "fewer solved"]
        words += [] if faster is None else ["faster" if faster else "slower"]
    said = ", ".join(words) or "no difference shown"
    return f"{said}; open: {row.improving} of {row.censored} censored seeds still improving" if is_open(row) else said


def smallest_holm_p(table: pd.DataFrame, comparisons: int | None = None) -> float:
    """The smallest Holm-adjusted p the table's rows could reach: the log-rank p of two fully separated groups of
    its fewest seeds per side, times the number of comparisons (the table's own, or the family's it is part of).
    At or above ALPHA, no difference can be shown, however large: the design, not the data, decides (5 seeds a
    side over 28 comparisons is 0.052)."""
    if table.empty:
        return np.nan
    n = int(min(table.seeds.min(), table.ref_seeds.min()))
    fast, slow = np.arange(1.0, n + 1), np.arange(1.0, n + 1) + 1e6
    every = np.ones(n, bool)
    m = comparisons if comparisons is not None else 2 * int((table.attention != "standard").sum())
    return min(1.0, survival.logrank(fast, every, slow, every) * m)


def matrix_verdict(row) -> str:
    """The verdict matrix's colour for a criterion cell: worse (fewer solved, or slower) or better (more solved,
    or faster) where Holm's p < ALPHA and the two endpoints do not disagree; else inconclusive."""
    if row.attention == "standard":
        return "inconclusive"
    shown = {s for s in _shown(row) if s is not None}
    return {frozenset({True}): "better", frozenset({False}): "worse"}.get(frozenset(shown), "inconclusive")


def task_verdicts(comparisons: pd.DataFrame, ends: pd.DataFrame) -> pd.DataFrame:
    """(attention, task, verdict) against standard for every task compared: the fixed-budget tasks' verdicts
    (findings.compare_to's) and the criterion tasks' (matrix_verdict of the endpoints table)."""
    parts = [pd.DataFrame(columns=["attention", "task", "verdict"])]
    if not comparisons.empty:
        parts.append(comparisons[["attention", "task", "verdict"]])
    if not ends.empty:
        parts.append(
            ends.assign(verdict=[matrix_verdict(r) for r in ends.itertuples()])[["attention", "task", "verdict"]]
        )
    return pd.concat(parts, ignore_index=True)


def layer_control(runs: pd.DataFrame, task: str = "induction") -> pd.DataFrame:
    """Per parameterization and layer count, the criterion runs of a task at their longest cap (raised for the
    cells whose seeds were still improving) and best lr: seeds solved by the cap (findings.solved) of n, with its
    Wilson interval, and the unsolved seeds still improving: the one-layer control beside two layers. grid_solved
    of grid_runs: the same count over every lr of the grid at that cap."""
    columns = ["attention", "n_layers", "cap", "solved", "seeds", "solved_lo", "solved_hi", "improving"]
    columns += ["grid_solved", "grid_runs"]
    crit = criterion_runs(runs)
    crit = _at_control_size(crit[crit.task == task]) if len(crit) else crit
    if crit.empty:
        return pd.DataFrame(columns=columns)
    crit = crit[crit.steps == crit.groupby(["attention", "n_layers"]).steps.transform("max")]
    best = dict(list(findings.at_best_lr(crit).groupby(["attention", "n_layers"])))
    rows = []
    for (name, layers), every in crit.groupby(["attention", "n_layers"], sort=False):
        g = best[(name, layers)]
        k = int(findings.solved(g).sum())
        lo, hi = stats.wilson(k, len(g))
        improving = findings.improving_share(g)[0]
        grid = int(findings.solved(every).sum()), len(every)
        rows.append(dict(zip(columns, (name, int(layers), int(g.steps.max()), k, len(g), lo, hi, improving, *grid))))
    return pd.DataFrame(rows, columns=columns)


def _at_control_size(crit: pd.DataFrame) -> pd.DataFrame:
    """The runs at the one-layer control's size (its most common; with no control, the most common size): the
    two-layer cells it stands beside, not a scan point of another size trained to the same cap."""
    keys = [c for c in findings.SIZE if c not in ("n_layers", "n_kv_heads") and c in crit.columns]  # mqa, gqa beside
    if crit.empty or not keys:
        return crit
    one = crit[crit.n_layers == 1]
    return findings.at_most_common(crit, keys, among=one if len(one) else crit)


def protocol(runs: pd.DataFrame) -> pd.DataFrame:
    """Per task, how its runs were trained: the criterion (until="solved") with its cap, or a fixed budget of
    steps; and the seeds per cell. One row per (task, protocol, steps): more than one row for a task is a mix."""
    if runs.empty:
        return pd.DataFrame(columns=["task", "until", "steps", "seeds"])
    until = runs.get("until", pd.Series("steps", index=runs.index))
    seeds = runs.assign(until=until).groupby(["task", "until", "steps", "attention"], sort=False).seed.nunique()
    return seeds.groupby(["task", "until", "steps"], sort=False).max().rename("seeds").reset_index()
