"""Similarity: how alike are the learned W_Q, W_K, W_V, and how structured are W_QK and W_OV? (seed 002)"""

import pandas as pd
import streamlit as st

from core.analysis import similarity, views
from core.dashboard import catalog, plots, ui, urls

ui.require_router()
store = ui.view()  # the sidebar's store under its selection, read through the cache
st.title("Learned-matrix similarity")
st.markdown(
    "Seed 002 asks why W_Q, W_K and W_V are not one matrix, and how similar they end up. Here are the final "
    "weights of every selected run, per layer and head, against what the same run looked like at step 0 and "
    "against fresh initialisations of the same parameterization (both computed by `python -m core baselines`)."
)
runs = ui.runs_with_weights(store)

hm = store.head_metrics(runs.run_id).merge(runs[["run_id", "attention", "task", "seed"]], on="run_id")
c = st.columns([3, 2])
metric = urls.url_widget(
    c[0].selectbox,
    "Metric",
    "sim_metric",
    "sym_QK",
    options=list(similarity.METRICS),
    format_func=lambda m: f"{m}: {similarity.METRICS[m]}",
)
task = urls.url_widget(c[1].selectbox, "Task", "sim_task", "all", options=["all", *dict.fromkeys(runs.task)])


def of_task(df):
    return df if task == "all" else df[df.task == task]


d = of_task(hm[hm.metric == metric]).dropna(subset=["value"])
D, r = int(runs.d_model.iloc[0]), int(runs.d_head.iloc[0])
base = store.random_baseline(D, r).set_index("metric")
st.caption(f"{'Invariant' if similarity.INVARIANT[metric] else 'Not invariant'} to a per-head change of basis.")
if d.empty:
    st.info(f"`{metric}` is not defined for the selected parameterizations (e.g. bilinear has no separate W_Q, W_K).")
else:
    per_head = views.per_head(d)
    lo, hi = (0, 1) if metric.startswith(("sym", "overlap")) else (None, None)
    rand = store.table("analysis", "random")
    fixed = set(rand[(rand.metric == metric) & rand.by_construction].attention) if not rand.empty else set()
    fig = plots.head_heatmaps(per_head, zmin=lo, zmax=hi, fixed=tuple(sorted(fixed)))
    ui.chart(fig, per_head, f"heads-{metric}-{task}")
    st.markdown(
        "**Against matched baselines**: each run's own step-0 weights, and fresh initialisations of the "
        "same parameterization (its own shapes and init)."
    )
    shown = of_task(runs).run_id
    matched = store.matched_baselines(shown, metric)
    if store.init_rows(shown, metric).empty or store.table("analysis", "random").empty:  # the rows matched was made of
        st.info(
            f"No matched baselines in this store yet: `python -m core baselines --store <store>` computes them. "
            f"Meanwhile: random Gaussian matrices of standard's shapes give {base.loc[metric, 'mean']:.3f} ± "
            f"{base.loc[metric, 'std']:.3f}."
        )
    if not matched.empty:
        fixed = matched[matched.by_construction]
        moved = matched[~matched.by_construction].dropna(subset=["change"])
        if not moved.empty:
            moved = moved.assign(err_hi=moved.change_hi - moved.change, err_lo=moved.change - moved.change_lo)
            fig = plots.bars_by_attention(moved, "change", "task", error="err_hi")
            ui.chart(fig, moved, f"change-{metric}-{task}")
            st.caption(
                "Bars: how far training moved the metric from each run's own step 0 (trained minus step 0, "
                "mean over seeds of the per-run mean over layers and heads), with a 95% t interval."
            )
        matched = plots.in_order(matched)
        st.dataframe(
            matched.style.apply(
                lambda row: (
                    ["color: #9a9a9a"] * len(row) if row.by_construction or pd.isna(row.trained) else [""] * len(row)
                ),
                axis=1,
            ).format(precision=3),
            hide_index=True,
            width="stretch",
        )
        ui.download(matched, f"matched-{metric}-{task}")
        if not fixed.empty:
            st.caption(
                f"Greyed: `{metric}` holds by construction for {', '.join(sorted(set(fixed.attention)))} "
                "(the same value at every initialisation): not a finding; and rows where it is not defined "
                "(no value)."
            )

