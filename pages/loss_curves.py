"""Loss curves: any metric over steps or wall time, mean and band over seeds, small multiples by task."""

import streamlit as st

from core import plots, ui

ui.require_router()
st.title("Loss curves")
st.markdown(
    "Does a parameterization learn as fast and as far as `standard`? Each line is the mean over seeds; "
    "the band is ±1 std or min–max across seeds. Smoothing is a debiased EMA, as in W&B and TensorBoard."
)
runs = ui.selected_runs()
if not ui.require_runs(runs):
    st.stop()

c = st.columns([2, 2, 2, 3, 1.2, 1.6])
metric = ui.url_widget(
    c[0].selectbox, "Metric", "metric", "eval_loss", options=["eval_loss", "eval_acc", "train_loss", "tokens_per_s"]
)
x = ui.url_widget(c[1].selectbox, "x axis", "x", "step", options=["step", "wall_time"])
band = ui.url_widget(c[2].selectbox, "Band across seeds", "band", "std", options=["std", "minmax", "none"])
smoothing = ui.url_widget(c[3].slider, "EMA smoothing", "smooth", 0.0, min_value=0.0, max_value=0.99, step=0.01)
log_y = ui.url_widget(c[4].toggle, "log y", "logy", metric != "eval_acc")
show_runs = ui.url_widget(c[5].toggle, "each seed", "seeds", False, help="draw every seed's run too")

tidy = ui.metrics(runs.run_id.unique())
m, wall = tidy[tidy.metric == metric], tidy[tidy.metric == "wall_time"]
data = m.merge(runs[["run_id", "attention", "task", "seed"]], on="run_id")
if x == "wall_time":
    data = data.merge(wall[["run_id", "step", "value"]].rename(columns={"value": "wall_time"}), on=["run_id", "step"])
data = data[["attention", "task", "seed", "run_id", "step"] + (["wall_time"] if x == "wall_time" else []) + ["value"]]
if data.empty:
    st.info(f"No `{metric}` values in these runs.")
    st.stop()
tasks = [t for t in ui.selection()["tasks"] if t in set(data.task)]
fig = plots.loss_curves(
    data, metric, x=x, band=band, show_runs=show_runs, smoothing=smoothing, log_y=log_y, tasks=tasks
)
ui.chart(fig, data.sort_values(["task", "attention", "seed", "step"]), f"curves-{metric}")
