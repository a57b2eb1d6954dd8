"""Every statistic the app and docs/results.md state, in one place: best-lr selection, outcome counts with
intervals, and comparisons with a verdict a statistician would sign. Pure numpy and pandas; the
primitives (Wilson, Fisher, Welch, TOST, Holm) are in core.analysis.stats.

The rules, stated once:
- longest: each task (per model and task size) is read at the longest training the store holds for it, so a
  task retrained for longer (to rule out truncation) replaces its shorter runs in every comparison.
- best lr: per cell (attention, task and its size, model size, steps, precision), the lr whose seeds have
  the lowest mean *validation* loss; a diverged seed counts as infinite loss; ties go to the smaller lr. The
  test set is never used to choose anything.
- solved (`solved`): test accuracy >= SOLVED on the answer positions at the end; a run trained to the criterion
  counts when it met the criterion on validation and its test accuracy at the stop agrees within TEST_MARGIN
  (one event for both criterion endpoints); counted k/n with a Wilson 95% interval.
- compare_to: test losses are compared on the log scale, as the ratio of geometric means (a 95% Welch
  interval on mean log loss, exponentiated): two solved cells whose losses differ tenfold are told apart,
  which a difference in nats near 0 cannot do. The test of each comparison is Welch's t on log loss
  (Fisher's exact on the solved counts when a side has fewer than two finished seeds), Holm-corrected over
  the family of comparisons made in one call (what a table or the Overview shows together):
  `better` / `worse` when the Holm-adjusted p < ALPHA; else `equivalent` when TOST at ALPHA (the 90%
  interval of the ratio inside [1/RATIO_MARGIN, RATIO_MARGIN]) holds; otherwise `inconclusive` (a
  difference not detected is not a sameness shown). Solved k/n with Fisher's p stays the headline for
  unsolved cells.
- lr sensitivity (core.analysis.sensitivity): per cell, how many lrs of the grid solve at least ROBUST of their seeds.
"""

import numpy as np
import pandas as pd

from ..training import criterion
from . import stats

SOLVED = criterion.SOLVED  # test accuracy that counts as solving a task: the criterion's, on held-out answers
# A criterion run stops on validation; its test accuracy at the stop confirms it within three standard errors of
# the difference between two held-out sets of 2,048 answers (the smallest task's) at SOLVED: 3 * sqrt(2 * .95 *
# .05 / 2048) = 0.020. Without it a seed just over SOLVED on validation is a coin flip on test.
TEST_MARGIN = 0.02
ALPHA = 0.05  # family-wise error rate of the differences (Holm), and TOST's level
# Equivalent: the geometric-mean test-loss ratio's 90% interval inside [1/1.5, 1.5]. Solved cells sit at losses
# of 1e-4 to 1e-2 nats, where a fixed margin in nats calls any two "same"; a loss 1.5x another's is the
# smallest ratio that changes perplexity on unsolved cells or steps-to-threshold on solved ones noticeably.
RATIO_MARGIN = 1.5
LOSS_FLOOR = 1e-7  # log of a smaller test loss is taken at this (float32 cross-entropy's resolution)
ROBUST = 0.8  # share of seeds an lr (or a scaling setting) must solve to count as solving
IMPROVING = 0.02  # over the last fifth of training: val loss fell by 2% (relative) or val accuracy rose 2 points
CELL = [
    "attention",
    "task",
    "n_symbols",
    "length",
    "n_layers",
    "d_model",
    "n_heads",
    "d_head",
    "n_kv_heads",
    "mlp",
    "steps",
    "batch_size",
    "precision",
    "schedule",
    "until",
]


def cell_keys(runs: pd.DataFrame) -> list[str]:
    """The CELL columns these runs have: what one best-lr choice is made over."""
    return [c for c in CELL if c in runs.columns]


def _val(runs: pd.DataFrame) -> pd.Series:
    val = runs.get("val_loss", pd.Series(np.nan, index=runs.index)).astype(float)
    return val.where(runs.status == "ok", np.inf)  # a diverged seed makes its lr lose


