"""docs/results.md: every table and numeric claim about a store, each computed by core/analysis."""

from pathlib import Path

import pandas as pd

from ..analysis import (
    axes,
    endpoint_words,
    endpoints,
    findings,
    markdown,
    open_check,
    scaling,
    sensitivity,
    similarity,
    stats,
    views,
    words,
)
from ..attention import NAMES
from ..experiments.sweep import accuracy_table
from ..results import store as st
from ..training.task_specs import TASK_NAMES
from .common import HEADER


def _protocol(runs: pd.DataFrame) -> str:
    rank = {t: i for i, t in enumerate(TASK_NAMES)}
    how = endpoints.protocol(runs).sort_values(["task", "steps"], key=lambda c: c.map(rank) if c.name == "task" else c)
    how["protocol"] = [
        f"to the criterion (validation accuracy ≥ {findings.SOLVED:.0%} twice), cap {r.steps:,}"
        if r.until == "solved"
        else f"a fixed {r.steps:,} steps (cosine)"
        for r in how.itertuples()
    ]
    both = how.groupby("task").until.transform("nunique") > 1
    how["read by"] = [
        "the scaling scans (their base point)" if b and u == "steps" else "every page" for b, u in zip(both, how.until)
    ]
    return markdown.table(how[["task", "protocol", "seeds", "read by"]])


def _endpoints(runs: pd.DataFrame) -> str:
    table = endpoints.endpoints(runs, list(NAMES), list(TASK_NAMES))
    if table.empty:
        return "No runs trained to the criterion."
    said = endpoint_words.steps_text
    out = pd.DataFrame(
        {
            "task": table.task,
            "parameterization": table.attention,
            "lr": table.lr.map("{:g}".format),
            "cap": table.cap.map("{:,}".format),
            "solved by the cap": [
                f"{r.solved}/{r.seeds} [{r.solved_lo:.2f}, {r.solved_hi:.2f}]" for r in table.itertuples()
            ],
            "steps to solve": [
                f"{said(r.median_steps)} [{said(r.median_lo)}, {said(r.median_hi)}]" for r in table.itertuples()
            ],
            "Holm p (Fisher / log-rank)": [
                "" if r.attention == "standard" else f"{stats.p_text(r.fisher_holm)} / {stats.p_text(r.logrank_holm)}"
                for r in table.itertuples()
            ],
            "against standard": [endpoints.verdict(r) for r in table.itertuples()],
        }
    )
    return markdown.table(out)


def _open_check(store: Path, runs: pd.DataFrame) -> str:
    ids = runs.run_id[runs.steps > open_check.FIRST_CAP]
    pairs = open_check.at_lower_caps(runs, st.load_metrics(store, ids, ["val_acc", "val_loss"]))
    if pairs.empty:
        return "No run has been trained past a lower cap yet."
    table = open_check.check(pairs)
    caps = ", ".join(f"{c:,}" for c in sorted(pairs.cap.unique()))
    out = pd.DataFrame(
        {
            "read at C": [f"{r.unit}: {r.said}" for r in table.itertuples()],
            "n": table.n,
            "solved by 2C (a cell: any of its seeds)": [
                f"{r.solved_next} [{r.lo:.2f}, {r.hi:.2f}]" for r in table.itertuples()
            ],
            "Fisher p (the two rows)": [stats.p_text(p) for p in table.p],
        }
    )
    return (
        f"{len(pairs):,} (seed, C) pairs from {pairs.run_id.nunique():,} runs, at C = {caps}: each run a raised cap "
        "trained past C unsolved, read at C from its stored curve (the schedule does not depend on the cap, so its "
        "first C steps are the run to C), against whether it solved by 2C, the next cap; a cell is one lr of one "
        "point. Only raised points are here; a closed cell among them was raised with its point (core.analysis."
        "open_check). Solved by 2C: k of n, Wilson 95% interval.\n\n" + markdown.table(out)
    )


