"""Sentences from the statistics: what findings, scaling and endpoints compute, said in English for the
pages, `summary` and docs/results.md. Nothing here computes a statistic; the numbers come from those modules, so
their tests check numbers and these tests check the words."""

import numpy as np
import pandas as pd

from . import axes, curves, findings, scaling, stats


def _ratio(c) -> str:
    return (
        f"test loss ×{c.ratio:.3g} of the reference's, 95% CI [{c.ratio_lo:.3g}, {c.ratio_hi:.3g}], "
        f"Holm p = {stats.p_text(c.p_holm)}"
    )


def _counts(c) -> str:
    return f"solved {c.solved}/{c.n} vs {c.ref_solved}/{c.ref_n}, Fisher p = {stats.p_text(c.fisher_p)}"


def sentences(
    runs: pd.DataFrame,
    order: list[str],
    reference: str = "standard",
    best: bool = True,
    tasks: list[str] | None = None,
    cmp: pd.DataFrame | None = None,
) -> list[str]:
    """One sentence per parameterization (in `order`): its verdict against the reference on each task, with
    n, the solved counts (first, where a side has unsolved seeds) and the loss ratio with its interval. Tasks
    are named in `tasks` order (default: alphabetical), whatever order the store listed its runs in. `cmp`:
    compare_to(runs, reference, best) where the caller has it already."""
    cmp = findings.compare_to(runs, reference, best) if cmp is None else cmp
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
                unsolved = r.solved < r.n or r.ref_solved < r.ref_n
                ratio = _ratio(r) if r.test == "welch_log" else "too few finished seeds for a loss interval"
                first, then = (_counts(r), ratio) if unsolved else (ratio, _counts(r))
                parts.append(f"{v} on {r.task} ({first}; {then})")
        same = c[c.verdict == "equivalent"]
        if not same.empty:
            spans = ", ".join(f"{r.task} (×{r.eq_lo:.2g}–{r.eq_hi:.2g})" for r in same.itertuples())
            parts.append(f"equivalent within a loss ratio of {findings.RATIO_MARGIN:g}× on {spans}")
        n = sorted(set(c.n) | set(c.ref_n))
        seeds = f"n = {n[0]}" if len(n) == 1 else f"n = {n[0]}–{n[-1]}"
        where = "each at its best lr" if best else "at the lr shown"
        out.append(f"**{name}** vs {reference} ({where}, {seeds} seeds per side): " + "; ".join(parts) + ".")
    return out


SOLVED_RULE = (
    f"Solved: test accuracy ≥ {findings.SOLVED:.0%} at the end; trained to the criterion, it met the criterion on "
    f"validation and its test accuracy at the stop is ≥ {findings.SOLVED - findings.TEST_MARGIN:.0%} (the "
    "test set confirms what validation decided: one event for solved by the cap and steps to solve)."
)

FAMILY = (
    "One family, fixed by the store and not by the sidebar: every parameterization × task trained to a fixed "
    "budget it holds against the reference, at the chosen size, training and precision (tasks trained to the "
    "criterion are compared by their endpoints, Holm over their own table); Holm over it for differences, and for "
    f"equivalence by TOST at {findings.ALPHA:.0%} (the {1 - 2 * findings.ALPHA:.0%} interval of the loss ratio inside "
    f"[1/{findings.RATIO_MARGIN:g}, {findings.RATIO_MARGIN:g}])."
)


def mechanism(metrics: pd.DataFrame, runs: pd.DataFrame, name: str = "stacked", ref: str = "standard") -> str:
    """The sentence behind seeds 000/003, from curves.step_size: how far `name`'s effective W_QK moves per step
    as a multiple of `ref`'s at the same lr, and the ratio of their best lrs."""
    got = curves.step_size(metrics, runs, name, ref)
    if got is None:
        return ""
    ratio, r = got["ratio"], got["best_ratio"]
    out = (
        f"At the same learning rate, **{name}**'s effective W_QK moves {ratio.median():.1f}× as far per step as "
        f"**{ref}**'s (median over the {len(ratio)} lrs, range {ratio.min():.1f}–{ratio.max():.1f}×; each lr's the "
        f"geometric mean over its pairs of runs on the same task, seed and batches, {got['pairs'].sum()} pairs in all, "
        "compared over the steps both trained, layers averaged)."
    )
    if len(r) == 1:
        out += f" Its best lr (on validation) is {1 / r.iloc[0]:.2g}× {ref}'s on {r.index[0]}."
    elif len(r):
        out += (
            f" Its best lr (on validation) is {1 / r.max():.2g}–{1 / r.min():.2g}× {ref}'s across the "
            f"{len(r)} tasks (median {1 / r.median():.2g}×)."
        )
    return out


