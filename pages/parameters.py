"""Parameters: formula vs measured counts, how they scale, and the live fold checks (seeds 000, 001, 003)."""

import pandas as pd
import streamlit as st

from core.analysis import curves, findings, words
from core.dashboard import catalog, live, plots, selection, ui, urls

ui.require_router()
store = ui.view()  # the sidebar's store under its selection, read through the cache
st.title("Parameters")
st.markdown(
    "What each parameterization costs in parameters: the analytic formula next to a count of the built "
    "module's tensors, per component. D = d_model, H = n_heads, r = d_head, G = n_kv_heads."
)
runs = store.selected_runs()
if not ui.require_runs(runs):
    st.stop()

task = urls.url_widget(
    st.selectbox,
    "Task (sets vocabulary and length)",
    "ptask",
    runs.task.iloc[0],
    options=list(dict.fromkeys(runs.task)),
)
row = runs[runs.task == task].iloc[0]
size = {k: int(row[k]) for k in ("n_layers", "d_model", "n_heads", "vocab_size", "max_len")} | {"mlp": bool(row.mlp)}
names = plots.ordered(runs.attention)


def count_table(parts: pd.DataFrame) -> None:
    table = pd.DataFrame(
        [
            {
                "attention": n,
                "formula (per layer)": catalog.FORMULAS[n],
                "attention (all layers), formula": int(
                    parts[(parts.attention == n) & (parts.component == "attention")].formula.iloc[0]
                ),
                "attention (all layers), measured": int(
                    parts[(parts.attention == n) & (parts.component == "attention")].measured.iloc[0]
                ),
                "total, formula": int(parts[parts.attention == n].formula.sum()),
                "total, measured": int(parts[parts.attention == n].measured.sum()),
            }
            for n in names
        ]
    )
    table["match"] = (table["attention (all layers), formula"] == table["attention (all layers), measured"]) & (
        table["total, formula"] == table["total, measured"]
    )
    st.dataframe(table, hide_index=True, width="stretch")
    ui.download(table, "params-table")
    fig = plots.stacked_bars(parts, "attention", "component", "measured", title=f"Parameters by component ({task})")
    ui.chart(fig, parts, "params-components")


