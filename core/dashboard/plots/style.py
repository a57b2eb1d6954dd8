"""Colours, order and the small-multiples grid every figure shares: one fixed colour per parameterization."""

import zlib

from plotly.subplots import make_subplots

from ...attention import ATTENTION

ORDER = list(ATTENTION)
_PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"]
_EXTRA = ["#7f7f7f", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173"]
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


def ordered(names) -> list[str]:
    names = list(dict.fromkeys(names))
    return [n for n in ORDER if n in names] + sorted(n for n in names if n not in ORDER)


def _rgba(hex_color: str, alpha: float) -> str:
    r, g, b = (int(hex_color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def _grid(titles: list[str], cols: int = 3, **kw):
    cols = max(1, min(cols, len(titles)))
    rows = -(-len(titles) // cols)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=titles, **kw)
    fig.update_layout(height=max(320, 300 * rows), margin=dict(t=60, b=40, l=50, r=20), legend_tracegroupgap=0)
    return fig, cols


def legend_once(fig):
    """Every parameterization drawn in any facet is in the legend, once: the first trace of each legend group
    whose name is the group's (bands and per-seed traces, named otherwise, keep their own setting)."""
    seen = set()
    for trace in fig.data:
        group = trace.legendgroup
        if group is None or trace.name not in (group, "reference") and not (group == "ref"):
            continue
        trace.showlegend = group not in seen
        seen.add(group)
    return fig