def protocol_label(table: pd.DataFrame) -> str:
    """How an outcomes table's runs were trained, in words: 'to the criterion, cap 6,400, 5-10 seeds' or 'a fixed
    800 steps, 5 seeds' (axis_runs keeps one protocol per axis)."""
    if table.empty:
        return "none"
    n = sorted(set(table.n))
    seeds = f"{n[0]}" if len(n) == 1 else f"{n[0]}-{n[-1]}"
    lo, hi = int(table.steps.min()), int(table.steps.max())
    steps = f"{hi:,}" if lo == hi else f"{lo:,}–{hi:,}"  # a cap raised at some settings only: both said
    crit = "until" in table and (table.until == "solved").all()
    return (f"to the criterion, cap {steps}" if crit else f"a fixed {steps} steps") + f", {seeds} seeds"


def _noun(axis: str) -> str:
    """The variable as a sentence names it: "n_heads", or "n_heads on induction" off BASE's task."""
    task = axes.AXES[axis].task if axis in axes.AXES else None
    return f"{axes.axis_var(axis)} on {task}" if task else axes.axis_var(axis)


def threshold_text(axis: str, t: float, open_at: str = "") -> str:
    """How a threshold reads: "d_head ≥ 8" or "n_heads ≤ 4" (the hardest value it solves), or "never"; with
    `open_at` (scaling.thresholds' open: where it stops solving, its seeds still improving at the cap) it says
    so, and a threshold never reached is "not by the cap", not "never"."""
    var = axes.axis_var(axis)
    if np.isnan(t):
        said = "not by the cap" if open_at else "never"
    else:
        said = f"{var} {'≥' if axes.axis_grows(axis) else '≤'} {t:g}"
    return said + (f" (open: at {var} {open_at} unsolved seeds still improving at the cap)" if open_at else "")


def threshold_cell(axis: str, r) -> str:
    """A scan column's cell in the verdict matrix: "≥ 16", "≥ 4*" (an easier setting missed), "≥ 16 open",
    "never", or "open" (never reached by the cap, its seeds still improving)."""
    if np.isnan(r.threshold):
        return "open" if r.open else "never"
    said = threshold_text(axis, r.threshold).removeprefix(f"{axes.axis_var(axis)} ")
    return said + "*" * bool(r.lapses) + " open" * bool(r.open)


def _says(axis: str, t: float) -> str:
    if np.isnan(t):
        noun = _noun(axis)
        return (
            f"needs more than the largest {noun} scanned" if axes.axis_grows(axis) else f"solves at no {noun} scanned"
        )
    return f"{'needs' if axes.axis_grows(axis) else 'solves up to'} {threshold_text(axis, t)}"


