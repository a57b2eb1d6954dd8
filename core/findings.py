"""Every statistic the app and README state, in one place: best-lr selection, outcome counts with
intervals, and comparisons with a verdict a statistician would sign. Pure numpy and pandas.

The rules, stated once:
- longest: each task (per model size) is read at the longest training the store holds for it, so a task
  retrained for longer (to rule out truncation) replaces its shorter runs in every comparison.
- best lr: per cell (attention, task, model size, steps), the lr whose seeds have the lowest mean
  *validation* loss; a diverged seed counts as infinite loss; ties go to the smaller lr. The test set
  is never used to choose anything.
- solved: test accuracy >= SOLVED on the answer positions; counted k/n with a Wilson 95% interval.
- compare_to: difference in mean test loss with a Welch 95% CI (t at the Welch-Satterthwaite df),
  solved counts with Fisher's exact p, and a verdict: `equivalent` only when the whole CI lies
  inside +-EQUIV_MARGIN (two one-sided tests at 5%); `better` / `worse` when the CI excludes 0;
  otherwise `inconclusive` (a difference not detected is not a sameness shown).
"""

import math

import numpy as np
import pandas as pd

SOLVED = 0.95  # test accuracy that counts as solving a task
EQUIV_MARGIN = 0.05  # nats of mean test loss: differences inside it do not matter here (~5% perplexity)
IMPROVING = 0.02  # over the last fifth of training: val loss fell by 2% (relative) or val accuracy rose 2 points
CELL = ["attention", "task", "n_layers", "d_model", "n_heads", "d_head", "n_kv_heads", "mlp", "steps", "batch_size"]


def _cell(runs: pd.DataFrame) -> list[str]:
    return [c for c in CELL if c in runs.columns]


def _val(runs: pd.DataFrame) -> pd.Series:
    val = runs.get("val_loss", pd.Series(np.nan, index=runs.index)).astype(float)
    return val.where(runs.status == "ok", np.inf)  # a diverged seed makes its lr lose


