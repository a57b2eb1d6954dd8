"""Learning rate: every parameterization's outcome across the lr grid, so a reader can see whether a
comparison at each one's best lr is fair (and whether the best lies inside the grid)."""

import numpy as np
import streamlit as st

from core.analysis import findings, views
from core.dashboard import plots, ui, urls

ui.require_router()
store = ui.view()  # the sidebar's store under its selection, read through the cache
st.title("Learning rate")
st.markdown(
    "A parameterization compared at someone else's learning rate is compared at the wrong step size. Each line is "
    "one parameterization's final **test** metric across the lr grid (mean over seeds, bars: min–max); the star "
    "is its best lr, chosen on the **validation** set (lowest mean validation loss; ties to the smaller lr). "
    "This page always shows every lr, whatever the sidebar's choice."
)
runs = store.selected_runs(lr=ui.ALL)
if not ui.require_runs(runs):
    st.stop()
tasks = [t for t in ui.selection()["tasks"] if t in set(runs.task)]
best = findings.best_lr(runs)
if runs.lr.nunique() < 2:
    st.info("These runs use a single learning rate: sweep several with `python -m core sweep --lr grid`.")

metric = urls.url_widget(
    st.radio, "Metric", "lr_metric", "test_acc", options=["test_acc", "test_loss"], horizontal=True
)
ok = runs[runs.status == "ok"]
data = ok[["task", "attention", "lr", "seed", metric]]
fig = plots.lr_sweep(data, metric, tasks, best, log_y=metric == "test_loss", y_title=f"final {metric}")
ui.open_lr_point(ui.chart(fig, data, f"lr-{metric}"))
st.caption("Click a point or a star to draw that parameterization's curves at that lr (Loss curves).")

table = views.best_lr_table(runs, best, [*tasks, *plots.ORDER])
st.dataframe(
    table, hide_index=True, width="stretch", column_config={"lr": st.column_config.NumberColumn(format="%.0e")}
)
ui.download(table, "best-lr")
if table["at the grid's edge"].any():
    n_edge = int(table["at the grid's edge"].sum())
    st.info(
        f"Best lr at the edge of the grid in {n_edge} of {len(table)} cells (the table's column \"at the "
        "grid's edge\"): there the optimum may lie outside the grid."
    )

st.subheader("Time to solve against learning rate")
solve, counts, at_best = views.solve_by_lr(runs, store.time_to_solve(runs.run_id), best)
fig = plots.lr_sweep(solve.dropna(subset=["time_to_solve"]), "time_to_solve", tasks, best, y_title="steps to solve")
ui.open_lr_point(ui.chart(fig, solve[["task", "attention", "lr", "seed", "time_to_solve"]], "lr-time-to-solve"))
st.caption(
    f"Time to solve: the first evaluation with validation accuracy ≥ {findings.SOLVED:.0%}; seeds that never get "
    f"there are left out of the line ({int(counts.seeds.sum() - counts.solved.sum())} of {int(counts.seeds.sum())} "
    "here; the Overview counts them)."
)
dist = at_best[["task", "attention", "seed", "time_to_solve"]].replace({np.nan: None})
st.markdown("**At each parameterization's best lr**, one dot per seed that solved:")
fig = plots.strip(at_best.dropna(subset=["time_to_solve"]), "time_to_solve", tasks, y_title="steps to solve")
ui.chart(fig, dist, "time-to-solve-best")
