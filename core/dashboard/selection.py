"""The sidebar's selection applied to a store's runs table, in plain pandas: core.dashboard.cached keys these by
(store, fingerprint, selection), so a visitor whose sidebar matches an earlier one's reads the result instead of
recomputing it or hashing a runs table to find it."""

import pandas as pd

from ..analysis import findings
from . import catalog

BEST = "best (chosen on validation)"
LONGEST = "longest per task"
ALL = "all"
ANY_LENGTH = "any length"  # a page that picks its own training length (Parameters' update sizes)


def key(sel: dict) -> tuple:
    """The selection as a hashable, order-free cache key: ((name, value), ...), lists as tuples."""
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in sel.items()))


def chosen(df: pd.DataFrame, sel: dict) -> pd.DataFrame:
    """The sidebar's parameterizations and precision: what every view filters by."""
    if df.empty:
        return df
    df = df[df.attention.isin(sel["attentions"])]
    return df[df.precision == sel["precision"]] if sel.get("precision") and "precision" in df else df


def selected(df: pd.DataFrame, sel: dict, finished: bool = False, lr: str | None = None) -> pd.DataFrame:
    """The runs of the selection's tasks, parameterizations, model size, training length and learning rate
    (finished: status ok only). Training length: LONGEST keeps each task at the most steps it was trained
    (findings.at_longest), a number keeps that length. The lr choice (`lr` overrides the selection's): BEST
    keeps each cell's best lr by validation loss (findings.best_lr), ALL keeps every lr, a number keeps that lr.
    Rows follow the selection's task order, so every page's small multiples follow the sidebar."""
    df = chosen(df, sel)
    if df.empty:
        return df
    df = df[df.task.isin(sel["tasks"])]
    if sel.get("size"):
        df = df[size_labels(df) == sel["size"]]
    steps = sel.get("steps", LONGEST)
    if steps != ANY_LENGTH:
        df = findings.at_longest(df) if steps == LONGEST else df[df.steps.astype(str) == str(steps)]
    choice = lr or sel.get("lr", BEST)
    if choice == BEST:
        df = findings.at_best_lr(df)
    elif choice != ALL:
        df = df[df.lr.map(lambda v: f"{v:g}") == choice]
    if finished:
        df = df[df.status == "ok"]
    order = {t: i for i, t in enumerate(sel["tasks"])}
    return df.sort_values("task", key=lambda t: t.map(order), kind="stable")


def scanned(df: pd.DataFrame, sel: dict) -> pd.DataFrame:
    """The selection's parameterizations and precision at every model and task size (the scans span them); a
    fixed lr keeps that lr, else each cell picks its best later."""
    df = chosen(df, sel)
    choice = sel.get("lr", BEST)
    return df if df.empty or choice in (BEST, ALL) else df[df.lr.map(lambda v: f"{v:g}") == choice]


def scan_key(sel: dict) -> tuple:
    """The part of the selection that scanned() reads, as a cache key."""
    return key({k: sel.get(k) for k in ("attentions", "precision", "lr")})


def size_labels(runs: pd.DataFrame) -> pd.Series:
    """Each run's model size as the sidebar names it, e.g. "2L d_model=64 H=4" (", attention-only" without MLPs);
    column-wise, so a 10,000-run store labels in milliseconds."""
    mlp = runs.mlp.map({True: "", False: ", attention-only"})
    label = runs.n_layers.astype(str) + "L d_model=" + runs.d_model.astype(str) + " H=" + runs.n_heads.astype(str)
    if "d_head" in runs:  # a d_head other than d_model / n_heads (the scaling scans) is part of the size
        own = runs.d_head != runs.d_model // runs.n_heads
        label = label.where(~own, label + " d_head=" + runs.d_head.astype(str))
    if "length" in runs:  # a task size other than the task's own default
        other = runs.length != runs.task.map(catalog.TASK_LENGTHS)
        label = label.where(~other, label + " task length=" + runs.length.astype(str))
    return label + mlp
