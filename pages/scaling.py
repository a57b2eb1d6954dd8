"""Scaling: where the choices matter. Outcome against one axis around the bundled point, per parameterization."""

import pandas as pd
import streamlit as st

from core.analysis import axes, endpoints, findings, scaling, stats, words
from core.dashboard import ui, urls
from core.dashboard.plots import ORDER
from core.dashboard.plots.scaling import outcome_vs_axis

ui.require_router()
store = ui.view()  # the sidebar's store under its selection, read through the cache
st.title("Scaling")
st.markdown(
    "At the bundled size almost every parameterization solves associative recall: the seed questions are about "
    "capacity, which shows only when it is scarce. Each axis changes one thing around the bundled point (2 layers, "
    "d_model 64, 4 heads, d_head 16, 8 key-value pairs over 32 keys; induction's own bundled point for its n_heads "
    "axis) and keeps the rest; every parameterization is read at its own best lr (on validation) at each setting, "
    "on the test set."
)
tables = store.scan_tables()  # per axis the runs span, cached per store and sidebar
present = list(tables)
if not present:
    st.info(
        "This store holds no scaling scan (no axis with two or more settings). One axis point, around the "
        "bundled size (docs/reproduce.md gives them all):\n\n```bash\npython -m core sweep --task "
        "associative_recall --seeds 5 --lr grid --steps 800 --attention all --d-model 32 --store DIR\n```"
    )
    st.stop()
axis = urls.url_widget(
    st.selectbox,
    "Axis",
    "axis",
    present[0],
    options=present,
    format_func=lambda a: f"{axes.AXES[a].title}: {axes.AXES[a].label} ({axes.AXES[a].question})",
)
spec = axes.AXES[axis]
table = tables[axis]
order = [n for n in ORDER if n in set(table.attention)]
c = st.columns(2)
show_seeds = urls.url_widget(c[0].toggle, "each seed as a dot", "sc_seeds", False)
labels = {"share": "solved share", "test_acc": "mean test accuracy"}
criterion = bool((table.until == "solved").all())
if criterion:  # only runs trained to the criterion record when they solved
    labels["median_steps"] = "steps to solve"
metric = urls.url_widget(
    c[1].radio, "outcome", "sc_y", "share", options=list(labels), horizontal=True, format_func=labels.get
)
seeds = None
if show_seeds:  # the runs themselves only on demand
    best = scaling.best_runs(store.scan_runs(), axis)
    steps, _ = endpoints.durations(best)
    seeds = best.assign(steps=steps)[best.status == "ok"][["attention", "x", "seed", "test_acc", "steps"]]
st.subheader(f"Outcome against {spec.title}")
ui.open_scan_cell(axis, ui.chart(outcome_vs_axis(table, "x", spec.label, metric, seeds), table, f"scaling-{axis}"))
bars = (
    "Kaplan-Meier median steps to solve with its 95% interval, seeds unsolved by the cap censored there (an open "
    "triangle: the median is past the cap, drawn at it)"
    if metric == "median_steps"
    else "Wilson 95% interval of the solved share over n seeds"
)
st.caption(
    f"{words.SOLVED_RULE} Error bars: {bars} (hover: k/n, accuracy, loss, steps to solve, the lr and steps). Each "
    "point at its parameterization's own best lr; click one to list its seeds in Runs, their curves drawn."
)

st.subheader("At equal budget: the same outcome against attention parameters per layer")
ui.open_scan_cell(
    axis,
    ui.chart(
        outcome_vs_axis(
            table, "params_attention", "attention parameters per layer", metric, log_x=True, ticks_at_values=False
        ),
        table,
        f"scaling-{axis}-params",
    ),
)
st.caption(
    "identity has no attention parameters and is not drawn on this log axis; bilinear's H·D² and "
    "stacked's extra 3·D² move their points right, tied_qk and tied_qkv's smaller counts left."
)

st.subheader("Thresholds")
grows = spec.grows
th = scaling.thresholds(table, ["standard", *[n for n in order if n != "standard"]] if "standard" in order else order)
edge = f"smallest {spec.var} that" if grows else f"largest {spec.var} that"
shown = th.assign(  # words, not NaN: no threshold is "never", no test is said so
    threshold=[words.threshold_text(axis, t, o) for t, o in zip(th.threshold, th.open)],
    n=["" if n != n else f"{n:.0f}" for n in th.n],
    p=th.p.map(stats.p_text),
    p_holm=th.p_holm.map(stats.p_text),
)
st.dataframe(
    shown,
    hide_index=True,
    width="stretch",
    column_config={
        "threshold": f"{edge} solves ≥ {findings.ROBUST:.0%}",
        "n": "seeds there",
        "vs_reference": st.column_config.TextColumn("vs standard", width="large"),  # whole words at 1280
        "lapses": "but not at (easier, k/n)",
        "lr_edge": st.column_config.TextColumn(
            "best lr at the grid's edge", help="where it stops solving, its best lr was the lowest or highest trained"
        ),
    },
)
ui.download(th, f"scaling-{axis}-thresholds")
for line in words.scan_sentences(table, axis, order):
    st.markdown(f"- {line}")
unsolved = table[table.unsolved > 0]
if not unsolved.empty:
    share = f"{int(unsolved.improving.sum())} of {int(unsolved.unsolved.sum())}"
    st.caption(
        f"Truncation: {share} unsolved seeds were still improving over the last fifth of training (validation loss "
        "down ≥ 2% or accuracy up ≥ 2 points): where they sit, more steps could move a threshold."
    )
with st.expander("Every cell: n, solved, lr, steps, parameters"):
    st.dataframe(pd.DataFrame(table), hide_index=True, width="stretch")
