"""Colours, order and the small-multiples grid every figure shares: one fixed colour per parameterization."""

import functools
import zlib

import numpy as np
import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

from ...attention import NAMES

ORDER = list(NAMES)
_PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"]
# pretrained models first (grey, olive): hues no parameterization uses, so SmolLM2 is never read as standard's blue
_EXTRA = ["#7f7f7f", "#bcbd22", "#637939", "#8c6d31", "#843c39", "#7b4173"]
COLORS = {name: _PALETTE[i % len(_PALETTE)] for i, name in enumerate(ORDER)}
_COMPONENT_SHADES = ["#3b3b3b", "#7a7a7a", "#a8a8a8", "#cfcfcf", "#e8e8e8"]
REFERENCE_COLOR = "#111111"  # nn.MultiheadAttention, random baselines
REFERENCES = {"nn.MultiheadAttention": REFERENCE_COLOR, "sdpa": "#555555"}  # benchmark references


def color(name: str) -> str:
    """The parameterization's colour; pretrained models get their own, anything else a stable hash."""
    from ...analysis.pretrained import SOURCES  # light: torch loads only when a model is converted

    if name in COLORS:
        return COLORS[name]
    if name in REFERENCES:
        return REFERENCES[name]
    models = [s.name for s in SOURCES]
    if name in models:
        return _EXTRA[models.index(name)]
    return _EXTRA[len(models) + zlib.crc32(name.encode()) % (len(_EXTRA) - len(models))]


DODGE_DECADES = 0.012  # a parameterization's offset step on a log x axis: ±0.04 decades (±10%) for eight


def dodge(name: str) -> float:
    """The factor that moves a parameterization's points on a log x axis, by its registry position: lines that
    share values (tied_qk on gqa, six best-lr stars at one lr) stay visible and each keeps its own hover. One
    rule for every chart whose x is a setting shared by all parameterizations."""
    i = ORDER.index(name) if name in ORDER else len(ORDER) // 2
    return 10 ** ((i - (len(ORDER) - 1) / 2) * DODGE_DECADES)


def ordered(names) -> list[str]:
    names = list(dict.fromkeys(names))
    return [n for n in ORDER if n in names] + sorted(n for n in names if n not in ORDER)


def in_order(df, column: str = "attention", index: bool = False):
    """Rows (or the index) in the registry's order of `column`, unknown names after, stably: every table on every
    page lists parameterizations as the legends do."""
    names = df.index if index else df[column]
    rank = {n: i for i, n in enumerate(ordered(names))}
    key = [rank[n] for n in names]
    if index:
        return df.iloc[sorted(range(len(df)), key=key.__getitem__)]
    return df.assign(_rank=key).sort_values("_rank", kind="stable").drop(columns="_rank")


