"""Every figure the dashboard shows. Builders take tidy DataFrames and return plotly figures.

One fixed colour per parameterization, and the registry's order as the legend order, everywhere.
Holds style (colours, order, axes, each figure built once), outcomes (accuracy strips, lr sweeps, update
sizes), heads (per-head heatmaps and attention patterns), scaling (the scan charts) and matrix (the Overview's
verdict matrix as HTML and SVG); the curve, bar and spectrum builders are here.
"""

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ...analysis.views import curve_bands, ema
from .style import (  # noqa: F401 - part of this module's interface
    _COMPONENT_SHADES,
    COLORS,
    ORDER,
    REFERENCE_COLOR,
    REFERENCES,
    _grid,
    _rgba,
    add_placed,
    built_once,
    cell,
    color,
    in_order,
    legend_once,
    lr_ticks,
    name_ticks,
    ordered,
    tidy_axes,
)


def facet_title(df: pd.DataFrame, facet: str | None, value) -> str:
    """A facet of a numeric field is labelled with the field ("d_model = 64"); a named one (task, matrix) by name."""
    if not facet:
        return ""
    return f"{facet} = {value}" if pd.api.types.is_numeric_dtype(df[facet]) else str(value)


@built_once
def loss_curves(df, metric, x="step", band="std", show_runs=False, smoothing=0.0, log_y=False, tasks=None):
    """Small multiples by task; a mean line per parameterization with a ±std or min–max band over seeds."""
    tasks = tasks or list(dict.fromkeys(df["task"]))
    fig, cols = _grid(tasks)
    bands = curve_bands(df, x, smoothing)
    cells = dict(tuple(bands.groupby(["task", "attention"])))  # one pass, not one filter per line
    seeds = dict(tuple(df.groupby(["task", "attention"]))) if show_runs else {}
    placed = []
    for i, task in enumerate(tasks):
        for name in ordered(df["attention"]):
            if (task, name) not in cells:
                continue
            b, c = cells[(task, name)], color(name)
            here = _curve_traces(b, x, name, c, band, log_y, seeds.get((task, name)), smoothing, first=i == 0)
            placed += [(t, cell(i, cols)) for t in here]
    add_placed(fig, placed)
    fig.update_yaxes(type="log" if log_y else "linear")
    fig.update_yaxes(title_text=metric, col=1)
    fig.update_xaxes(title_text="wall time (s)" if x == "wall_time" else "step")
    return legend_once(fig)


def _curve_traces(b, x, name, c, band, log_y, seeds, smoothing, first) -> list[dict]:
    """One cell's traces: its band (± std or min-max), each seed when asked (seeds: its rows), its mean line."""
    out = []
    if band in ("std", "minmax"):
        lo, hi = (b["mean"] - b["std"], b["mean"] + b["std"]) if band == "std" else (b["min"], b["max"])
        # never past the seeds themselves: an accuracy band stays in [0, 1], a log axis never meets a value <= 0
        lo, hi = np.maximum(lo, b["min"]), np.minimum(hi, b["max"])
        out.append(
            dict(
                type="scatter",
                x=np.r_[b[x], b[x][::-1]],
                y=np.r_[hi, lo[::-1]],
                fill="toself",
                fillcolor=_rgba(c, 0.18),
                line=dict(width=0),
                hoverinfo="skip",
                showlegend=False,
                legendgroup=name,
                name=f"{name} band",
            )
        )
    if seeds is not None:
        for _, r in seeds.sort_values(x).groupby("run_id"):
            out.append(
                dict(
                    type="scatter",
                    x=r[x].to_numpy(),
                    y=ema(r["value"].to_numpy(), smoothing),
                    mode="lines",
                    line=dict(color=_rgba(c, 0.45), width=1),
                    legendgroup=name,
                    showlegend=False,
                    name=f"{name} seed {r['seed'].iloc[0]}",
                )
            )
    out.append(
        dict(
            type="scatter",
            x=b[x].to_numpy(),
            y=b["mean"].to_numpy(),
            mode="lines",
            line=dict(color=c, width=2),
            name=name,
            legendgroup=name,
            showlegend=first,
        )
    )
    return out


@built_once
def stacked_bars(df: pd.DataFrame, x: str, stack: str, y: str, title: str = "") -> go.Figure:
    """Bars per x (parameterization), stacked by component; tick labels in each parameterization's colour."""
    fig = go.Figure()
    xs = ordered(df[x])
    for i, comp in enumerate(dict.fromkeys(df[stack])):  # neutral shades: colour means parameterization
        d = df[df[stack] == comp].set_index(x).reindex(xs)
        fig.add_trace(go.Bar(x=xs, y=d[y], name=str(comp), marker_color=_COMPONENT_SHADES[i % len(_COMPONENT_SHADES)]))
    ticks = [f"<span style='color:{color(n)}'><b>{n}</b></span>" for n in xs]
    fig.update_xaxes(categoryorder="array", categoryarray=xs, tickvals=xs, ticktext=ticks)
    fig.update_layout(barmode="stack", title=title, yaxis_title=y, height=420, legend_title_text=stack)
    return fig