def scan_sentences(table: pd.DataFrame, axis: str, order: list[str], reference: str = "standard") -> list[str]:
    """One sentence per parameterization whose threshold differs from the reference's, e.g.
    "tied_qk needs d_head ≥ 8 where standard needs d_head ≥ 4 (...)", or on an axis along which the task gets
    harder, "tied_qk solves up to n_heads ≤ 2 where standard solves up to n_heads ≤ 4 (...)"."""
    th = scaling.thresholds(table, [reference, *[n for n in order if n != reference]])
    if th.empty or th.attention.iloc[0] != reference:
        return []
    ref, how = th.threshold.iloc[0], protocol_label(table).rsplit(",", 1)[0]  # 'to the criterion, cap 6,400'
    out = []
    for r in th.iloc[1:].itertuples():
        same = r.threshold == ref or (np.isnan(r.threshold) and np.isnan(ref))
        if same and not r.lapses:
            continue
        where = f", as {reference} does" if same else f" where {reference} {_says(axis, ref)}"
        out.append(
            f"**{r.attention}** {_says(axis, r.threshold)}{where} (the hardest {_noun(axis)} at which it "
            f"solves ≥ {findings.ROBUST:.0%} of its seeds at its best lr, {how}; scanned {r.scanned}"
            + (f"; open: at {axes.axis_var(axis)} {r.open} unsolved seeds still improving" if r.open else "")
            + ")"
            + (f", but not at the easier {axes.axis_var(axis)} {r.lapses}." if r.lapses else ".")
        )
    return out


def brief(table: pd.DataFrame, axis: str, names: list[str], reference: str = "standard") -> str:
    """sentences in one line, for a glance: "`bilinear` solves at d_head ≥ 4* (standard: d_head ≥ 16)"; "*": an
    easier setting it then misses. Empty where the axis has none of `names` or no reference."""
    th = scaling.thresholds(table, [reference, *[n for n in names if n != reference]])
    if th.empty or th.attention.iloc[0] != reference or len(th) < 2:
        return ""

    def at(r) -> str:
        missed = "*" * bool(r.lapses) + " (open)" * bool(r.open)
        return (f"no {_noun(axis)}" if np.isnan(r.threshold) else threshold_text(axis, r.threshold)) + missed

    rows = [f"`{r.attention}` solves at {at(r)}" for r in th.iloc[1:].itertuples()]
    return ", ".join(rows) + f" ({reference}: {at(next(th.itertuples()))})"


def equal_budget(table: pd.DataFrame, name: str = "bilinear") -> str:
    """001's second reading: along d_head a D×D W_QK costs the same at every d_head, so the thresholds compare
    unequal budgets; the settings at which `name` and standard spend about the same attention parameters."""
    said = [
        f"`{name}` at d_head {a.x:g} ({a.params_attention:,.0f}; {a.solved}/{a.n}) against `standard` at "
        f"d_head {b.x:g} ({b.params_attention:,.0f}; {b.solved}/{b.n})"
        for a, b in scaling.equal_parameters(table, name)
    ]
    return (
        " At equal attention parameters per layer (within 25%; solved seeds): " + "; ".join(said) + "." if said else ""
    )


def practice(models: pd.DataFrame, random_of) -> str:
    """002's real-model half: W_Q against W_K in the pretrained models (similarity.practice; n = 1 model per
    class) beside random matrices of each model's shapes (random_of(d_model, d_head): metric -> mean)."""
    said = []
    for r in models.itertuples():
        rand = random_of(int(r.d_model), int(r.d_head))
        said.append(
            f"{r.model} ({r.kind}) sym_QK {r.sym_QK:.2f} (random {rand['sym_QK']:.2f}), cos(W_Q, W_K) "
            f"{r.cos_QK:.2f} (random {rand['cos_QK']:.2f})"
        )
    lead = " In real trained models (n = 1 model per class; In practice page), tied W_Q = W_K would give sym_QK 1: "
    return lead + "; ".join(said) + "." if said else ""


def layer_control(table: pd.DataFrame, names: list[str]) -> str:
    """' On induction (...): `identity` 0/5 with 2 layers; ...': endpoints.layer_control's counts for `names`
    and standard, two layers beside one, each at its cell's best lr."""
    if table.empty:
        return ""
    at = lambda n, L: table[(table.attention == n) & (table.n_layers == L)]  # noqa: E731
    said = [
        f"`{n}` {r.solved}/{r.seeds} with {L} layer{'s' * (L > 1)}"
        + (f" ({r.improving} still improving at {r.cap:,} steps: open)" if r.improving else "")
        for n in (*names, "standard")
        for L in (2, 1)
        for r in at(n, L).itertuples()
    ]
    lead = " On induction (a token's earlier successor recalled at varying offsets; trained to the criterion): "
    return lead + "; ".join(said) + "." if said else ""