def _layer_control(runs: pd.DataFrame) -> str:
    table = endpoints.layer_control(runs)
    if table.empty:
        return "No induction runs trained to the criterion."
    wide = table.assign(
        cell=[
            f"{r.solved}/{r.seeds} [{r.solved_lo:.2f}, {r.solved_hi:.2f}] by {r.cap:,}"
            + (f"; {r.improving} improving: open" if r.improving else "")
            for r in table.itertuples()
        ]
    )
    wide = wide.pivot(index="attention", columns="n_layers", values="cell").reindex(
        [n for n in NAMES if n in set(table.attention)]
    )
    wide.columns = [f"{c} layer{'s' * (c > 1)}" for c in wide.columns]
    one = table[table.n_layers == 1]
    grid = (
        f"\n\nEach cell at its best lr on validation; over every lr of the grid, {one.grid_solved.sum()} of the "
        f"{one.grid_runs.sum()} one-layer runs solved. A cell is open where its unsolved seeds were still improving "
        "at the cap (more steps might solve them)."
    )
    return markdown.table(wide.fillna("").reset_index().rename(columns={"attention": "parameterization"})) + grid


def _heads(store: Path, runs: pd.DataFrame) -> str:
    table = views.strongest_heads(st.load_table(store, "analysis", "heads"), runs, list(NAMES))
    if table.empty:
        return "No head scores (`python -m core baselines` computes them for every kept model)."
    table = table.assign(lr=table.lr.map("{:g}".format)).round(2)
    table = table.rename(
        columns={
            "attention": "parameterization",
            "n_layers": "layers",
            "test_acc": "test accuracy",
            "prev_token": "previous-token",
            "induction": "induction (prefix matching)",
        }
    )
    return markdown.table(table.drop(columns="run_id")) + (
        "\n\nEach kept model (seed 0 at its cell's best lr): its test accuracy at the stop and its strongest head "
        "by each score, on held-out repeated random tokens (the Attention maps page gives every head). Uniform "
        "attention scores about 1 / position; an induction head scores near 1."
    )


def _sensitivity(runs: pd.DataFrame) -> str:
    sens = sensitivity.lr_sensitivity(runs)
    rank = {n: i for i, n in enumerate([*TASK_NAMES, *NAMES])}
    sens = sens.sort_values(["task", "attention"], key=lambda c: c.map(rank))
    out = sens.assign(
        solving=[
            f"{r.lrs_solving} of {r.lrs}" + (f" or more ({r.lrs_pruned} pruned)" if r.lrs_pruned else "")
            for r in sens.itertuples()
        ]
    )
    return markdown.table(
        out[["task", "attention", "solving", "per_lr"]].rename(
            columns={"attention": "parameterization", "per_lr": "seeds solved per lr"}
        )
    )


def _scaling(everything: pd.DataFrame) -> list[str]:
    order = list(NAMES)
    out = []
    for axis in axes.axes_present(everything):
        spec, table = axes.AXES[axis], scaling.outcomes(everything, axis)
        out += [f"### {spec.label}", "", f"Each cell at its best lr; {words.protocol_label(table)}.", ""]
        out += [scaling.grid_markdown(scaling.solved_grid(table, order), axis), ""]
        th = scaling.thresholds(table, order)
        th = th.assign(
            threshold=[words.threshold_text(axis, t, o) for t, o in zip(th.threshold, th.open)],
            p_holm=th.p_holm.map(stats.p_text),
        )
        out += [
            markdown.table(
                th[["attention", "threshold", "lapses", "lr_edge", "vs_reference", "p_holm", "verdict"]]
                .rename(columns={"lr_edge": "best lr at the grid's edge"})
                .fillna("")
            ),
            "",
        ]
        out += [f"- {line}" for line in words.scan_sentences(table, axis, order)]
        if axis == "d_head" and (budget := words.equal_budget(table)):
            out.append(f"-{budget}")
        out.append("")
    return out


def _practice(store: Path) -> str:
    pre = st.load_named(store, "pretrained")
    if pre.empty or "value" not in pre:
        return "No pretrained models in this store (`python -m core pretrained`)."
    table = similarity.practice(pre)
    rand = st.load_table(store, "analysis", "random_shapes")
    for metric in ("sym_QK", "cos_QK"):
        r = rand[rand.metric == metric].set_index(["d_model", "d_head"])["mean"] if not rand.empty else pd.Series()
        at = [r.get((m, h), float("nan")) for m, h in zip(table.d_model, table.d_head)]
        table[metric] = [f"{v:.2f} (random {round(b, 2) + 0.0:.2f})" for v, b in zip(table[metric], at)]
    return markdown.table(table) + "\n\nsym_QK is 1 where W_Q = W_K (tied_qk); n = 1 model per class."