@built_once
def lines_by_attention(
    df: pd.DataFrame,
    x: str,
    y: str,
    facet: str | None = None,
    log_x=False,
    log_y=False,
    reference: pd.DataFrame | None = None,
    reference_name: str = "reference",
    spread: tuple[str, str] | None = None,
) -> go.Figure:
    """One line per parameterization (optionally faceted); an optional black reference line per facet.
    spread: (low, high) columns drawn as error bars around y, e.g. a timing's quartiles over rounds."""
    facets = list(dict.fromkeys(df[facet])) if facet else [""]
    fig, cols = _grid([facet_title(df, facet, f) for f in facets])
    cells = dict(tuple(df.groupby([facet, "attention"] if facet else ["attention"], sort=False, observed=True)))
    refs = dict(tuple(reference.groupby(facet, sort=False, observed=True))) if reference is not None and facet else {}
    placed = []
    for i, f in enumerate(facets):
        names = ordered(n for (*key, n) in cells if not facet or key[0] == f)
        for name in names:
            a = cells[(f, name) if facet else (name,)].sort_values(x)
            err = None
            if spread:
                err = dict(
                    type="data",
                    symmetric=False,
                    array=(a[spread[1]] - a[y]).tolist(),
                    arrayminus=(a[y] - a[spread[0]]).tolist(),
                )
            placed.append(
                (
                    dict(
                        type="scatter",
                        x=a[x].tolist(),
                        y=a[y].tolist(),
                        error_y=err,
                        mode="lines+markers",
                        name=name,
                        line=dict(color=color(name)),
                        legendgroup=name,
                        showlegend=i == 0,
                    ),
                    cell(i, cols),
                )
            )
        if reference is not None:
            r = (refs.get(f, reference.iloc[0:0]) if facet else reference).sort_values(x)
            placed.append(
                (
                    dict(
                        type="scatter",
                        x=r[x].tolist(),
                        y=r[y].tolist(),
                        mode="lines",
                        name=reference_name,
                        legendgroup="ref",
                        line=dict(color=REFERENCE_COLOR, dash="dash"),
                        showlegend=i == 0,
                    ),
                    cell(i, cols),
                )
            )
    add_placed(fig, placed)
    fig.update_xaxes(type="log" if log_x else "linear", title_text=x)
    fig.update_yaxes(type="log" if log_y else "linear")
    fig.update_yaxes(title_text=y, col=1)
    return legend_once(fig)


@built_once
def bars_by_attention(
    df: pd.DataFrame, y: str, facet: str, error: str | None = None, log_y=False, baseline: dict | None = None
) -> go.Figure:
    """Mean per parameterization as bars (± error), small multiples by facet; optional baseline per facet."""
    facets = list(dict.fromkeys(df[facet]))
    fig, cols = _grid([facet_title(df, facet, f) for f in facets])
    cells = dict(tuple(df.groupby([facet, "attention"], sort=False, observed=True)))
    placed = []
    for i, f in enumerate(facets):
        for name in ordered(n for key, n in cells if key == f):
            a = cells[(f, name)]
            err = dict(type="data", array=a[error].tolist()) if error else None
            placed.append(
                (
                    dict(
                        type="bar",
                        x=[name],
                        y=a[y].tolist(),
                        error_y=err,
                        marker_color=color(name),
                        name=name,
                        legendgroup=name,
                        showlegend=i == 0,
                    ),
                    cell(i, cols),
                )
            )
    add_placed(fig, placed)
    for i, f in enumerate(facets):  # after the bars: plotly draws a line only on a subplot that has data
        if baseline and f in baseline:
            row, col = cell(i, cols)
            fig.add_hline(y=baseline[f], line=dict(color=REFERENCE_COLOR, dash="dash"), row=row, col=col)
    fig.update_yaxes(type="log" if log_y else "linear")
    fig.update_yaxes(title_text=y, col=1)
    fig.update_layout(showlegend=True, bargap=0.25)
    return legend_once(name_ticks(fig))


def spectra(df: pd.DataFrame, facet: str = "matrix") -> go.Figure:
    """df rows: attention, matrix, index, value (normalised singular values, mean over heads and seeds)."""
    fig = lines_by_attention(df, "index", "value", facet=facet, log_y=True)
    # below 1e-4 of the largest a singular value is the numerical zero of a rank-limited matrix (1e-8 and less
    # in float32): the axis stops there, so the spectrum, not its rounding noise, fills the chart
    return fig.update_yaxes(range=[-4, 0.1])


from .heads import attention_grid, head_heatmaps  # noqa: E402,F401 - per-head figures
from .outcomes import lr_sweep, strip, update_sizes, with_levels  # noqa: E402,F401 - outcome and lr figures
