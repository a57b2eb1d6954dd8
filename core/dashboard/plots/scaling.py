"""The Scaling page's figures: outcome against an axis (Zoology's figure, with Wilson bands) and at equal budget."""

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .style import built_once, color, dodge, ordered


@built_once
def outcome_vs_axis(
    table: pd.DataFrame,
    x: str,
    x_title: str,
    y: str = "share",
    seeds: pd.DataFrame | None = None,
    log_x=True,
    ticks_at_values=True,
) -> go.Figure:
    """One line per parameterization: solved share with its Wilson 95% band as error bars (y="share"), or mean
    test accuracy (y="test_acc"); `seeds` (columns attention, x, test_acc) adds every seed's accuracy as a dot."""
    fig = go.Figure()
    for name in ordered(table.attention):
        a = table[table.attention == name].sort_values(x)
        err = None
        if y == "share":
            err = dict(type="data", symmetric=False, array=a.solved_hi - a.share, arrayminus=a.share - a.solved_lo)
        hover = [
            f"{name}<br>{x_title.split(' (')[0]} {v:g}<br>solved {k}/{n} [{lo:.2f}, {hi:.2f}]<br>"
            f"test acc {acc:.3f} · loss {loss:.3g}<br>lr {lr:g} · {steps} steps"
            for v, k, n, lo, hi, acc, loss, lr, steps in zip(
                a[x], a.solved, a.n, a.solved_lo, a.solved_hi, a.test_acc, a.test_loss, a.lr, a.steps
            )
        ]
        fig.add_trace(
            go.Scatter(
                x=a[x] * (dodge(name) if log_x else 1.0),  # tied_qk would hide exactly under gqa
                y=a[y],
                error_y=err,
                mode="lines+markers",
                name=name,
                legendgroup=name,
                line=dict(color=color(name)),
                hovertext=hover,
                hoverinfo="text",
                customdata=[[name, v, lr] for v, lr in zip(a["x"].tolist(), a.lr.tolist())],  # a click: the cell
            )
        )
        if seeds is not None and not seeds.empty:
            s = seeds[seeds.attention == name]
            jitter = np.exp(np.random.default_rng(0).uniform(-0.04, 0.04, len(s))) * dodge(name) if log_x else 1.0
            fig.add_trace(
                go.Scatter(
                    x=s.x * jitter,
                    y=s.test_acc,
                    mode="markers",
                    legendgroup=name,
                    showlegend=False,
                    marker=dict(color=color(name), size=5, opacity=0.45),
                    hovertext=[f"{name} seed {sd}: {v:.3f}" for sd, v in zip(s.seed, s.test_acc)],
                    hoverinfo="text",
                )
            )
    y_title = "solved share (Wilson 95%)" if y == "share" else "mean test accuracy"
    fig.update_yaxes(title=y_title, range=[-0.03, 1.03], tickformat=".1f")
    values = sorted(set(table[x])) if ticks_at_values else None
    fig.update_xaxes(
        title=x_title,
        type="log" if log_x else "linear",
        tickvals=values,
        exponentformat="none",
        ticktext=[f"{v:g}" for v in values] if values else None,
        dtick=None if values or not log_x else 1,
    )  # decades only: no minor-tick labels
    fig.update_layout(height=420, margin=dict(t=30, b=50, l=60, r=20), legend_title_text="parameterization")
    return fig