def _rgba(hex_color: str, alpha: float) -> str:
    r, g, b = (int(hex_color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def _grid(titles: list[str], cols: int = 3, **kw):
    if not titles:  # nothing to facet (every value filtered out): an empty chart that says so, not a crash
        fig = go.Figure()
        fig.add_annotation(
            text="nothing to show for this selection", showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper"
        )
        fig.update_layout(height=200, xaxis_visible=False, yaxis_visible=False)
        return fig, 1
    cols = max(1, min(cols, len(titles)))
    rows = -(-len(titles) // cols)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=titles, **kw)
    fig.update_layout(height=max(320, 300 * rows), margin=dict(t=60, b=40, l=50, r=20), legend_tracegroupgap=0)
    return fig, cols


def cell(i: int, cols: int) -> tuple[int, int]:
    """(row, col) of the i-th facet in a grid of `cols` columns (1-based, as plotly's subplots)."""
    return i // cols + 1, i % cols + 1


def add_placed(fig, placed: list[tuple[dict, tuple[int, int]]]) -> None:
    """Add (trace, (row, col)) pairs in one call: plotly validates and places a batch once, not per trace (the
    per-trace add_trace was most of a many-facet figure's build time)."""
    if placed:
        fig.add_traces([t for t, _ in placed], rows=[r for _, (r, _) in placed], cols=[c for _, (_, c) in placed])


def legend_once(fig):
    """Every parameterization drawn in any facet is in the legend, once: the first trace of each legend group
    whose name is the group's (bands and per-seed traces, named otherwise, keep their own setting). Listed in
    the registry's order whatever facet drew a parameterization first, so every chart's legend reads alike."""
    seen = set()
    for trace in fig.data:
        group = trace.legendgroup
        if group is None or trace.name not in (group, "reference") and not (group == "ref"):
            continue
        trace.showlegend = group not in seen
        trace.legendrank = 1000 + (ORDER.index(group) if group in ORDER else len(ORDER))
        seen.add(group)
    return fig


def tidy_axes(fig):
    """Every axis reads as plain numbers (0.01, 0.1, 1, then 1e-3 or 1e+4 beyond), never SI prefixes (100μ);
    a log axis without its own ticks labels decades only, not the minor ticks (3 4 5 … 100), or 1-2-5 where its
    data spans less than a decade (one decade tick alone would leave the axis unreadable)."""
    for key in [k for k in fig.layout.to_plotly_json() if k.startswith(("xaxis", "yaxis"))]:
        axis = fig.layout[key]
        axis.update(exponentformat="e", minexponent=3)
        if axis.type == "log" and axis.tickvals is None and axis.dtick is None:
            axis.update(dtick="D2" if _decades(fig, key) < 1 else 1)
    return fig


def _decades(fig, key: str) -> float:
    """How many decades the positive data on one axis (layout key 'yaxis2', ...) spans; inf when unknown."""
    ref, letter = key[0] + key[5:], key[0]  # 'yaxis2' -> 'y2'
    values = []
    for trace in fig.data:
        if (getattr(trace, f"{letter}axis", None) or letter) == ref:
            v = getattr(trace, letter, None)
            if v is not None and not isinstance(v, dict):
                values.append(np.asarray(v, dtype=float).ravel())
    v = np.concatenate(values) if values else np.array([])
    v = v[np.isfinite(v) & (v > 0)]
    return float(np.log10(v.max() / v.min())) if len(v) else float("inf")


def name_ticks(fig):
    """Parameterization names as category ticks, angled with room made for them: at 1280 wide, level labels
    in a small multiple were clipped to 'standa', 'tied_q' (tied_qk and tied_qkv then read the same)."""
    return fig.update_xaxes(tickangle=-45, automargin=True)


def lr_ticks(lrs) -> dict:
    """Tick every learning rate of the grid (3e-4 included), labelled as the CLI writes it."""
    values = sorted({float(v) for v in lrs})
    return dict(tickvals=values, ticktext=[f"{v:g}" for v in values])


FIGURE_ENTRIES = 64  # built figures kept: a few pages' default views at a few hundred kB each at most
_BUILDERS = {}


@st.cache_data(max_entries=FIGURE_ENTRIES, show_spinner=False)
def _built(name: str, args: tuple, kwargs: dict) -> dict:
    fig = tidy_axes(_BUILDERS[name](*args, **kwargs)).to_dict()
    fig["layout"].pop("template", None)  # the default, which a new Figure takes again
    return fig


def built_once(builder):
    """A figure builder whose figure, for the same inputs, is built once per server: every visitor of a default
    view asks for the same figures, and plotly validates each property as a builder sets it (most of a chart
    page's run; a Figure made from the finished dict takes a sixth of the time). Each call returns a new
    Figure, so a caller may change it."""
    name = f"{builder.__module__}.{builder.__qualname__}"
    _BUILDERS[name] = builder

    @functools.wraps(builder)
    def build(*args, **kwargs) -> go.Figure:
        return go.Figure(_built(name, args, kwargs))

    return build
