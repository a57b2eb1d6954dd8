"""The scaling study's axes: which runs lie on which axis through the bundled operating point.

One axis changes one thing around the bundled point (2 layers, d_model 64, 4 heads, d_head 16, associative
recall with 8 key-value pairs over 32 keys) and keeps everything else: d_head (the rank of W_QK, seed 001),
d_model (width, d_head = d_model / 4: Zoology's axis), n_heads (d_head = 64 / n_heads, seed 004) and the
number of key-value pairs (task difficulty); and n_heads again on induction, around its bundled point.
What is read along them (outcomes, thresholds) lives in core.analysis.scaling.
"""

from dataclasses import dataclass

import pandas as pd

# The bundled point, and the training length every scan is read at (the bundled point was also trained at
# 1600 steps; an axis compares every setting at one length).
BASE = {
    "task": "associative_recall",
    "n_layers": 2,
    "d_model": 64,
    "n_heads": 4,
    "d_head": 16,
    "length": 8,
    "n_symbols": 32,
    "mlp": True,
    "steps": 800,
}


@dataclass(frozen=True)
class Axis:
    name: str  # the URL value and the column the axis reads
    label: str  # the x-axis title
    question: str  # what it speaks to: "seed 001", or "task difficulty"
    free: tuple[str, ...]  # the config columns allowed to differ from BASE along it
    grows: bool = True  # capacity grows with the value (its threshold: the smallest that solves); False: the
    # task gets harder as it grows (more heads of a fixed width are narrower; more pairs to recall): the largest
    column: str = ""  # the config column it varies, where that is not its name
    base: tuple[tuple[str, object], ...] = ()  # where its centre differs from BASE: another task's bundled point

    @property
    def var(self) -> str:
        """The config column along the axis: what its thresholds read ("n_heads ≤ 4")."""
        return self.column or self.name

    @property
    def task(self) -> str | None:
        """Its task where that is not BASE's, else None."""
        return dict(self.base).get("task")

    @property
    def title(self) -> str:
        """Its short name in headings and table columns: the column, and the task where it is not BASE's."""
        return f"{self.var} ({self.task})" if self.task else self.var

    def on_axis(self, runs: pd.DataFrame) -> pd.Series:
        """True for the runs that differ from its centre only in this axis's columns (and lie on its line)."""
        keep = pd.Series(True, index=runs.index)
        for col, value in {**BASE, **dict(self.base)}.items():
            if col in self.free or col not in runs:
                continue
            at = runs[col] == value
            if col == "steps" and "until" in runs:  # BASE's steps are the fixed-budget scan's; a cap is not a budget
                at |= runs.until == "solved"
            keep &= at
        if self.var == "d_model":
            keep &= runs.d_head * runs.n_heads == runs.d_model
        if self.var == "n_heads":
            keep &= runs.d_head * runs.n_heads == BASE["d_model"]
        if "n_kv_heads" in runs:  # each parameterization's own K/V heads: mqa 1, gqa H / 2, the rest H
            own = runs.n_heads.where(runs.attention != "mqa", 1).where(runs.attention != "gqa", runs.n_heads // 2)
            keep &= runs.n_kv_heads == own.clip(lower=1)
        return keep


AXES = {
    "d_head": Axis("d_head", "d_head (rank of W_QK per head), d_model 64, 4 heads", "seed 001", ("d_head",)),
    "d_model": Axis("d_model", "d_model (4 heads, d_head = d_model / 4)", "seeds 000/003", ("d_model", "d_head")),
    "n_heads": Axis(
        "n_heads", "n_heads (d_model 64, d_head = 64 / n_heads)", "seed 004", ("n_heads", "d_head"), grows=False
    ),
    "length": Axis(
        "length", "key-value pairs (d_model 64, 4 heads, d_head 16)", "task difficulty", ("length",), grows=False
    ),
    # seed 004 on the task where the bundled point already separates identity (induction's bundled size)
    "n_heads_induction": Axis(
        "n_heads_induction",
        "n_heads on induction (d_model 64, d_head = 64 / n_heads)",
        "seed 004",
        ("n_heads", "d_head"),
        grows=False,
        column="n_heads",
        base=(("task", "induction"), ("length", 12)),
    ),
}


def axis_runs(runs: pd.DataFrame, axis: str) -> pd.DataFrame:
    """The runs on one axis, with its value in column `x`; `identity`, which has no d_head of its own,
    lies on the d_head axis only at the bundled point, and is left off it."""
    if axis not in AXES:
        raise ValueError(f"axis: unknown {axis!r}; allowed: {', '.join(AXES)}")
    if runs.empty or any(c not in runs for c in ("d_head", "n_heads", "d_model")):
        return runs.iloc[0:0].assign(x=pd.Series(dtype=float))
    spec = AXES[axis]
    on = runs[spec.on_axis(runs)]
    if spec.var == "d_head":
        on = on[on.attention != "identity"]
    on = on.assign(x=on[spec.var])
    return on[on.until == protocol(on)] if "until" in on else on


def protocol(on: pd.DataFrame) -> str:
    """One protocol per axis, never a mix: the criterion ("solved") once the axis has been retrained to it at two
    or more of its values, else the fixed budget ("steps") its scan was made with."""
    crit = on[on.until == "solved"] if "until" in on else on.iloc[0:0]
    return "solved" if crit.x.nunique() >= 2 else "steps"


def axes_present(runs: pd.DataFrame) -> list[str]:
    """The axes with at least two values in these runs (a scan, not just the bundled point)."""
    return [a for a in AXES if axis_runs(runs, a).x.nunique() >= 2]


def axis_grows(axis: str) -> bool:
    return AXES[axis].grows if axis in AXES else True


def axis_var(axis: str) -> str:
    return AXES[axis].var if axis in AXES else axis
