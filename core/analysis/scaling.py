"""What the scaling scans read along each axis (core.analysis.axes): each cell's outcome at its best lr, the
solved grid, and each parameterization's threshold against the reference, with the test that decides it."""

import numpy as np
import pandas as pd

from . import endpoints, findings, markdown, stats, survival
from .axes import AXES, axis_grows, axis_runs


def _trained(runs: pd.DataFrame, axis: str) -> pd.DataFrame:
    """An axis's runs at each task's longest training, every lr of each cell (its grid)."""
    return findings.at_longest(axis_runs(runs, axis))


def best_runs(runs: pd.DataFrame, axis: str) -> pd.DataFrame:
    """The runs behind each point of an axis: axis_runs at each task's longest training, each cell at its best lr
    (the seeds a point's solved share counts)."""
    return findings.at_best_lr(_trained(runs, axis))


def equal_parameters(table: pd.DataFrame, name: str, reference: str = "standard", within: float = 0.25):
    """Pairs of settings at which `name` and the reference spend about the same attention parameters per layer
    (within 25%): (name's row, the reference's row) of an outcomes table, so a threshold read along the axis can
    be read at equal budget too (bilinear at d_head 4 is standard's budget at d_head 16)."""
    mine, ref = table[table.attention == name], table[table.attention == reference]
    pairs = []
    for _, a in mine.iterrows():
        close = ref[(ref.params_attention - a.params_attention).abs() <= within * a.params_attention]
        if not close.empty and not (close.x == a.x).all():
            b = close.loc[(close.params_attention - a.params_attention).abs().idxmin()]
            pairs.append((a, b))
    return pairs


def _steps_to_solve(best: pd.DataFrame) -> pd.DataFrame:
    """Per (attention, x) of criterion runs: the Kaplan-Meier median steps to solve and its 95% interval (inf:
    not reached by the cap); NaN for runs trained to a step count, which record no solve."""
    rows = []
    for (name, x), g in best.groupby(["attention", "x"], sort=False):
        criterion = (g.get("until", pd.Series("steps", index=g.index)) == "solved").all()
        median = survival.km_median(*endpoints.durations(g)) if criterion else (np.nan,) * 3
        rows.append((name, x, *median))
    return pd.DataFrame(rows, columns=["attention", "x", "median_steps", "median_lo", "median_hi"])


def _lr_edges(trained: pd.DataFrame) -> pd.DataFrame:
    """Per (attention, x) of _trained runs: the lowest and highest lr they span (the cell's grid)."""
    return trained.groupby(["attention", "x"]).lr.agg(lr_min="min", lr_max="max").reset_index()


def outcomes(runs: pd.DataFrame, axis: str) -> pd.DataFrame:
    """Per (attention, axis value), at the cell's best lr (on validation) and longest training: seeds n, solved
    k with its Wilson interval, mean test accuracy and loss, the lr, attention parameters per layer and in
    total, how many unsolved seeds were still improving (where more steps could change the outcome), for cells
    trained to the criterion the Kaplan-Meier median steps to solve with its 95% interval, and `lr_edge`:
    "lowest" or "highest" where the best lr is an end of the lrs the cell trained (the optimum may lie beyond)."""
    trained = _trained(runs, axis)
    best = findings.at_best_lr(trained)
    if best.empty:
        return pd.DataFrame()
    ok = best.status == "ok"
    solved = findings.solved(best)
    unsolved = ok & ~solved
    still = findings.still_improving(best)
    best = best if "until" in best else best.assign(until="steps")
    cells = best.assign(
        _solved=solved,
        _acc=best.test_acc.where(ok),
        _loss=best.test_loss.where(ok),
        _improving=unsolved & still,
        _unsolved=unsolved,
    )
    out = (
        cells.groupby(["attention", "x"], sort=False)
        .agg(
            n=("seed", "size"),
            solved=("_solved", "sum"),
            test_acc=("_acc", "mean"),
            test_loss=("_loss", "mean"),
            lr=("lr", "first"),
            steps=("steps", "first"),
            until=("until", "first"),
            params_attention=("params_attention", "first"),
            n_layers=("n_layers", "first"),
            params_total=("params_total", "first"),
            improving=("_improving", "sum"),
            unsolved=("_unsolved", "sum"),
        )
        .reset_index()
    )
    out["solved_lo"], out["solved_hi"] = zip(*(findings.wilson(k, n) for k, n in zip(out.solved, out.n)))
    out = out.merge(_lr_edges(trained), on=["attention", "x"], how="left")
    out["lr_edge"] = np.select([out.lr == out.lr_min, out.lr == out.lr_max], ["lowest", "highest"], "")
    out.loc[out.lr_min == out.lr_max, "lr_edge"] = ""  # one lr trained: no grid to sit at the edge of
    out = out.merge(_steps_to_solve(best), on=["attention", "x"], how="left")
    out = out.assign(
        axis=axis,
        share=out.solved / out.n,
        steps=out.steps.astype(int),
        params_attention=out.params_attention / out.n_layers,
    )
    columns = [
        "axis",
        "attention",
        "x",
        "n",
        "solved",
        "solved_lo",
        "solved_hi",
        "share",
        "test_acc",
        "test_loss",
        "lr",
        "steps",
        "until",
        "median_steps",
        "median_lo",
        "median_hi",
        "params_attention",
        "params_total",
        "improving",
        "unsolved",
        "lr_edge",
    ]
    return (
        out[columns]
        .astype({"solved": int, "improving": int, "unsolved": int})
        .sort_values(["attention", "x"], ignore_index=True)
    )