def best_lr(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per cell with the chosen `lr`, its mean validation loss and its number of seeds."""
    if runs.empty:
        return pd.DataFrame(columns=[*CELL, "lr", "val_loss", "n"])
    df = runs.assign(_val=_val(runs))
    per_lr = df.groupby([*_cell(df), "lr"], dropna=False).agg(val_loss=("_val", "mean"), n=("seed", "count"))
    per_lr = per_lr.reset_index()
    single = per_lr.groupby(_cell(df), dropna=False).lr.transform("count") == 1
    per_lr = per_lr[single | per_lr.val_loss.notna()]  # several lrs and no validation (an old store): no choice
    per_lr = per_lr.sort_values(["val_loss", "lr"], na_position="last", kind="stable")  # ties: the smaller lr
    return per_lr.groupby(_cell(df), dropna=False, sort=False).head(1).reset_index(drop=True)


SIZE = ["n_layers", "d_model", "n_heads", "d_head", "n_kv_heads", "mlp"]


def at_longest(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs of each task and model size at the most steps any of them trained: every parameterization
    of a task is compared at one training length."""
    if runs.empty:
        return runs
    keys = ["task", *[c for c in SIZE if c in runs.columns]]
    return runs[runs.steps == runs.groupby(keys).steps.transform("max")]


def at_best_lr(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs (every seed, diverged ones too) at their cell's best lr."""
    if runs.empty:
        return runs
    best = best_lr(runs)[[*_cell(runs), "lr"]]
    return runs.merge(best, on=[*_cell(runs), "lr"], how="inner")


# ---- intervals and tests ---------------------------------------------------------------------
def wilson(k: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score 95% interval for k successes in n trials."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def fisher_exact(k1: int, n1: int, k2: int, n2: int) -> float:
    """Two-sided Fisher exact p for the 2x2 table (k1 of n1) vs (k2 of n2)."""
    total, k = n1 + n2, k1 + k2

    def prob(a: int) -> float:
        return math.comb(n1, a) * math.comb(n2, k - a) / math.comb(total, k)

    observed = prob(k1)
    support = range(max(0, k - n2), min(k, n1) + 1)
    return min(1.0, sum(prob(a) for a in support if prob(a) <= observed * (1 + 1e-9)))


def _t_pdf(x: float, df: float) -> float:
    log_c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    return float(np.exp(log_c - (df + 1) / 2 * np.log1p(np.asarray(x) ** 2 / df)))


def _t_cdf(x: float, df: float) -> float:
    """Student t CDF by integrating its density (numpy only: the app does not ship scipy)."""
    grid = np.linspace(0.0, abs(x), 4001)
    log_c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    pdf = np.exp(log_c - (df + 1) / 2 * np.log1p(grid**2 / df))
    area = float(np.sum((pdf[1:] + pdf[:-1]) * np.diff(grid)) / 2)
    return 0.5 + math.copysign(area, x)


def t_quantile(q: float, df: float) -> float:
    """The q-quantile (q > 0.5) of Student's t with df degrees of freedom, by Newton's method from 0: the CDF is
    concave for x > 0, so each step lands at or below the root and the iterates rise to it without overshoot."""
    x = 0.0
    for _ in range(100):
        step = (q - _t_cdf(x, df)) / _t_pdf(x, df)
        x += step
        if step < 1e-9 * max(1.0, x):
            break
    return x


def welch_ci(a: np.ndarray, b: np.ndarray, level: float = 0.95) -> tuple[float, float, float, float]:
    """mean(a) - mean(b), its CI at `level` (Welch t, Welch-Satterthwaite df), and the df."""
    na, nb = len(a), len(b)
    diff = float(np.mean(a) - np.mean(b))
    va, vb = np.var(a, ddof=1) / na, np.var(b, ddof=1) / nb
    se = math.sqrt(va + vb)
    if se == 0:
        return diff, diff, diff, float(na + nb - 2)
    df = (va + vb) ** 2 / (va**2 / (na - 1) + vb**2 / (nb - 1))
    half = t_quantile(1 - (1 - level) / 2, df) * se
    return diff, diff - half, diff + half, float(df)


def verdict(lo: float, hi: float, margin: float = EQUIV_MARGIN) -> str:
    if -margin < lo and hi < margin:
        return "equivalent"
    if hi < 0:
        return "better"
    if lo > 0:
        return "worse"
    return "inconclusive"


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
        acc = g.test_acc.where(g.status == "ok", 0.0).fillna(0.0)
        solved = int((acc >= SOLVED).sum())
        lo, hi = wilson(solved, len(g))
        improving, _ = improving_share(g)
        lrs = sorted(set(g.lr))
        rows.append({
            "task": task, "attention": name, "lr": lrs[0] if len(lrs) == 1 else np.nan, "seeds": len(g),
            "diverged": int((g.status != "ok").sum()), "solved": solved, "solved_lo": lo, "solved_hi": hi,
            "test_loss": ok.test_loss.mean(), "test_loss_std": ok.test_loss.std(), "test_acc": ok.test_acc.mean(),
            "test_acc_std": ok.test_acc.std(), "improving": improving,
            "params_attention": g.params_attention.iloc[0], "params_total": g.params_total.iloc[0],
            "seconds_per_step": g.seconds_per_step.mean(),
        })  # fmt: skip
    return pd.DataFrame(rows).fillna({"test_loss_std": 0.0, "test_acc_std": 0.0})


def compare_to(runs: pd.DataFrame, reference: str = "standard", best: bool = True) -> pd.DataFrame:
    """Per (attention, task) against the reference, each at its own best lr (best=False: as given):
    diff (mean test loss minus the reference's) with ci_lo/ci_hi (Welch 95%) and df, solved k/n of both
    with Fisher's p, and the verdict (equivalent / better / worse / inconclusive; see the module doc)."""
    df = at_best_lr(runs) if best else runs
    ok = df[df.status == "ok"]
    rows = []
    for (name, task), g in df.groupby(["attention", "task"], sort=False):
        ref = df[(df.attention == reference) & (df.task == task)]
        if name == reference or ref.empty:
            continue
        a = ok[(ok.attention == name) & (ok.task == task)].test_loss.to_numpy(float)
        b = ok[(ok.attention == reference) & (ok.task == task)].test_loss.to_numpy(float)
        k = [int(((x.test_acc >= SOLVED) & (x.status == "ok")).sum()) for x in (g, ref)]
        row = {"attention": name, "task": task, "lr": g.lr.iloc[0], "ref_lr": ref.lr.iloc[0], "n": len(g),
               "ref_n": len(ref), "solved": k[0], "ref_solved": k[1], "diff": np.nan, "ci_lo": np.nan,
               "ci_hi": np.nan, "df": np.nan, "verdict": "inconclusive"}  # fmt: skip
        row["fisher_p"] = fisher_exact(k[0], len(g), k[1], len(ref))
        if len(a) >= 2 and len(b) >= 2:
            row["diff"], row["ci_lo"], row["ci_hi"], row["df"] = welch_ci(a, b)
            row["verdict"] = verdict(row["ci_lo"], row["ci_hi"])
        rows.append(row)
    return pd.DataFrame(rows)


def improving_share(runs: pd.DataFrame) -> tuple[int, int]:
    """(unsolved seeds still improving at the last evaluation, unsolved seeds) over these runs."""
    ok = runs[(runs.status == "ok") & (runs.test_acc < SOLVED)]
    improving = (ok.get("val_loss_drop", 0) > IMPROVING) | (ok.get("val_acc_gain", 0) > IMPROVING)
    return int(np.sum(improving)), len(ok)


def _ci(c) -> str:
    return f"Δ test loss {c.diff:+.3f}, 95% CI [{c.ci_lo:+.3f}, {c.ci_hi:+.3f}]"


def sentences(
    runs: pd.DataFrame, order: list[str], reference: str = "standard", best: bool = True, tasks: list[str] | None = None
) -> list[str]:
    """One sentence per parameterization (in `order`): its verdict against the reference on each task, with
    n, the interval and the solved counts the verdict rests on. Tasks are named in `tasks` order
    (default: alphabetical), whatever order the store listed its runs in."""
    cmp = compare_to(runs, reference, best)
    if cmp.empty:
        return []
    rank = {t: i for i, t in enumerate(tasks or sorted(set(cmp.task)))}
    cmp = cmp.sort_values("task", key=lambda t: t.map(rank).fillna(len(rank)), kind="stable")
    out = []
    for name in [n for n in order if n in set(cmp.attention)]:
        c = cmp[cmp.attention == name]
        parts = []
        for v in ("worse", "better", "inconclusive"):
            for r in c[c.verdict == v].itertuples():
                stat = _ci(r) if not np.isnan(r.diff) else "too few finished seeds for an interval"
                parts.append(f"{v} on {r.task} ({stat}; solved {r.solved}/{r.n} vs {r.ref_solved}/{r.ref_n}, "
                             f"Fisher p = {r.fisher_p:.2g})")  # fmt: skip
        same = c[c.verdict == "equivalent"].task.tolist()
        if same:
            parts.append(f"equivalent within ±{EQUIV_MARGIN} nats on {', '.join(same)}")
        n = sorted(set(c.n) | set(c.ref_n))
        seeds = f"n = {n[0]}" if len(n) == 1 else f"n = {n[0]}–{n[-1]}"
        where = "each at its best lr" if best else "at the lr shown"
        out.append(f"**{name}** vs {reference} ({where}, {seeds} seeds per side): " + "; ".join(parts) + ".")
    return out


# ---- from the metrics over training --------------------------------------------------------------
def time_to_solve(metrics: pd.DataFrame) -> pd.Series:
    """Per run_id: the first evaluation step with validation accuracy >= SOLVED (absent if never)."""
    v = metrics[(metrics.metric == "val_acc") & (metrics.value >= SOLVED)]
    return v.groupby("run_id").step.min()


def update_sizes(metrics: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """Mean relative update per step of the effective W_QK and W_OV: rows matrix, attention, lr, step, value
    (mean over seeds, layers and the runs' tasks)."""
    m = metrics[metrics.metric.str.startswith("update_")]
    if m.empty:
        return pd.DataFrame(columns=["matrix", "attention", "lr", "step", "value"])
    m = m.assign(matrix=m.metric.str.slice(7, 9).map({"qk": "W_QK", "ov": "W_OV"}))
    m = m.merge(runs[["run_id", "attention", "lr"]], on="run_id")
    return m.groupby(["matrix", "attention", "lr", "step"], as_index=False).value.mean()


def mechanism(sizes: pd.DataFrame, runs: pd.DataFrame, name: str = "stacked", ref: str = "standard") -> str:
    """The sentence behind seeds 000/003: how far `name`'s effective W_QK moves per step as a multiple
    of `ref`'s at the same lr, and the ratio of their best lrs, both computed from the runs."""
    qk = sizes[(sizes.matrix == "W_QK") & sizes.attention.isin([name, ref])]
    per = qk.groupby(["attention", "lr"]).value.mean().unstack("attention")
    if name not in per or ref not in per:
        return ""
    ratio = (per[name] / per[ref]).dropna()
    best = best_lr(runs)
    b = best[best.attention.isin([name, ref])].pivot_table(index="task", columns="attention", values="lr")
    if ratio.empty:
        return ""
    out = (f"At the same learning rate, **{name}**'s effective W_QK moves {ratio.median():.1f}× as far per step as "
           f"**{ref}**'s (median over the {len(ratio)} lrs, range {ratio.min():.1f}–{ratio.max():.1f}×; mean over "
           f"training, layers, seeds and tasks).")  # fmt: skip
    if name in b and ref in b:
        r = (b[ref] / b[name]).dropna()
        out += (f" Its best lr (on validation) is {1 / r.max():.2g}–{1 / r.min():.2g}× {ref}'s across the "
                f"{len(r)} tasks (median {1 / r.median():.2g}×).")  # fmt: skip
    return out


def mean_ci(values, level: float = 0.95) -> tuple[float, float, float]:
    """Mean and its t interval (n - 1 df); the interval is the mean itself when n < 2."""
    x = np.asarray(values, dtype=float)
    m = float(np.mean(x))
    if len(x) < 2:
        return m, m, m
    half = t_quantile(1 - (1 - level) / 2, len(x) - 1) * float(np.std(x, ddof=1)) / math.sqrt(len(x))
    return m, m - half, m + half


def matched_baselines(trained: pd.DataFrame, init: pd.DataFrame, random: pd.DataFrame, runs: pd.DataFrame,
                      metric: str) -> pd.DataFrame:  # fmt: skip
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
        change = mean_ci(paired) if paired else (np.nan, np.nan, np.nan)
        rr = random[(random.attention == name) & (random.metric == metric)] if not random.empty else random
        rows.append({
            "task": task, "attention": name, "seeds": len(ids), "trained": t[ids].mean(), "trained_std": t[ids].std(),
            "step0": s0.reindex(ids).mean(), "change": change[0], "change_lo": change[1], "change_hi": change[2],
            "random_init": rr["mean"].iloc[0] if len(rr) else np.nan,
            "random_init_std": rr["std"].iloc[0] if len(rr) else np.nan,
            "by_construction": bool(rr.by_construction.iloc[0]) if len(rr) else False,
        })  # fmt: skip
    return pd.DataFrame(rows)
