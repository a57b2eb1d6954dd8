"""Runs: one row per run of the sidebar's selection (config, final metrics), sortable and filterable, with the
choices in the URL; the rows picked open their curves below, as W&B's run table does."""

import streamlit as st

from core.dashboard import charts, plots, ui, urls

ui.require_router()
store = ui.view()  # the sidebar's store under its selection, read through the cache
st.title("Runs")
st.markdown(
    "Every run of the sidebar's selection at every learning rate: its configuration and final numbers. Sort and "
    "filter here (the choices go in the URL; the sorted column comes second), click a column header to re-sort the "
    "view, and tick rows to draw their curves below (the ticked runs go in the URL too)."
)
runs = store.selected_runs(lr=ui.ALL)
if not ui.require_runs(runs):
    st.stop()

COLUMNS = [
    "run_id",
    "task",
    "attention",
    "lr",
    "seed",
    "steps",
    "d_model",
    "n_heads",
    "d_head",
    "n_layers",
    "length",
    "precision",
    "device",
    "status",
    "val_loss",
    "test_loss",
    "test_acc",
    "params_attention",
    "params_total",
    "seconds_per_member_step",
]
table = plots.in_order(runs[[c for c in COLUMNS if c in runs]])
if "device" in table:  # runs stored before a run recorded where it trained
    table["device"] = table.device.fillna("not recorded")
c = st.columns([3, 1.2, 2, 2])
sort = urls.url_widget(c[0].selectbox, "Sort by", "rsort", "test_loss", options=[c for c in COLUMNS if c in table])
descending = urls.url_widget(c[1].toggle, "descending", "rdesc", False)
statuses = sorted(set(table.status))
status = urls.url_widget(c[2].multiselect, "Status", "rstatus", statuses, options=statuses, multi=True)
text = urls.url_widget(c[3].text_input, "Run id contains", "rid", "", max_chars=16)
table = table[table.status.isin(status) & table.run_id.str.contains(text, regex=False)]
table = table.sort_values(sort, ascending=not descending, kind="stable").reset_index(drop=True)
table = table[["run_id", *([sort] if sort != "run_id" else []), *[c for c in table if c not in ("run_id", sort)]]]
# the ticked runs live in the URL too (rsel), so a shared link opens with the same curves drawn
linked = [r for r in st.query_params.get("rsel", "").split(",") if r]
picked = st.dataframe(
    table,
    hide_index=True,
    width="stretch",
    on_select="rerun",
    selection_mode="multi-row",
    selection_default={"selection": {"rows": table.index[table.run_id.isin(linked)].tolist()}},
    key="runs_table",
    column_config={
        "lr": st.column_config.NumberColumn(format="%.0e"),
        "test_loss": st.column_config.NumberColumn(format="%.2e"),
        "val_loss": st.column_config.NumberColumn(format="%.2e"),
    },
)
ui.download(table, "runs")
st.caption(f"{len(table)} of {len(runs)} runs.")

chosen = table.run_id.iloc[picked.selection.rows].tolist() if picked.selection.rows else []
if chosen or "rsel" in st.query_params:
    urls.stage("rsel", ",".join(chosen))
if not chosen:
    st.info("Tick one or more rows to draw their curves.")
    charts.warm()  # the curves of the rows a visitor ticks next, or their next chart page
    st.stop()
metric = urls.url_widget(
    st.radio,
    "Metric",
    "rmetric",
    "val_loss",
    options=["val_loss", "val_acc", "test_loss", "test_acc", "train_loss"],
    horizontal=True,
)
tidy = store.metrics(chosen, [metric])
data = tidy.merge(table[["run_id", "attention", "task", "seed"]], on="run_id")
data = data[["attention", "task", "seed", "run_id", "step", "value"]]
tasks = list(dict.fromkeys(table[table.run_id.isin(chosen)].task))
fig = plots.loss_curves(data, metric, band="none", show_runs=True, log_y=not metric.endswith("_acc"), tasks=tasks)
ui.chart(fig, data.sort_values(["run_id", "step"]), f"runs-{metric}")
st.caption(
    "One line per ticked run, in its parameterization's colour (several runs of one parameterization share "
    "it; the CSV names each run)."
)
