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
    """One line per parameterization: solved share with its Wilson 95% band as error bars (y="share"), mean
    test accuracy (y="test_acc"), or, for cells trained to the criterion, steps to solve: the Kaplan-Meier median
    with its 95% interval (y="median_steps"; a median not reached by the cap is an open triangle at the cap).
    `seeds` (columns attention, x, seed and test_acc, or steps for y="median_steps") adds each seed as a dot."""
    fig = go.Figure()
    steps_y = y == "median_steps"
    for name in ordered(table.attention):
        a = table[table.attention == name].sort_values(x)
        shown, err = a[y], None
        if y == "share":
            err = dict(type="data", symmetric=False, array=a.solved_hi - a.share, arrayminus=a.share - a.solved_lo)
        if steps_y:
            shown, lo, hi = (a[c].where(np.isfinite(a[c]), a.steps) for c in ("median_steps", "median_lo", "median_hi"))
            err = dict(type="data", symmetric=False, array=hi - shown, arrayminus=shown - lo)
        fig.add_trace(
            go.Scatter(
                x=a[x] * (dodge(name) if log_x else 1.0),  # tied_qk would hide exactly under gqa
                y=shown,
                error_y=err,
                mode="lines+markers",
                name=name,
                legendgroup=name,
                line=dict(color=color(name)),
                marker=dict(symbol=_symbols(a) if steps_y else "circle", size=8),
                hovertext=_hover(a, name, x, x_title),
                hoverinfo="text",
                customdata=[[name, v, lr] for v, lr in zip(a["x"].tolist(), a.lr.tolist())],  # a click: the cell
            )
        )
        if seeds is not None and not seeds.empty:
            s, value = seeds[seeds.attention == name], "steps" if steps_y else "test_acc"
            jitter = np.exp(np.random.default_rng(0).uniform(-0.04, 0.04, len(s))) * dodge(name) if log_x else 1.0
            fig.add_trace(
                go.Scatter(
                    x=s.x * jitter,
                    y=s[value],
                    mode="markers",
                    legendgroup=name,
                    showlegend=False,
                    marker=dict(color=color(name), size=5, opacity=0.45),
                    hovertext=[f"{name} seed {sd}: {v:g}" for sd, v in zip(s.seed, s[value])],
                    hoverinfo="text",
                )
            )
    if steps_y:
        fig.update_yaxes(title="steps to solve (Kaplan-Meier median, 95%)", type="log", exponentformat="none")
    else:
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


def _symbols(a: pd.DataFrame) -> list[str]:
    """A reached median is a dot; one past the cap an open triangle drawn at the cap."""
    return ["circle" if np.isfinite(m) else "triangle-up-open" for m in a.median_steps]


def _hover(a: pd.DataFrame, name: str, x: str, x_title: str) -> list[str]:
    out = []
    for r in a.itertuples():
        steps = ""
        if np.isfinite(getattr(r, "median_lo", np.nan)):  # a cell trained to the criterion, solved by the cap
            med = f"{r.median_steps:,.0f}" if np.isfinite(r.median_steps) else f"> {r.steps:,}"
            hi = f"{r.median_hi:,.0f}" if np.isfinite(r.median_hi) else "∞"
            steps = f"<br>steps to solve {med} [{r.median_lo:,.0f}, {hi}]"
        out.append(
            f"{name}<br>{x_title.split(' (')[0]} {getattr(r, x):g}<br>solved {r.solved}/{r.n} "
            f"[{r.solved_lo:.2f}, {r.solved_hi:.2f}]<br>test acc {r.test_acc:.3f} · loss {r.test_loss:.3g}"
            f"{steps}<br>lr {r.lr:g} · {r.steps} steps"
        )
    return out
