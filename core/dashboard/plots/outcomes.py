"""Figures of outcomes across seeds and learning rates: per-seed strips, lr sweeps, update sizes."""

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .style import (
    REFERENCE_COLOR,
    _grid,
    _rgba,
    add_placed,
    built_once,
    cell,
    color,
    dodge,
    legend_once,
    lr_ticks,
    name_ticks,
    ordered,
)

_DASH = {"uniform": "dot", "in_context": "dash", "unqueried": "dashdot"}


@built_once
def strip(df: pd.DataFrame, y: str, tasks: list[str], chance: dict | None = None, y_title: str = "") -> go.Figure:
    """One dot per seed (df rows: task, attention, seed, y), small multiples by task, so a bimodal
    outcome shows as two clusters; optional chance levels per task ({task: {name: value}}) as lines."""
    fig, cols = _grid(tasks)
    rng = np.random.default_rng(0)  # a fixed jitter: the same picture on every rerun
    placed = []
    for i, task in enumerate(tasks):
        row, col = cell(i, cols)
        d = df[df.task == task]
        cells = dict(tuple(d.groupby("attention", observed=True)))
        names = ordered(d.attention)
        for j, name in enumerate(names):
            a = cells[name]
            placed.append(
                (
                    dict(
                        type="scatter",
                        x=(j + rng.uniform(-0.18, 0.18, len(a))).tolist(),
                        y=a[y].tolist(),
                        mode="markers",
                        name=name,
                        marker=dict(color=color(name), size=8, opacity=0.8, line=dict(width=0.5, color="white")),
                        text=[f"seed {s}" for s in a.seed],
                        legendgroup=name,
                        showlegend=i == 0,
                    ),
                    (row, col),
                )
            )
        fig.update_xaxes(tickvals=list(range(len(names))), ticktext=names, row=row, col=col)
    add_placed(fig, placed)
    for i, task in enumerate(tasks):  # after the dots: plotly draws a line only on a subplot that has data
        row, col = cell(i, cols)
        for label, value in (chance or {}).get(task, {}).items():
            line = dict(color=REFERENCE_COLOR, dash=_DASH.get(label, "dot"), width=1)
            fig.add_hline(y=value, line=line, annotation_text=label, annotation_font_size=9, row=row, col=col)
    fig.update_yaxes(title_text=y_title or y, col=1)
    return legend_once(name_ticks(fig))


@built_once
def lr_sweep(df: pd.DataFrame, y: str, tasks: list[str], best: pd.DataFrame, log_y=False, y_title="") -> go.Figure:
    """Final y against lr (log x), one line per parameterization (mean over seeds, min-max bars), small
    multiples by task; each parameterization's best lr (best: task, attention, lr) marked with a star."""
    fig, cols = _grid(tasks)
    stats = df.groupby(["task", "attention", "lr"], observed=True)[y].agg(["mean", "min", "max"]).reset_index()
    cells = dict(tuple(stats.groupby(["task", "attention"], observed=True)))  # one pass, not one filter per line
    best_lrs = best.groupby(["task", "attention"], observed=True).lr.agg(set).to_dict()
    placed = []
    for i, task in enumerate(tasks):
        stars = {"x": [], "y": [], "color": [], "text": [], "customdata": []}  # one trace per facet: each best lr
        for name in ordered(stats.attention[stats.task == task]):
            # plain lists: for a handful of points plotly validates them ~3x faster than numpy arrays
            g = {k: v.tolist() for k, v in cells[(task, name)].sort_values("lr").items()}
            c = color(name)
            # one trace per line, its min-max range as error bars (a third of the traces a band trace would add)
            placed.append(
                (
                    dict(
                        type="scatter",
                        x=[lr * dodge(name) for lr in g["lr"]],
                        y=g["mean"],
                        customdata=[[name, task, lr] for lr in g["lr"]],  # a click: the cell's runs at that lr
                        hovertemplate=f"{name}<br>lr %{{customdata[2]:g}}<br>%{{y:.4g}}<extra></extra>",
                        mode="lines+markers",
                        name=name,
                        legendgroup=name,
                        showlegend=i == 0,
                        line=dict(color=c),
                        marker=dict(color=c, size=6),
                        error_y=dict(
                            type="data",
                            symmetric=False,
                            array=[hi - m for hi, m in zip(g["max"], g["mean"])],
                            arrayminus=[m - lo for m, lo in zip(g["mean"], g["min"])],
                            color=_rgba(c, 0.45),
                            thickness=1.5,
                            width=3,
                        ),
                    ),
                    cell(i, cols),
                )
            )
            for lr, m in zip(g["lr"], g["mean"]):
                if lr in best_lrs.get((task, name), ()):
                    star = (lr * dodge(name), m, c, f"{name}: best lr {lr:g} (on validation)", [name, task, lr])
                    for key, value in zip(stars, star):
                        stars[key].append(value)
        placed.append(
            (
                dict(
                    type="scatter",
                    x=stars["x"],
                    y=stars["y"],
                    text=stars["text"],
                    customdata=stars["customdata"],
                    mode="markers",
                    name="best lr",
                    showlegend=False,
                    hoverinfo="text",
                    marker=dict(symbol="star", size=15, color=stars["color"], line=dict(width=1, color="black")),
                ),
                cell(i, cols),
            )
        )
    add_placed(fig, placed)
    fig.update_xaxes(type="log", title_text="learning rate", **lr_ticks(df.lr))
    fig.update_yaxes(type="log" if log_y else "linear")
    fig.update_yaxes(title_text=y_title or y, col=1)
    return legend_once(fig)