def solved_grid(table: pd.DataFrame, order: list[str]) -> pd.DataFrame:
    """Solved k/n at each cell's best lr: one row per axis value, one column per parameterization (registry
    order); "–" where a parameterization has no run at that value."""
    cells = table.assign(cell=table.solved.astype(int).astype(str) + "/" + table.n.astype(int).astype(str))
    grid = cells.pivot(index="x", columns="attention", values="cell")
    return grid[[a for a in order if a in grid.columns]].fillna("–")


def grid_markdown(grid: pd.DataFrame, axis: str) -> str:
    """solved_grid as the markdown table docs/results.md prints, headed by the axis's title."""
    head = AXES[axis].title if axis in AXES else axis
    return markdown.table(grid.set_axis([f"{x:g}" for x in grid.index]).rename_axis(head).reset_index())


def thresholds(table: pd.DataFrame, order: list[str]) -> pd.DataFrame:
    """Per parameterization (in `order`): the hardest value scanned at which it solves >= ROBUST of its seeds
    (NaN: none), with n there, against the reference's (the first of `order`) in words and as a verdict
    (better, equivalent, worse; inconclusive: neither solves). On an axis that grows (the table's Axis.grows)
    easier is larger and the threshold the smallest such value; otherwise easier is smaller and it is the
    largest. `lapses`: easier values at which it then does not solve (k/n there, and whether that cell is open),
    which at a few seeds per setting can be noise; they are stated beside the threshold, not hidden by it.
    `open`: the setting where it stops solving, where that cell is open (_open_at): its threshold may move with a
    higher cap. `lr_edge`: that setting, where its best lr there is an end of the lrs trained ("4, lowest 0.0003"):
    it may move with a wider lr grid."""
    grows = axis_grows(table.axis.iloc[0]) if len(table) else True
    groups = dict(list(table.groupby("attention", sort=False)))
    rows = []
    for name in [n for n in order if n in groups]:
        g = groups[name]
        hardest_first = np.argsort(g.x.to_numpy() if grows else -g.x.to_numpy(), kind="stable")
        x, share, solved, n = (g[c].to_numpy()[hardest_first] for c in ("x", "share", "solved", "n"))
        ok = share >= findings.ROBUST
        first = int(np.argmax(ok)) if ok.any() else None  # the hardest value it solves
        missed = [i for i in range(first + 1, len(x)) if not ok[i]] if first is not None else []
        parting = (len(x) - 1 if first is None else first - 1) if first != 0 else None  # where it stops solving
        rows.append(
            {
                "attention": name,
                "threshold": x[first] if first is not None else np.nan,
                "n": int(n[first]) if first is not None else np.nan,
                "scanned": ", ".join(f"{v:g}" for v in sorted(x)),
                "lapses": ", ".join(_lapse(g.iloc[hardest_first[i]]) for i in missed),
                "open": _open_at(g.iloc[hardest_first[parting]]) if parting is not None else "",
                "lr_edge": _edge_at(g.iloc[hardest_first[parting]]) if parting is not None else "",
            }
        )
    out = pd.DataFrame(rows)
    if not out.empty:
        ref = out.threshold.iloc[0]
        out["vs_reference"] = [_relative(t, ref, grows) for t in out.threshold]
        out["p"] = [_deciding_p(table, name, order[0], t, ref, grows) for name, t in zip(out.attention, out.threshold)]
        out["p_holm"] = np.nan
        tested = out.p.notna()
        if tested.any():
            out.loc[tested, "p_holm"] = stats.holm(out.p[tested].to_numpy())
        # coloured better or worse only where the test at the parting setting survives Holm over the axis; the
        # reference keeps its own row's word, and an equal threshold is not a difference shown
        out["verdict"] = [
            _verdict(t, ref, grows) if i == 0 or p < findings.ALPHA else "inconclusive"
            for i, (t, p) in enumerate(zip(out.threshold, out.p_holm.fillna(1.0)))
        ]
    return out


