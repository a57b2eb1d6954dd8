"""Per-head figures: a metric per layer and head for each parameterization, and attention patterns."""

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .style import _grid, built_once, color, ordered


@built_once
def head_heatmaps(df: pd.DataFrame, zmin=None, zmax=None, colorscale="Viridis", fixed=()) -> go.Figure:
    """df rows: attention, layer, head, value (already averaged over seeds). One layer x head grid per attention;
    `fixed`: parameterizations where the metric holds by construction, drawn in grey (nothing learned there)."""
    names = ordered(df["attention"])
    # one colour range for every panel, so one colour bar reads them all
    zmin = float(df["value"].min()) if zmin is None and not df.empty else zmin
    zmax = float(df["value"].max()) if zmax is None and not df.empty else zmax
    fig, cols = _grid(names, cols=4, horizontal_spacing=0.06, vertical_spacing=0.15)
    for i, name in enumerate(names):
        grid = df[df.attention == name].pivot_table(index="layer", columns="head", values="value")
        fig.add_trace(
            go.Heatmap(
                z=grid.to_numpy(),
                x=[f"h{h}" for h in grid.columns],
                y=[f"L{l}" for l in grid.index],
                zmin=zmin,
                zmax=zmax,
                colorscale=[[0, "#d9d9d9"], [1, "#bdbdbd"]] if name in fixed else colorscale,
                name=name,
                showscale=i == 0 and name not in fixed,
                hovertemplate=f"{name} %{{y}} %{{x}}: %{{z:.3f}}"
                + (" (by construction)" if name in fixed else "")
                + "<extra></extra>",
            ),
            row=i // cols + 1,
            col=i % cols + 1,
        )
    for ann in fig.layout.annotations:  # title each small multiple in its parameterization's colour
        ann.font = dict(color=color(ann.text))
        if ann.text in fixed:
            ann.text = f"{ann.text} (by construction)"
    fig.update_layout(height=max(260, 220 * (-(-len(names) // cols))))
    return fig


@built_once
def attention_grid(patterns: dict, tokens: list[str]) -> go.Figure:
    """patterns: name -> (H, T, T) for one layer and example. Rows: parameterizations, columns: heads. Axes name
    the example's tokens (position:token, keys along x, queries down y); one colour bar, 0-1, for every panel."""
    names = ordered(patterns)
    H = max(p.shape[0] for p in patterns.values())
    labels = [f"{i}:{tok}" for i, tok in enumerate(tokens)]
    titles = [f"{n} h{h}" for n in names for h in range(H)]
    fig = make_subplots(rows=len(names), cols=H, subplot_titles=titles, horizontal_spacing=0.02, vertical_spacing=0.05)
    traces, rows, cols = [], [], []
    for i, name in enumerate(names):
        for h in range(patterns[name].shape[0]):
            T = patterns[name][h].shape[-1]
            traces.append(
                go.Heatmap(
                    z=np.round(
                        patterns[name][h], 3
                    ),  # (T query, T key); 3 decimals (hover shows 2): a third of the bytes
                    x=labels[:T] if len(labels) >= T else None,
                    y=labels[:T] if len(labels) >= T else None,
                    zmin=0,
                    zmax=1,
                    colorscale="Blues",
                    showscale=i == 0 and h == 0,
                    colorbar=dict(title=dict(text="weight", side="right"), thickness=12, len=0.6),
                    name=name,
                    hovertemplate="query %{y} → key %{x}: %{z:.2f}<extra></extra>",
                )
            )
            rows.append(i + 1), cols.append(h + 1)
    fig.add_traces(traces, rows=rows, cols=cols)  # one batch: 32 add_trace calls took most of the build
    fig.update_annotations(font_size=11)
    for ann in fig.layout.annotations:
        ann.font.color = color(ann.text.split(" ")[0])
    small = dict(tickfont=dict(size=8), type="category")
    fig.update_yaxes(autorange="reversed", showticklabels=False, **small)
    fig.update_xaxes(showticklabels=False, **small)
    fig.update_yaxes(showticklabels=True, col=1)  # queries on the left column
    fig.update_xaxes(showticklabels=True, tickangle=-90, row=len(names))  # keys under the bottom row
    fig.update_layout(height=max(340, 250 * len(names)), margin=dict(t=40, b=60, l=60, r=10))
    return fig