def update_sizes() -> None:
    st.subheader("Same function class, different step size: how far each step moves W_QK and W_OV")
    st.markdown(
        "The fold above shows `stacked` can express exactly what `standard` can. What differs is optimisation: with "
        "Adam every factor moves by about lr per entry, so a product of two factors moves further per step. Below, "
        "the measured relative change per step of each layer's effective W_QK and W_OV (sampled every few steps, "
        "mean over layers and seeds), every parameterization at one shared lr on one task. Note also that "
        "`stacked` carries 3·D² more parameters per layer, all under weight decay and inside the clipped gradient "
        "norm, and that `identity` has no attention parameters at all (no W_Q, W_K, W_V or W_O)."
    )
    every = findings.one_protocol(store.selected_runs(finished=True, lr=ui.ALL, steps=selection.ANY_LENGTH))
    if every.empty:
        st.info("No finished runs in this selection.")
        return
    lrs, tasks = sorted(set(every.lr)), [t for t in catalog.TASK_NAMES if t in set(every.task)]
    options = [f"{v:g}" for v in lrs]
    c = st.columns(2)
    shared = urls.url_widget(c[0].selectbox, "shared lr", "mech_lr", options[len(options) // 2], options=options)
    task = urls.url_widget(c[1].selectbox, "task", "mech_task", tasks[0], options=tasks)
    names = [f"update_{m}.{i}" for m in ("qk", "ov") for i in range(int(every.n_layers.max()))]
    tidy = store.metrics(every.run_id.unique(), names)
    on_task = every[every.task == task]
    sizes = curves.update_sizes(tidy[tidy.run_id.isin(on_task.run_id)], on_task)
    if sizes.empty:
        st.info("These runs carry no update-size metrics (stores made before they were recorded).")
        return
    shown = sizes[sizes.lr.map(lambda v: f"{v:g}") == shared].drop(columns="lr")
    ui.chart(plots.update_sizes(shown), shown, f"update-sizes-{task}-{shared}")
    sentence = words.mechanism(tidy, every)
    if sentence:
        st.markdown(sentence)
    how = "trained to the criterion" if (every.until == "solved").all() else f"{int(every.steps.iloc[0]):,} fixed steps"
    st.caption(
        "Computed from the runs (core.analysis.curves.step_size): per shared lr, the geometric mean over seed pairs "
        "of the ratio of mean per-step relative updates, and the ratio of the best lrs chosen on validation, per "
        f"task. Runs {how}; each line runs to the earliest step one of its runs stopped at, so its mean is over the "
        "same runs at every step."
    )


D, H = size["d_model"], size["n_heads"]
grid_d, heads = [32, 64, 128, 256, 512, 1024], [h for h in (1, 2, 4, 8, 16) if size["d_model"] % h == 0]
by_d = pd.DataFrame([{"attention": n, "d_model": d, "n_heads": H} for n in names for d in grid_d])
by_h = pd.DataFrame([{"attention": n, "d_model": D, "n_heads": h} for n in names for h in heads])
# The sections in page order, filled out of order: the fold widgets first, so the one child answering both the
# counts and the folds starts at once and runs while the rest of the page draws.
count_area, scale_area, fold_area, update_area = st.container(), st.container(), st.container(), st.container()

with fold_area:
    st.subheader("The folds, checked live")
    st.markdown(
        "**stacked → standard** (seeds 000, 003): W^Q W_i^Q is one D×r matrix per head, so a stacked layer folds "
        "into a standard one with 3·D² fewer parameters and the same outputs. **standard → bilinear** (seed 001): "
        "W_Q W_Kᵀ is one D×D matrix of rank ≤ r, so a bilinear layer holds every standard one; the factored pair "
        "is the cheaper, low-rank choice (2·D·r instead of D² per head)."
    )
    c = st.columns(3)
    fd = urls.url_widget(c[0].selectbox, "d_model", "fold_d", 64, options=[16, 32, 64, 128, 256])
    heads = [h for h in (1, 2, 4, 8) if fd % h == 0] or [1]
    fh = urls.url_widget(c[1].selectbox, "n_heads", "fold_h", 4, options=heads)
    seed = urls.url_widget(c[2].number_input, "seed", "fold_seed", 0, min_value=0, max_value=10_000)

asked = live.parameters(
    names, size, pd.concat([by_d, by_h]).to_dict("records"), {"d_model": int(fd), "n_heads": int(fh), "seed": int(seed)}
)

with update_area:
    update_sizes()


@st.fragment(run_every=0.5)
def await_child() -> None:
    if asked.done():
        st.rerun()  # the whole page again, now drawn from the answer


with count_area:
    st.subheader("Formula and measured count, per parameterization")
    if not live.answered(asked, within=0.3):  # the page draws now; the child's sections follow when it answers
        st.info(live.PENDING)
        await_child()
        st.stop()
    try:
        parts, n_params, errors = asked.result()
    except RuntimeError as err:  # the child failed or timed out: one line, the rest of the page stands
        st.error(f"Parameter counts and fold check: {err}")
        st.stop()
    by_d["params"], by_h["params"] = n_params[: len(by_d)], n_params[len(by_d) :]
    count_table(parts)

with scale_area:
    st.subheader("How attention parameters scale (per layer, from the formulas)")
    c = st.columns(2)
    log_y = urls.url_widget(c[0].toggle, "log y", "plogy", True)
    ui.chart(
        plots.lines_by_attention(by_d, "d_model", "params", log_x=True, log_y=log_y), by_d, f"params-vs-d_model-H{H}"
    )
    st.caption(f"n_heads = {H}; d_head = d_model / n_heads. identity has no parameters, so a log axis cannot show it.")
    ui.chart(plots.lines_by_attention(by_h, "n_heads", "params", log_y=log_y), by_h, f"params-vs-n_heads-D{D}")
    st.caption(
        f"d_model = {D}. At fixed D, standard's 4·D·H·r = 4·D² does not depend on H; bilinear's H·D² grows with it."
    )

with fold_area:
    folds = pd.DataFrame({"fold": list(errors), "max abs error": list(errors.values())})
    st.dataframe(folds, hide_index=True, column_config={"max abs error": st.column_config.NumberColumn(format="%.2e")})
    ui.download(folds, "fold-check")
    st.caption(
        "float32, random weights and inputs (batch 4, length 32). Errors of about 1e-6 (float32's machine "
        "epsilon is 1.2e-7; each output sums D products) are rounding; a wrong fold would be of order 1."
    )
