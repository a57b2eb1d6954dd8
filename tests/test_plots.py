"""Figures read right: legends name every parameterization once, heatmaps share one colour range."""

import pandas as pd

from core.dashboard import plots


def test_a_legend_lists_every_parameterization_drawn_in_any_facet_once():
    df = pd.DataFrame({"task": ["a", "b", "b"], "attention": ["standard", "standard", "identity"],
                       "x": [1, 1, 1], "y": [0.1, 0.2, 0.3]})  # fmt: skip
    for fig in (plots.lines_by_attention(df, "x", "y", facet="task"), plots.bars_by_attention(df, "y", facet="task")):
        shown = [t.name for t in fig.data if t.showlegend]
        assert sorted(shown) == ["identity", "standard"]  # identity is absent from the first facet


def test_head_heatmaps_share_one_colour_range_and_one_bar():
    df = pd.DataFrame({"attention": ["standard"] * 2 + ["tied_qk"] * 2, "layer": [0, 0, 0, 0], "head": [0, 1, 0, 1],
                       "value": [0.04, 0.09, 1.0, 1.0]})  # fmt: skip
    fig = plots.head_heatmaps(df)
    assert {(t.zmin, t.zmax) for t in fig.data} == {(0.04, 1.0)}
    assert [t.showscale for t in fig.data] == [True, False]


def test_every_verdict_cell_has_one_clickable_point_carrying_its_hover():
    """plotly selects points, not heatmap cells: a click on a cell lands on its overlay point, which names it."""
    rows, cols = ["stacked", "tied_qk"], ["sort", "scan: d_head"]
    cells = pd.DataFrame([{"attention": a, "column": c, "verdict": "worse", "text": "1/5", "hover": f"{a} on {c}"}
                          for a in rows for c in cols if (a, c) != ("tied_qk", "sort")])  # fmt: skip
    heat, points = plots.verdict_matrix(cells, rows, cols).data
    assert heat.hoverinfo == "skip" and points.type == "scatter"
    assert list(zip(points.y, points.x, points.hovertext)) == [
        ("stacked", "sort", "stacked on sort"), ("stacked", "scan: d_head", "stacked on scan: d_head"),
        ("tied_qk", "sort", "not compared"), ("tied_qk", "scan: d_head", "tied_qk on scan: d_head")]  # fmt: skip


def test_a_csv_download_is_written_on_click_from_the_data_as_shown():
    """Pages pass download buttons a callable (the CSV is not built on every draw); it gives the shown data's
    CSV even if the frame is changed after the draw."""
    import pandas as pd

    from core.dashboard import ui

    df = pd.DataFrame({"attention": ["standard", "tied_qk"], "test_loss": [0.01, 0.25]})
    make = ui.csv_of(df)
    df.loc[0, "test_loss"] = 99.0
    assert make() == b"attention,test_loss\nstandard,0.01\ntied_qk,0.25\n"


def test_ema_is_the_identity_without_smoothing_and_debiased_with_it():
    import numpy as np

    from core.dashboard.plots import ema

    v = np.array([4.0, 2.0, 1.0, 3.0])
    assert np.array_equal(ema(v, 0.0), v)
    got = ema(v, 0.5)  # debiased: the first value is the first point, not half of it
    assert got[0] == 4.0 and got[1] == (0.25 * 4 + 0.5 * 2) / 0.75


def test_reference_lines_are_drawn_in_every_facet_they_belong_to():
    """Chance levels on strips and baselines on bars are drawn per facet, after that facet's data (plotly
    leaves a line off a subplot that has no data yet)."""
    import pandas as pd

    from core.dashboard.plots import bars_by_attention, outcomes

    dots = pd.DataFrame({"task": ["a", "a", "b"], "attention": ["standard", "tied_qk", "standard"], "seed": 0,
                         "v": [1.0, 0.5, 0.7]})  # fmt: skip
    fig = outcomes.strip(dots, "v", ["a", "b"], chance={"a": {"uniform": 0.1}, "b": {"uniform": 0.2}})
    assert sorted((s.y0, s.yref) for s in fig.layout.shapes) == [(0.1, "y"), (0.2, "y2")]
    bars = pd.DataFrame({"f": ["x", "x", "y"], "attention": ["tied_qk", "standard", "standard"], "m": [2.0, 1, 3]})
    fig = bars_by_attention(bars, "m", "f", baseline={"x": 0.5, "y": 0.6})
    assert sorted((s.y0, s.yref) for s in fig.layout.shapes) == [(0.5, "y"), (0.6, "y2")]
    assert [(t.name, t.xaxis) for t in fig.data] == [("standard", "x"), ("tied_qk", "x"), ("standard", "x2")]