st.subheader("Which metrics survive a change of basis")
st.markdown(
    "Each head's function only depends on W_QK = W_Q W_Kᵀ and W_OV = W_V W_O, so W_Q A, W_K A⁻ᵀ (and W_V B, "
    "B⁻¹ W_O) is the same head for any invertible A, B. A metric that changes under that is about the "
    "parameterization's coordinates, not about what the head computes."
)
inv = pd.DataFrame(
    {
        "metric": list(similarity.METRICS),
        "what it measures": list(similarity.METRICS.values()),
        "invariant to W_Q A, W_K A⁻ᵀ": [similarity.INVARIANT[m] for m in similarity.METRICS],
    }
)
st.dataframe(inv, hide_index=True, width="stretch")
ui.download(inv, "invariance")
st.caption("Checked numerically by tests/test_analysis.py on random invertible A, B.")

st.subheader("Singular-value spectra of W_QK and W_OV")
sp = store.spectra(runs.run_id).merge(runs[["run_id", "attention", "task"]], on="run_id")
sp = of_task(sp)
spec = sp.groupby(["attention", "matrix", "index"], as_index=False)["value"].mean()
ui.chart(plots.spectra(spec), spec, f"spectra-{task}")
er = of_task(hm[hm.metric.isin(["erank_QK", "erank_OV"])])
er = er.groupby(["metric", "attention"], as_index=False)["value"].mean().rename(columns={"metric": "matrix"})
er["random"] = er.matrix.map(lambda m: base.loc[m, "mean"])
st.dataframe(
    plots.in_order(er.pivot_table(index="attention", columns="matrix", values="value"), index=True).round(2),
    width="stretch",
)
ui.download(er, f"erank-{task}")
st.caption(
    f"σ_i / σ_1, mean over layers, heads and seeds; the axis stops at 1e-4, below which a value is the numerical "
    f"zero of a rank-limited matrix. Standard's W_QK has rank ≤ r = {r}; bilinear's can reach "
    f"D = {D}. Effective rank of random matrices of the same shapes: "
    f"W_QK {base.loc['erank_QK', 'mean']:.1f}, W_OV {base.loc['erank_OV', 'mean']:.1f}."
)

st.subheader("Does stacked learn the same W_QK as standard?")
pairs = []
for (tk, seed), g in runs.groupby(["task", "seed"]):
    ids = dict(zip(g.attention, g.run_id))
    others = runs[(runs.task == tk) & (runs.attention == "standard") & (runs.seed != seed)]
    for label, a, b in [
        ("stacked vs standard, same seed", ids.get("stacked"), ids.get("standard")),
        ("standard vs standard, other seed", ids.get("standard"), others.run_id.iloc[0] if len(others) else None),
    ]:
        if a and b:
            for layer, match in enumerate(store.qk_match(a, b)):
                pairs.append({"task": tk, "seed": seed, "layer": layer, "pair": label, "similarity": match})
if not pairs:
    st.info("Select both `standard` and `stacked` (and at least two seeds) to compare their learned W_QK.")
else:
    pairs = pd.DataFrame(pairs)
    rand = ui.random_head_match(D, r)
    summary = pairs.groupby(["task", "pair"], as_index=False)["similarity"].agg(["mean", "std"]).fillna(0.0)
    table = summary.pivot_table(index="task", columns="pair", values="mean")
    st.dataframe(table.reindex([t for t in catalog.TASK_NAMES if t in table.index]).round(3), width="stretch")
    ui.download(pairs, "stacked-vs-standard")
    st.caption(
        f"Per layer: for each head of one run, the best |cosine| of its flattened W_QK to any head of the other "
        f"(head order is arbitrary); random matrices of these shapes give {rand:.3f}. W_QK is basis-free, so this "
        "compares what the heads compute. Same-seed runs start from different weights (stacked has extra factors)."
    )