@built_once
def update_sizes(df: pd.DataFrame) -> go.Figure:
    """Relative update per step of the effective matrices over training (df rows: matrix, attention,
    step, value = mean over seeds and layers), one panel per matrix, log y."""
    mats = list(dict.fromkeys(df.matrix))
    fig, cols = _grid(mats, cols=2)
    # a parameterization with nothing to update (identity: no attention parameters) has no point on a log axis:
    # left out and named under the chart, rather than a legend entry with no line
    still = df.groupby("attention").value.transform("max") > 0
    static = ordered(set(df.attention[~still]))
    df = df[still]
    if static:
        fig.add_annotation(
            text="not drawn (no attention parameters to update): " + ", ".join(static),
            showarrow=False,
            x=0,
            y=-0.18,
            xref="paper",
            yref="paper",
            xanchor="left",
            font_size=11,
        )
    for i, m in enumerate(mats):
        d = df[df.matrix == m]
        for name in ordered(d.attention):
            a = d[d.attention == name].sort_values("step")
            fig.add_trace(
                go.Scatter(
                    x=a.step,
                    y=a.value,
                    mode="lines",
                    name=name,
                    line=dict(color=color(name)),
                    legendgroup=name,
                    showlegend=i == 0,
                ),
                row=1,
                col=i + 1,
            )
    fig.update_yaxes(type="log")
    fig.update_yaxes(title_text="‖ΔW‖ / ‖W‖ per step", col=1)
    fig.update_xaxes(title_text="step")
    return fig


def with_levels(fig: go.Figure, tasks: list[str], levels: dict) -> go.Figure:
    """Dashed reference lines ({task: {name: value}}) on each task's panel of a small-multiples figure."""
    for i, task in enumerate(tasks):
        # the panel's own axes by name (x3, y3 for the third), not row/col: a figure rebuilt from its dict
        # (built_once) has no subplot grid, and plotly then puts every line on the first panel
        n = "" if i == 0 else str(i + 1)
        same = {}  # levels of one value are one line, named once: two labels would be drawn over each other
        for label, value in levels.get(task, {}).items():
            if value == value:
                same.setdefault(round(value, 9), []).append(label)
        for value, labels in same.items():
            line = dict(color=REFERENCE_COLOR, dash=_DASH.get(labels[0], "dot"), width=1)
            fig.add_shape(type="line", xref=f"x{n} domain", yref=f"y{n}", x0=0, x1=1, y0=value, y1=value, line=line)
            fig.add_annotation(
                xref=f"x{n} domain",
                yref=f"y{n}",
                x=1,
                y=value,
                text=" = ".join(labels),
                showarrow=False,
                xanchor="right",
                yanchor="bottom",
                font_size=9,
            )
    return fig