def best_lr(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per cell with the chosen `lr`, its mean validation loss and its number of seeds."""
    if runs.empty:
        return pd.DataFrame(columns=[*CELL, "lr", "val_loss", "n"])
    df = runs.assign(_val=_val(runs), _solved=_criterion_solved(runs))
    df["_solve"] = df.get("solve_step", pd.Series(np.nan, index=df.index)).astype(float).where(df._solved, 0.0)
    per_lr = df.groupby([*cell_keys(df), "lr"], dropna=False).agg(
        val_loss=("_val", "mean"), n=("seed", "count"), _k=("_solved", "sum"), _steps=("_solve", "sum")
    )
    per_lr = per_lr.reset_index()
    single = per_lr.groupby(cell_keys(df), dropna=False).lr.transform("count") == 1
    per_lr = per_lr[single | per_lr.val_loss.notna()]  # several lrs and no validation (an old store): no choice
    # criterion.lr_score's order (most seeds solved on validation, fewest steps to solve, lowest validation
    # loss); runs trained to a step count solve nothing here, so for them it is the lowest validation loss
    per_lr = per_lr.sort_values(
        ["_k", "_steps", "val_loss", "lr"], ascending=[False, True, True, True], na_position="last", kind="stable"
    )
    per_lr = per_lr.drop(columns=["_k", "_steps"])
    return per_lr.groupby(cell_keys(df), dropna=False, sort=False).head(1).reset_index(drop=True)


def _criterion_solved(runs: pd.DataFrame) -> pd.Series:
    """Runs that stopped at the criterion (validation accuracy >= SOLVED at PATIENCE evaluations in a row)."""
    stop = runs.get("stop", pd.Series("cap", index=runs.index))
    return (stop == "solved") & (runs.get("until", pd.Series("steps", index=runs.index)) == "solved")


def solved(runs: pd.DataFrame) -> pd.Series:
    """Per run, solved (the module doc's rule): a diverged run never is."""
    acc = runs.test_acc.astype(float).where(runs.status == "ok").fillna(0.0)
    criterion = runs.get("until", pd.Series("steps", index=runs.index)) == "solved"
    return (_criterion_solved(runs) & (acc >= SOLVED - TEST_MARGIN)) | (~criterion & (acc >= SOLVED))


SIZE = ["n_symbols", "length", "n_layers", "d_model", "n_heads", "d_head", "n_kv_heads", "mlp", "precision"]


def at_longest(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs of each task and model size at the most steps any of them trained: every parameterization
    of a task is compared at one training length."""
    if runs.empty:
        return runs
    keys = ["task", *[c for c in SIZE if c in runs.columns]]
    return runs[runs.steps == runs.groupby(keys).steps.transform("max")]


def at_most_common(runs: pd.DataFrame, cols: list[str], among: pd.DataFrame | None = None) -> pd.DataFrame:
    """The runs whose `cols` hold the values most common together among `among` (default: the runs themselves)."""
    common = (runs if among is None else among).groupby(cols).size().idxmax()
    return runs[(runs[cols] == pd.Series(common if len(cols) > 1 else (common,), index=cols)).all(axis=1)]


def at_main_size(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs at the store's most common model size and precision, each task at its most common task size:
    the operating point a summary compares at (a store with scaling scans holds many sizes)."""
    cols = [c for c in ("n_layers", "d_model", "n_heads", "d_head", "mlp", "precision") if c in runs.columns]
    if runs.empty or not cols:
        return runs
    runs = at_most_common(runs, cols)
    task_cols = [c for c in ("length", "n_symbols") if c in runs.columns]
    if not task_cols:
        return runs
    sizes = runs.groupby(["task", *task_cols]).size().reset_index().sort_values(0, ascending=False)
    return runs.merge(sizes.drop_duplicates("task")[["task", *task_cols]], on=["task", *task_cols])


def at_best_lr(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs (every seed, diverged ones too) at their cell's best lr."""
    if runs.empty:
        return runs
    best = best_lr(runs)[[*cell_keys(runs), "lr"]]
    return runs.merge(best, on=[*cell_keys(runs), "lr"], how="inner")


# ---- intervals and tests (core.analysis.stats; re-exported: the pages and docs/results.md quote them from here) --
wilson, fisher_exact, t_quantile, welch_ci, mean_ci = (
    stats.wilson,
    stats.fisher_exact,
    stats.t_quantile,
    stats.welch_ci,
    stats.mean_ci,
)


def verdict(p_holm: float, ratio: float, tost: float) -> str:
    """better / worse when the Holm-adjusted difference test rejects; equivalent when TOST does; else
    inconclusive (see the module doc)."""
    if p_holm < ALPHA:
        return "better" if ratio < 1 else "worse"
    if tost < ALPHA:
        return "equivalent"
    return "inconclusive"


def _log_loss(x: np.ndarray) -> np.ndarray:
    return np.log(np.maximum(x, LOSS_FLOOR))


# ---- tables ------------------------------------------------------------------------------------
def summary(runs: pd.DataFrame, tasks: list[str], attentions: list[str]) -> pd.DataFrame:
    """Per (task, attention), in the given order: seeds n, solved k with its Wilson interval, test loss and
    accuracy mean and std over the finished seeds, the lr, how many unsolved seeds were still improving,
    parameter counts and seconds per step. Give it one lr per cell (at_best_lr, or one fixed lr)."""
    if runs.empty:
        return pd.DataFrame()
    order = {n: i for i, n in enumerate([*tasks, *attentions])}
    df = runs.sort_values(["task", "attention"], key=lambda col: col.map(order), kind="stable")
    rows = []
    for (task, name), g in df.groupby(["task", "attention"], sort=False):
        ok = g[g.status == "ok"]
        k = int(solved(g).sum())
        lo, hi = wilson(k, len(g))
        improving, _ = improving_share(g)
        lrs = sorted(set(g.lr))
        rows.append(
            {
                "task": task,
                "attention": name,
                "lr": lrs[0] if len(lrs) == 1 else np.nan,
                "seeds": len(g),
                "diverged": int((g.status != "ok").sum()),
                "solved": k,
                "solved_lo": lo,
                "solved_hi": hi,
                "test_loss": ok.test_loss.mean(),
                "test_loss_std": ok.test_loss.std(),
                "test_acc": ok.test_acc.mean(),
                "test_acc_std": ok.test_acc.std(),
                "improving": improving,
                "params_attention": g.params_attention.iloc[0],
                "params_total": g.params_total.iloc[0],
                "seconds_per_member_step": g.seconds_per_member_step.mean(),
            }
        )
    return pd.DataFrame(rows).fillna({"test_loss_std": 0.0, "test_acc_std": 0.0})


def compare_to(runs: pd.DataFrame, reference: str = "standard", best: bool = True) -> pd.DataFrame:
    """Per (attention, task) against the reference, each at its own best lr (best=False: as given): solved
    k/n of both with Fisher's p; the ratio of geometric-mean test losses with its 95% interval (ratio_lo,
    ratio_hi) and 90% interval (eq_lo, eq_hi); the difference in nats with its Welch 95% interval (diff,
    ci_lo, ci_hi); the test used, its p and Holm-adjusted p over every row returned; TOST's p; the verdict."""
    df = at_best_lr(runs) if best else runs
    cells = dict(tuple(df.groupby(["attention", "task"], sort=False)))  # one pass, not a mask per cell
    losses = {key: g.test_loss[g.status == "ok"].to_numpy(float) for key, g in cells.items()}
    rows = []
    for (name, task), g in cells.items():
        ref = cells.get((reference, task))
        if name == reference or ref is None:
            continue
        a, b = losses[(name, task)], losses[(reference, task)]
        k = [int(solved(x).sum()) for x in (g, ref)]
        row = {
            "attention": name,
            "task": task,
            "lr": g.lr.iloc[0],
            "ref_lr": ref.lr.iloc[0],
            "n": len(g),
            "ref_n": len(ref),
            "solved": k[0],
            "ref_solved": k[1],
            "fisher_p": stats.fisher_exact(k[0], len(g), k[1], len(ref)),
            "test": "fisher",
            "p": np.nan,
            "ratio": np.nan,
            "ratio_lo": np.nan,
            "ratio_hi": np.nan,
            "eq_lo": np.nan,
            "eq_hi": np.nan,
            "diff": np.nan,
            "ci_lo": np.nan,
            "ci_hi": np.nan,
            "tost_p": 1.0,
        }
        row["p"] = row["fisher_p"]
        if len(a) >= 2 and len(b) >= 2:
            la, lb = _log_loss(a), _log_loss(b)
            d, lo, hi, _ = stats.welch_ci(la, lb)
            _, lo90, hi90, _ = stats.welch_ci(la, lb, level=0.90)
            row.update(
                ratio=np.exp(d),
                ratio_lo=np.exp(lo),
                ratio_hi=np.exp(hi),
                eq_lo=np.exp(lo90),
                eq_hi=np.exp(hi90),
                test="welch_log",
                p=stats.welch_p(la, lb),
                tost_p=stats.tost_p(la, lb, np.log(RATIO_MARGIN)),
            )
            row["diff"], row["ci_lo"], row["ci_hi"], _ = stats.welch_ci(a, b)
        elif k[0] < k[1]:
            row["ratio"] = np.inf
        elif k[0] > k[1]:
            row["ratio"] = 0.0
        rows.append(row)
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    out["p_holm"] = stats.holm(out.p)
    out["tost_holm"] = stats.holm(out.tost_p)  # equivalence claimed under the same correction as differences
    out["verdict"] = [verdict(p, r, t) for p, r, t in zip(out.p_holm, out.ratio.fillna(1.0), out.tost_holm)]
    return out


def still_improving(runs: pd.DataFrame) -> pd.Series:
    """Per run: was it still improving at its last evaluation (validation loss or accuracy still moving)?"""
    none = pd.Series(0.0, index=runs.index)
    return (runs.get("val_loss_drop", none) > IMPROVING) | (runs.get("val_acc_gain", none) > IMPROVING)


def improving_share(runs: pd.DataFrame) -> tuple[int, int]:
    """(unsolved seeds still improving at the last evaluation, unsolved seeds) over these runs."""
    ok = runs[(runs.status == "ok") & ~solved(runs)]
    return int(still_improving(ok).sum()), len(ok)


def fixed_budget(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs trained to a fixed budget: a criterion run stops when it solves, so its final loss measures the
    stop, not the parameterization (its endpoints are solved by the cap and steps to solve)."""
    return runs[runs.until != "solved"] if "until" in runs else runs


def one_protocol(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs of one protocol, for statistics over the curves: the criterion runs (each task at its longest
    cap) where there are any, since the answers read them; else the fixed-budget runs of the most common length
    (a mean over runs of different lengths would jump wherever the shorter ones end)."""
    crit = runs[runs.until == "solved"] if "until" in runs else runs.iloc[0:0]
    if len(crit):
        return at_longest(crit)
    fixed = fixed_budget(runs)
    return fixed[fixed.steps == fixed.steps.mode().iloc[0]] if len(fixed) else fixed