def _lapse(cell) -> str:
    """An easier setting it does not solve, with k/n there ("4 (1/5)"), and ", open" where that cell is open
    (_open_at): a lapse a higher cap may close is not the same finding as one it cannot."""
    return f"{cell.x:g} ({cell.solved:.0f}/{cell.n:.0f}{', open' if _open_at(cell) else ''})"


def _open_at(cell) -> str:
    """The setting where a parameterization stops solving, with its unsolved seeds still improving there ("8, 4
    of 4"), when that cell is open (endpoints.is_open: trained to the criterion, more than a tenth of its
    censored seeds still improving at the cap, which more steps could move); else ""."""
    if cell.get("until") != "solved":
        return ""
    counts = pd.Series({"censored": cell.get("unsolved", 0), "improving": cell.get("improving", 0)})
    return f"{cell.x:g}, {counts.improving:.0f} of {counts.censored:.0f}" if endpoints.is_open(counts) else ""


def _edge_at(cell) -> str:
    """The setting where a parameterization stops solving and its best lr there, when that lr is an end of the
    lrs the cell trained ("4, lowest 0.0003"); else ""."""
    edge = cell.get("lr_edge", "")  # absent from a table built without it
    return f"{cell.x:g}, {edge} {cell.lr:g}" if edge else ""


def parting(t: float, ref: float, grows: bool) -> float:
    """The setting where two thresholds part: the harder one (where one solves and the other does not), or the
    only one; NaN where they do not part (same, or neither)."""
    if (np.isnan(t) and np.isnan(ref)) or t == ref:
        return np.nan
    both = [v for v in (t, ref) if not np.isnan(v)]
    return (min if grows else max)(both)  # on a growing axis smaller is harder


def deciding(table: pd.DataFrame, order: list[str]) -> pd.DataFrame:
    """The cells of an outcomes table whose solved counts decide a threshold against the reference (the first of
    `order`): each tested parameterization's and the reference's at the setting where their thresholds part, with
    the parameterization it decides (`against`). Where a few seeds per setting decide, more seeds are owed."""
    found = thresholds(table, order)
    grows = axis_grows(table.axis.iloc[0]) if len(table) else True
    ref, rows = (found.threshold.iloc[0] if len(found) else np.nan), []
    for name, t, p in zip(found.attention, found.threshold, found.get("p", [])):
        at = parting(t, ref, grows)
        if name != order[0] and not np.isnan(p):
            here = table[table.attention.isin([name, order[0]]) & (table.x == at)]
            rows.append(here.assign(against=name))
    return pd.concat(rows, ignore_index=True) if rows else table.iloc[:0].assign(against="")


def _deciding_p(table: pd.DataFrame, name: str, reference: str, t: float, ref: float, grows: bool) -> float:
    """Fisher's exact p on solved k/n at the setting where the two thresholds part (parting); NaN where they do
    not."""
    at = parting(t, ref, grows)
    if name == reference or np.isnan(at):
        return np.nan
    a, b = (table[(table.attention == n) & (table.x == at)] for n in (name, reference))
    if a.empty or b.empty:
        return np.nan
    return stats.fisher_exact(int(a.solved.iloc[0]), int(a.n.iloc[0]), int(b.solved.iloc[0]), int(b.n.iloc[0]))


def _verdict(t: float, ref: float, grows: bool) -> str:
    if np.isnan(t) or np.isnan(ref):
        return "inconclusive" if np.isnan(t) and np.isnan(ref) else ("worse" if np.isnan(t) else "better")
    return "equivalent" if t == ref else ("worse" if (t > ref) == grows else "better")


def _relative(t: float, ref: float, grows: bool = True) -> str:
    if np.isnan(t) and np.isnan(ref):
        return "neither solves"
    if np.isnan(t):
        return "never, where the reference does"
    if np.isnan(ref):
        return "solves where the reference never does"
    if t == ref:
        return "same"
    if grows:
        return f"needs {t / ref:g}× the reference's" if t > ref else f"{ref / t:g}× less"
    return f"reaches {t / ref:g}× further" if t > ref else f"reaches {ref / t:g}× less far"
