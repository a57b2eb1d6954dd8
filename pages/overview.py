"""Overview: what is compared and why, and the summary table of every parameterization x task."""

import streamlit as st

from core import findings, ui
from core.plots import ORDER
from core.tasks import TASKS

ui.require_router()
st.title("Why does attention use the projections it does?")
st.markdown(
    "Tiny transformers, identical except for how attention is parameterized, trained on synthetic tasks "
    "with several seeds each. Every number below is read from the store the sidebar points at."
)

st.subheader("The questions")
QUESTIONS = [
    (
        "Is a second per-head projection after a shared one, q_i = x W^Q W_i^Q, redundant? (seeds 000, 003)",
        "pages/parameters.py",
        "the fold check",
    ),
    (
        "Why keep W_i^Q and W_i^K separate instead of one D×D matrix W_i = W_i^Q W_i^Kᵀ? (seed 001)",
        "pages/loss_curves.py",
        "bilinear vs standard",
    ),
    (
        "Why not one matrix W = W^Q = W^K = W^V, and how similar are the three after training? (seed 002)",
        "pages/similarity.py",
        "learned-matrix similarity",
    ),
    (
        "What does multi-head attention add over plain self-attention with Q = K = V = X? (seed 004)",
        "pages/loss_curves.py",
        "identity vs standard",
    ),
    ("What do the alternatives cost in time?", "pages/runtime.py", "runtime"),
]
for question, page, what in QUESTIONS:
    cols = st.columns([5, 2])
    cols[0].markdown(f"- {question}")
    cols[1].page_link(page, label=f"→ {what}")

with st.expander("The tasks (synthetic, with a fixed held-out set of 512 examples)"):
    for name, task in TASKS.items():
        st.markdown(f"- **{name}**: {task.description}")

runs = ui.selected_runs()
if not ui.require_runs(runs):
    st.stop()

st.subheader("Findings")
order = [n for n in ORDER if n in set(runs.attention)]
if "standard" in order:
    for line in findings.sentences(runs, order):
        st.markdown(f"- {line}")
    st.caption(
        f"'Within seed noise': mean final eval losses differ by less than two standard errors of the difference "
        f"(or by less than {findings.LOSS_TOL}). "
        f"'Solved': eval accuracy ≥ {findings.SOLVED:.0%} on the answer positions."
    )
else:
    st.info("Select `standard` in the sidebar to compare every parameterization against it.")
diverged = runs[runs.status != "ok"]
if not diverged.empty:
    st.warning(
        f"{len(diverged)} run(s) diverged and are left out of the means: "
        + ", ".join(f"{r.attention}/{r.task}/seed {r.seed}" for r in diverged.itertuples())
    )

st.subheader("Summary: mean ± std over seeds")
table = findings.summary(runs, ui.selection()["tasks"], ORDER)
shown = table.assign(
    eval_loss=ui.fmt_mean_std(table.eval_loss, table.eval_loss_std, 4),
    eval_acc=ui.fmt_mean_std(table.eval_acc, table.eval_acc_std, 3),
).drop(columns=["eval_loss_std", "eval_acc_std"])
st.dataframe(
    shown,
    hide_index=True,
    width="stretch",
    column_config={"seconds_per_step": st.column_config.NumberColumn("s / step (ensemble)", format="%.4f")},
)
ui.download(table, "summary")
st.caption("Seconds per step are for the whole ensemble of seeds, which trains together as one vectorized model.")
