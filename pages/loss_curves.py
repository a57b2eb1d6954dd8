"""Loss curves: any metric over steps or wall time, mean and band over seeds, small multiples by task."""

import streamlit as st

from core.analysis import curves
from core.dashboard import plots, ui, urls

ui.require_router()
store = ui.view()  # the sidebar's store under its selection, read through the cache
st.title("Loss curves")
st.markdown(
    "Does a parameterization learn as fast and as far as `standard`? Each line is the mean over seeds at the "
    "sidebar's learning rate (by default each parameterization's best, chosen on validation); the band is ±1 std "
    "or min–max across seeds, and **each seed** shows whether a band hides two outcomes. `update_qk.L` / "
    "`update_ov.L`: the mean relative change per step of layer L's effective W_QK / W_OV. Smoothing is a "
    "debiased EMA, as in W&B and TensorBoard."
)
runs = store.selected_runs()
if not ui.require_runs(runs):
    st.stop()
runs = ui.one_lr(runs)
METRICS = ["test_loss", "test_acc", "val_loss", "val_acc", "train_loss", "tokens_per_s"]
METRICS += [f"update_{m}.{i}" for m in ("qk", "ov") for i in range(int(runs.n_layers.max()))]

c = st.columns([2, 2, 2, 3])
metric = urls.url_widget(c[0].selectbox, "Metric", "metric", "test_loss", options=METRICS)
x = urls.url_widget(c[1].selectbox, "x axis", "x", "step", options=["step", "wall_time"])
band = urls.url_widget(c[2].selectbox, "Band across seeds", "band", "std", options=["std", "minmax", "none"])
smoothing = urls.url_widget(c[3].slider, "EMA smoothing", "smooth", 0.0, min_value=0.0, max_value=0.99, step=0.01)
c = st.columns(3)  # the toggles on their own row, so no label is cut at a projector's 1280 px
delta = urls.url_widget(
    c[2].toggle,
    "Δ vs standard",
    "delta",
    False,
    help="each run minus standard's run of the same task and seed (the same batches), per step",
)
log_y = urls.url_widget(c[0].toggle, "log y", "logy", not metric.endswith("_acc"), disabled=delta)
show_runs = urls.url_widget(c[1].toggle, "each seed", "seeds", False, help="draw every seed's run too")

tidy = store.metrics(runs.run_id.unique(), [metric, "wall_time"])
data = tidy[tidy.metric == metric].merge(runs[["run_id", "attention", "task", "seed"]], on="run_id")
if x == "wall_time":
    wall = curves.joined_wall_time(tidy[tidy.metric == "wall_time"])
    data = data.merge(wall[["run_id", "step", "value"]].rename(columns={"value": "wall_time"}), on=["run_id", "step"])
data = data[["attention", "task", "seed", "run_id", "step"] + (["wall_time"] if x == "wall_time" else []) + ["value"]]
if data.empty:
    st.info(f"No `{metric}` values in these runs.")
    st.stop()
if delta:
    if "standard" not in set(data.attention) or x != "step":
        st.info("Δ vs standard needs `standard` among the sidebar's parameterizations and steps on the x axis.")
        st.stop()
    data = curves.paired_difference(data)
    metric, log_y = f"Δ {metric} (minus standard, same seed)", False
tasks = [t for t in ui.selection()["tasks"] if t in set(data.task)]
fig = plots.loss_curves(
    data, metric, x=x, band=band, show_runs=show_runs, smoothing=smoothing, log_y=log_y, tasks=tasks
)
if delta:
    fig.add_hline(y=0, line=dict(color="#555555", dash="dot"))
elif metric.endswith("_acc"):  # chance levels on the test set, as `baselines` stored them
    chance = ui.chance_levels()
    levels = {t: {k: v for k, v in chance.get(t, {}).items() if k != "uniform"} for t in tasks}
    fig = plots.with_levels(fig, tasks, levels)
name = f"curves-{metric}" if not delta else f"curves-delta-{metric.split()[1]}"
ui.chart(fig, data.sort_values(["task", "attention", "seed", "step"]), name)