def _step_size(store: Path, runs: pd.DataFrame) -> str:
    every = findings.one_protocol(runs[runs.status == "ok"])
    names = [f"update_qk.{i}" for i in range(int(every.n_layers.max()))]
    return words.mechanism(st.load_metrics(store, list(every.run_id), names), every) or "No update-size metrics."


def _chance(store: Path) -> str:
    chance = st.load_table(store, "analysis", "chance")
    if chance.empty:
        return "No chance levels stored (`python -m core baselines`)."
    wide = chance.pivot(index="task", columns="guesser", values="accuracy")
    wide = wide.map(lambda v: "" if pd.isna(v) else f"{v:.3f}")
    return markdown.table(wide.reindex([t for t in TASK_NAMES if t in wide.index]).reset_index())


def results(store: Path, command: str) -> str:
    """docs/results.md: every table and numeric claim about the store, each computed by core/analysis."""
    everything = st.load_runs(store)
    runs = findings.at_main_size(everything)
    at = findings.at_longest(runs)
    lines = [
        "# Results",
        "",
        HEADER.format(command=command),
        "",
        f"{len(everything):,} runs. Every cell is each parameterization at its own best learning rate, chosen on "
        "validation; every number is on the held-out test set. "
        f"{words.SOLVED_RULE} How each table was made: [reproduce.md](reproduce.md).",
        "",
        "## Protocol per task (the bundled point: d_model 64, 4 heads of 16, 2 layers)",
        "",
        _protocol(runs),
        "",
        "## Accuracy",
        "",
        "Solved seeds k/n with a Wilson 95% interval, mean ± std of test accuracy, and the lr.",
        "",
        accuracy_table(runs, markdown=True),
        "",
        "## Against standard, on the tasks trained to a fixed budget: test-loss ratios",
        "",
        "Ratio of geometric-mean test losses with a Welch 95% interval on log loss. " + words.FAMILY,
        "",
        *(
            [f"- {line}" for line in words.sentences(findings.fixed_budget(at), list(NAMES), tasks=list(TASK_NAMES))]
            or ["None: every task at the bundled point is trained to the criterion (its endpoints are below)."]
        ),
        "",
        "## 000/003: a second projection after a shared one (`stacked`)",
        "",
        _step_size(store, runs),
        "",
        "## Chance levels (test accuracy of simple guessers, on the test set)",
        "",
        _chance(store),
        "",
        "## Trained to the criterion: solved by the cap, and steps to solve",
        "",
        "Solved by the cap: the criterion met on validation, confirmed on test "
        f"(≥ {findings.SOLVED - findings.TEST_MARGIN:.0%} at the stop: {findings.TEST_MARGIN:g} is "
        "three standard errors of the difference between two held-out sets "
        "of 2,048 answers at 95%). Steps to solve: its solve step, the Kaplan-Meier median [95%], every other seed "
        "censored at the cap. Fisher's exact test and the log-rank test against standard, Holm over the table. "
        "Open: more than a tenth of the censored seeds were still improving at the cap.",
        "",
        _endpoints(runs),
        "",
        endpoint_words.power_note(endpoints.endpoints(runs, list(NAMES), list(TASK_NAMES))),
        "",
        "## Is a seed still improving at the cap a sign that more steps help? (the open rule, checked)",
        "",
        _open_check(store, everything),
        "",
        "## The one-layer control (induction)",
        "",
        _layer_control(everything),
        "",
        _heads(store, everything),
        "",
        f"## Learning-rate sensitivity: lrs of the grid solving ≥ {findings.ROBUST:.0%} of seeds",
        "",
        "Trained to the criterion, an lr stops once it can no longer be chosen (its seeds could no longer solve more, "
        "or sooner, than an lr that finished): its seeds solved by then are a lower bound, marked pruned.",
        "",
        _sensitivity(at),
        "",
        "## Scaling scans (associative recall)",
        "",
        "Best lr at the grid's edge: at the setting where a parameterization stops solving, its best lr there was "
        "the lowest or highest it trained, so a wider lr grid (for the whole point) may move the threshold.",
        "",
        *_scaling(everything),
        "## In practice: W_Q against W_K in real models (002)",
        "",
        _practice(store),
        "",
    ]
    return "\n".join(lines)
