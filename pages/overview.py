"""Overview: what is compared and why, and the summary table of every parameterization x task."""

import numpy as np
import pandas as pd
import streamlit as st

from core import findings, plots, ui
from core.plots import ORDER
from core.tasks import TASKS

ui.require_router()
st.title("Why does attention use the projections it does?")
st.markdown(
    "Tiny transformers, identical except for how attention is parameterized, trained on synthetic tasks "
    "with several seeds at each of several learning rates. Every parameterization is compared at its own best "
    "learning rate, chosen on a validation set; every number is reported on a separate test set and read from "
    "the store the sidebar names."
)

st.subheader("The questions")
BEST = {"lr": ui.BEST}  # every answer at each parameterization's own best learning rate
QUESTIONS = [
    (
        "Is a second per-head projection after a shared one, q_i = x W^Q W_i^Q, redundant? (seeds 000, 003)",
        "pages/parameters.py",
        "the fold and the step size",
        {},
    ),
    (
        "Why keep W_i^Q and W_i^K separate instead of one D×D matrix W_i = W_i^Q W_i^Kᵀ? (seed 001)",
        "pages/loss_curves.py",
        "bilinear vs standard",
        {"attn": "standard,bilinear"},
    ),
    (
        "Why not one matrix W = W^Q = W^K = W^V, and how similar are the three after training? (seed 002)",
        "pages/similarity.py",
        "learned-matrix similarity",
        {"attn": "standard,tied_qk,tied_qkv", "sim_metric": "cos_QK"},
    ),
    (
        "What does multi-head attention add over plain self-attention with Q = K = V = X? (seed 004)",
        "pages/loss_curves.py",
        "identity vs standard",
        {"attn": "standard,identity", "metric": "test_acc"},
    ),
    ("Is each comparison at a fair learning rate?", "pages/learning_rate.py", "the lr sweep", {}),
    ("What do the alternatives cost in time?", "pages/runtime.py", "runtime", {}),
]
for question, page, what, params in QUESTIONS:
    cols = st.columns([5, 2])
    cols[0].markdown(f"- {question}")
    cols[1].page_link(page, label=f"→ {what}", query_params={**BEST, **params})

with st.expander("The tasks (synthetic; two fixed held-out sets of 256 examples: validation and test)"):
    for name, task in TASKS.items():
        st.markdown(f"- **{name}**: {task.description}")
    st.caption(
        "Validation chooses (each parameterization's best learning rate, time to solve); test is what every "
        "number here reports. Neither set is ever trained on."
    )

runs = ui.selected_runs()
if not ui.require_runs(runs):
    st.stop()
lr_mode = ui.selection().get("lr", ui.BEST)
multi_lr = runs.groupby(["task", "attention"]).lr.nunique().max() > 1

st.subheader("Findings")
order = [n for n in ORDER if n in set(runs.attention)]
if multi_lr:
    st.info("Findings compare one lr per parameterization: pick `best` or one lr in the sidebar.")
elif "standard" in order:
    for line in findings.sentences(runs, order, best=lr_mode == ui.BEST, tasks=ui.selection()["tasks"]):
        st.markdown(f"- {line}")
    lr_text = "each at its own best lr (lowest mean validation loss)" if lr_mode == ui.BEST else f"all at lr {lr_mode}"
    st.caption(
        f"Compared {lr_text}; reported on the test set. Δ: mean final test loss minus standard's, with a Welch 95% "
        f"interval over seeds. **equivalent**: the whole interval inside ±{findings.EQUIV_MARGIN} nats; "
        "**better/worse**: the interval excludes 0; **inconclusive**: neither (no difference detected is not "
        f"sameness shown). Solved: test accuracy ≥ {findings.SOLVED:.0%}; Fisher's exact p compares the counts."
    )
else:
    st.info("Select `standard` in the sidebar to compare every parameterization against it.")
diverged = runs[runs.status != "ok"]
if not diverged.empty:
    st.warning(
        f"{len(diverged)} run(s) diverged: they count as unsolved and are left out of the loss means: "
        + ", ".join(f"{r.attention}/{r.task}/lr {r.lr:g}/seed {r.seed}" for r in diverged.itertuples())
    )

st.subheader("Summary: solved k/n with a 95% interval, and mean ± std over seeds")
tasks = ui.selection()["tasks"]
parts = (
    [findings.summary(g, tasks, ORDER) for _, g in runs.groupby("lr")]
    if multi_lr
    else [findings.summary(runs, tasks, ORDER)]
)
table = pd.concat(parts, ignore_index=True)
chance = ui.chance_levels()
table["chance (in context)"] = table.task.map(lambda t: chance[t]["in_context"])
table["chance (unqueried)"] = table.task.map(lambda t: chance[t].get("unqueried", np.nan))
shown = table.assign(
    solved=[
        f"{k}/{n} [{lo:.2f}, {hi:.2f}]"
        for k, n, lo, hi in zip(table.solved, table.seeds, table.solved_lo, table.solved_hi)
    ],
    test_acc=ui.fmt_mean_std(table.test_acc, table.test_acc_std, 3),
    test_loss=ui.fmt_mean_std(table.test_loss, table.test_loss_std, 4),
    improving=[f"{i}/{n - k}" if n > k else "–" for i, n, k in zip(table.improving, table.seeds, table.solved)],
).drop(columns=["test_loss_std", "test_acc_std", "solved_lo", "solved_hi"])
st.dataframe(
    shown,
    hide_index=True,
    width="stretch",
    column_config={
        "lr": st.column_config.NumberColumn("lr", format="%.0e"),
        "solved": st.column_config.TextColumn("solved k/n [Wilson 95%]"),
        "improving": st.column_config.TextColumn("unsolved, still improving"),
        "seconds_per_step": st.column_config.NumberColumn("s / step (ensemble)", format="%.4f"),
        "chance (in context)": st.column_config.NumberColumn(format="%.3f"),
        "chance (unqueried)": st.column_config.NumberColumn(format="%.3f"),
    },
)
ui.download(table, "summary")
st.caption(
    "Seconds per step are for the whole ensemble (every seed and lr of a configuration trains together). "
    "'Still improving': unsolved seeds whose validation loss fell by over 2% (or accuracy rose 2 points) over the "
    "last fifth of training; a 'fails' there may be a budget artefact. Chance: copying a random in-context "
    "candidate; for associative_recall also among the pairs not yet queried (the elimination plateau)."
)

st.subheader("Every seed's final test accuracy")
dots = runs[runs.status == "ok"][["task", "attention", "seed", "lr", "test_acc"]]
levels = {t: {k: v for k, v in chance[t].items() if k != "uniform"} for t in dots.task.unique()}
shown_tasks = [t for t in tasks if t in set(dots.task)]
fig = plots.strip(dots, "test_acc", shown_tasks, levels, "final test accuracy")
ui.chart(fig, dots, "seeds-test-acc")
st.caption(
    "One dot per seed: a bimodal outcome (some seeds solve, some do not) shows as two clusters that a mean ± std "
    "hides. Lines: the chance levels of the table."
)
