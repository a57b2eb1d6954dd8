"""Attention maps: every layer and head's pattern on a stored task example, per parameterization."""

import numpy as np
import pandas as pd
import streamlit as st

from core.dashboard import plots, ui, urls

ui.require_router()
store = ui.view()  # the sidebar's store under its selection, read through the cache
st.title("Attention maps")
st.markdown(
    "The attention pattern of each head on held-out examples, computed at the end of training from each "
    "layer's W_QK on its real input. Rows are parameterizations, columns heads; query positions run down, keys "
    "across. Symmetric scores (tied_qk, tied_qkv, identity) make x_i·W·x_i large, so they lean on the diagonal. "
    "`identity`'s scores are a Gram kernel of its LayerNorm-ed residual stream: learned through the embeddings "
    "and earlier layers, not fixed, but symmetric, and with no W_V or W_O (0 attention parameters)."
)
runs = ui.runs_with_weights(store)

c = st.columns(4)
task = urls.url_widget(c[0].selectbox, "Task", "am_task", runs.task.iloc[0], options=list(dict.fromkeys(runs.task)))
seeds = sorted(runs[runs.task == task].seed.unique().tolist())
seed = urls.url_widget(c[1].selectbox, "Seed", "am_seed", seeds[0], options=seeds)
sel = runs[(runs.task == task) & (runs.seed == seed)]
loaded = {r.attention: store.patterns(r.run_id) for r in sel.itertuples()}
loaded = {k: v for k, v in loaded.items() if v[0] is not None}
if not loaded:
    st.info("These runs stored no attention patterns.")
    st.stop()
any_p, any_x = next(iter(loaded.values()))
layer = urls.url_widget(c[2].selectbox, "Layer", "am_layer", 0, options=list(range(any_p.shape[0])))
example = urls.url_widget(c[3].selectbox, "Example", "am_ex", 0, options=list(range(any_p.shape[1])))
st.markdown(f"`{' '.join(map(str, any_x[example].tolist()))}`")  # inline: no code block's highlighter to load
st.caption("The example's token ids (the task's held-out set, identical for every run).")

grid = {name: p[layer, example] for name, (p, _) in loaded.items()}  # name -> (H, T, T)
long = pd.DataFrame(
    [
        {"attention": n, "head": h, "query": q, "key": k, "weight": float(w)}
        for n, g in grid.items()
        for h in range(g.shape[0])
        for (q, k), w in np.ndenumerate(g[h])
    ]
)
ui.chart(plots.attention_grid(grid, [str(t) for t in any_x[example].tolist()]), long, f"maps-{task}-s{seed}-L{layer}")

st.subheader("How much attention stays on the diagonal")
diag = pd.DataFrame(
    [
        {"attention": n, "layer": L, "self-attention weight": float(np.mean(np.diagonal(p[L], axis1=-2, axis2=-1)))}
        for n, (p, _) in loaded.items()
        for L in range(p.shape[0])
    ]
)
table = diag.pivot_table(index="attention", columns="layer", values="self-attention weight")
table = table.loc[plots.ordered(table.index)]
table.columns = [f"layer {c}" for c in table.columns]
st.dataframe(table.round(3), width="stretch")
ui.download(diag, f"diagonal-{task}-s{seed}")
st.caption("Mean weight a position puts on itself, over heads, positions and the stored examples.")

st.subheader("Previous-token and induction heads")
scores = store.table("analysis", "heads")
scores = scores[scores.run_id.isin(sel.run_id)] if not scores.empty else scores
if scores.empty:
    st.info(
        "No head scores for these runs: `python -m core baselines` computes them for every run whose model is kept."
    )
else:
    names = sel.set_index("run_id").attention
    scores = scores.assign(
        attention=scores.run_id.map(names), head=scores["layer"].astype(str) + "." + scores["head"].astype(str)
    )
    for metric, label in (("prev_token", "previous-token score"), ("induction", "induction (prefix-matching) score")):
        wide = scores[scores.metric == metric].pivot_table(index="attention", columns="head", values="value")
        wide = wide.loc[plots.ordered(wide.index)]
        wide.columns = [f"L{c.replace('.', ' H')}" for c in wide.columns]
        st.markdown(f"**{label}** (layer L, head H)")
        st.dataframe(wide.round(2), width="stretch")
    ui.download(scores, f"head-scores-{task}-s{seed}")
    st.caption(
        "On 64 held-out sequences of random tokens repeated once, from each run's kept model: the mean attention "
        "a position pays to the one before it (previous-token), and a token of the second copy pays to the "
        "position after that token's first occurrence (induction). Uniform attention scores about 1 / position; "
        "an induction head in layer 1 reading a previous-token head in layer 0 is the two-layer circuit of "
        "Olsson et al. (2022)."
    )
