"""Figures read right: legends name every parameterization once, heatmaps share one colour range."""

import json

import pandas as pd
from apptest import array

from core.dashboard import plots


def test_a_legend_lists_every_parameterization_drawn_in_any_facet_once():
    df = pd.DataFrame(
        {
            "task": ["a", "b", "b"],
            "attention": ["standard", "standard", "identity"],
            "x": [1, 1, 1],
            "y": [0.1, 0.2, 0.3],
        }
    )
    for fig in (plots.lines_by_attention(df, "x", "y", facet="task"), plots.bars_by_attention(df, "y", facet="task")):
        shown = [t.name for t in fig.data if t.showlegend]
        assert sorted(shown) == ["identity", "standard"]  # identity is absent from the first facet


def test_head_heatmaps_share_one_colour_range_and_one_bar():
    df = pd.DataFrame(
        {
            "attention": ["standard"] * 2 + ["tied_qk"] * 2,
            "layer": [0, 0, 0, 0],
            "head": [0, 1, 0, 1],
            "value": [0.04, 0.09, 1.0, 1.0],
        }
    )
    fig = plots.head_heatmaps(df)
    assert {(t.zmin, t.zmax) for t in fig.data} == {(0.04, 1.0)}
    assert [t.showscale for t in fig.data] == [True, False]


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

    from core.analysis.views import ema

    v = np.array([4.0, 2.0, 1.0, 3.0])
    assert np.array_equal(ema(v, 0.0), v)
    got = ema(v, 0.5)  # debiased: the first value is the first point, not half of it
    assert got[0] == 4.0 and got[1] == (0.25 * 4 + 0.5 * 2) / 0.75


def test_reference_lines_are_drawn_in_every_facet_they_belong_to():
    """Chance levels on strips and baselines on bars are drawn per facet, after that facet's data (plotly
    leaves a line off a subplot that has no data yet)."""
    import pandas as pd

    from core.dashboard.plots import bars_by_attention, outcomes

    dots = pd.DataFrame(
        {"task": ["a", "a", "b"], "attention": ["standard", "tied_qk", "standard"], "seed": 0, "v": [1.0, 0.5, 0.7]}
    )
    fig = outcomes.strip(dots, "v", ["a", "b"], chance={"a": {"uniform": 0.1}, "b": {"uniform": 0.2}})
    assert sorted((s.y0, s.yref) for s in fig.layout.shapes) == [(0.1, "y"), (0.2, "y2")]
    bars = pd.DataFrame({"f": ["x", "x", "y"], "attention": ["tied_qk", "standard", "standard"], "m": [2.0, 1, 3]})
    fig = bars_by_attention(bars, "m", "f", baseline={"x": 0.5, "y": 0.6})
    assert sorted((s.y0, s.yref) for s in fig.layout.shapes) == [(0.5, "y"), (0.6, "y2")]
    assert [(t.name, t.xaxis) for t in fig.data] == [("standard", "x"), ("tied_qk", "x"), ("standard", "x2")]


def test_a_builder_built_once_gives_the_figure_it_builds_and_a_new_one_each_call():
    """plots' builders keep each built figure (every visitor of a default view asks for the same ones): the kept
    figure is the builder's own, tidied, and each call returns a new Figure, so a caller's change stays its own."""
    from core.dashboard.plots import outcomes, scaling, style

    df = pd.DataFrame(
        {
            "task": ["a", "a", "b"],
            "attention": ["standard", "identity", "standard"],
            "x": [1, 10, 100],  # a decade in panel a: decade ticks (less than one would tick 1-2-5)
            "y": [0.1, 0.2, 0.3],
        }
    )
    direct = style.tidy_axes(plots.lines_by_attention.__wrapped__(df, "x", "y", facet="task", log_x=True))
    kept = plots.lines_by_attention(df, "x", "y", facet="task", log_x=True)
    assert kept.to_dict() == direct.to_dict() and kept.layout.xaxis.dtick == 1  # the tidied axes included
    kept.add_hline(y=0.5)
    again = plots.lines_by_attention(df, "x", "y", facet="task", log_x=True)
    assert again is not kept and not again.layout.shapes
    assert plots.lines_by_attention(df.assign(y=df.y * 2), "x", "y", facet="task").data[0].y[0] == 0.2  # new inputs
    builders = [f for m in (plots, outcomes, scaling) for f in vars(m).values() if hasattr(f, "__wrapped__")]
    assert {f.__name__ for f in builders} >= {"loss_curves", "lr_sweep", "attention_grid", "outcome_vs_axis"}


def test_a_chart_carries_its_figure_intact_as_the_components_data_and_returns_its_click(monkeypatch):
    """A chart is a component whose data is its figure as JSON: text from a store (run, model or task names) that
    looks like markup stays text and reads back as it was, NaN and an odd name included; the click comes back."""
    import numpy as np
    import plotly.graph_objects as go

    from core.dashboard import charts

    mounts = []

    def mount(**kw):
        mounts.append(kw)
        return type("Result", (), {"click": {"trace": "standard", "x": 4}})()

    monkeypatch.setattr(charts, "_CHART", mount)
    hostile = "</script><script>alert(1)</script><!--"
    fig = go.Figure(go.Scatter(x=[1, 2, 3], y=[1.0, np.nan, 2.0], name=hostile, text=["a&b", "<b>x</b>", "'\""]))
    assert charts.draw(fig, "../x y", {"displaylogo": False}) == {"trace": "standard", "x": 4}
    ((kw,),) = [(m,) for m in mounts]
    spec = charts.spec(json.dumps(kw["data"]))
    assert spec["data"][0]["name"] == hostile and spec["data"][0]["text"] == ["a&b", "<b>x</b>", "'\""]
    assert spec["data"][0]["y"][1] is None and spec["config"] == {"displaylogo": False}
    assert kw["key"] == "chart-___x_y" and kw["height"] == charts.HEIGHT  # the key keeps only [A-Za-z0-9_-]
    assert charts.spec("{}") is None and charts.spec("not json") is None


def test_small_multiples_of_nothing_are_an_empty_chart_that_says_so():
    fig = plots.head_heatmaps(pd.DataFrame(columns=["attention", "layer", "head", "value"]))
    assert not fig.data and fig.layout.annotations[0].text == "nothing to show for this selection"


def test_loss_curve_chance_lines_sit_on_their_own_tasks_panel_and_bands_stay_within_the_seeds():
    """The loss-curve figure is rebuilt from its dict (built_once), so its chance lines name each panel's axes;
    levels of one value are one line with both names; a ±std band never leaves the seeds' range (accuracy
    in [0, 1])."""
    rows = [
        {"task": t, "attention": "standard", "run_id": f"{t}{s}", "seed": s, "step": step, "value": v}
        for t in ("a", "b", "c")
        for s, end in enumerate([1.0, 0.2])  # one seed solves, one does not: mean ± std overshoots 1 and 0
        for step, v in ((0, 0.0), (10, end))
    ]
    fig = plots.loss_curves(pd.DataFrame(rows), "test_acc", tasks=["a", "b", "c"])
    levels = {"a": {"in_context": 0.1}, "b": {"in_context": 0.2}, "c": {"uniform": 0.3, "in_context": 0.3}}
    fig = plots.with_levels(fig, ["a", "b", "c"], levels)
    assert sorted((s.y0, s.yref) for s in fig.layout.shapes) == [(0.1, "y"), (0.2, "y2"), (0.3, "y3")]
    labels = {(a.text, a.yref) for a in fig.layout.annotations if a.yref in ("y", "y2", "y3")}
    assert labels == {("in_context", "y"), ("in_context", "y2"), ("uniform = in_context", "y3")}
    y = array(next(t for t in fig.data if t.name == "standard band").y)
    assert y.min() >= 0.0 and y.max() <= 1.0


def test_parameterizations_sharing_a_setting_are_dodged_apart_and_hover_their_true_value():
    """Six best-lr stars at one lr, or tied_qk's line on gqa's, would draw on top of each other: each
    parameterization's points move by its own small factor on the log x axis; the hover keeps the real lr."""
    from core.dashboard.plots import outcomes, scaling
    from core.dashboard.plots.style import ORDER

    names = ORDER[:6]
    df = pd.DataFrame(
        [{"task": "a", "attention": n, "lr": lr, "seed": 0, "v": 1.0} for n in names for lr in (1e-3, 3e-3)]
    )
    best = pd.DataFrame({"task": "a", "attention": names, "lr": 1e-3})
    fig = outcomes.lr_sweep(df, "v", ["a"], best)
    (stars,) = [t for t in fig.data if t.name == "best lr"]
    assert len(set(array(stars.x))) == len(names) and all(abs(x / 1e-3 - 1) < 0.11 for x in array(stars.x))
    lines = [t for t in fig.data if t.name in names]
    # the true lr rides in the customdata (the hover's and a click's), with the cell it belongs to
    assert all([list(c) for c in t.customdata] == [[t.name, "a", 1e-3], [t.name, "a", 3e-3]] for t in lines)
    assert "customdata[2]" in lines[0].hovertemplate
    assert [list(c) for c in stars.customdata] == [[n, "a", 1e-3] for n in names]
    table = pd.DataFrame(
        [
            {
                "attention": n,
                "x": x,
                "share": 1.0,
                "solved": 5,
                "n": 5,
                "solved_lo": 0.57,
                "solved_hi": 1.0,
                "test_acc": 1.0,
                "test_loss": 0.01,
                "lr": 1e-3,
                "steps": 800,
            }
            for n in ("tied_qk", "gqa")
            for x in (8, 16)
        ]
    )
    fig = scaling.outcome_vs_axis(table, "x", "d_head")
    assert not set(array(fig.data[0].x)) & set(array(fig.data[1].x))


def test_heatmaps_that_hold_by_construction_are_grey_and_spectra_stop_at_numerical_zero():
    df = pd.DataFrame(
        [{"attention": n, "layer": 0, "head": h, "value": 1.0} for n in ("standard", "tied_qk") for h in (0, 1)]
    )
    fig = plots.head_heatmaps(df, zmin=0, zmax=1, fixed=("tied_qk",))
    standard, tied = fig.data
    assert standard.showscale and not tied.showscale
    assert {c[1] for c in tied.colorscale} <= {"#d9d9d9", "#bdbdbd"} and "by construction" in tied.hovertemplate
    assert "tied_qk (by construction)" in [a.text for a in fig.layout.annotations]
    spec = pd.DataFrame({"attention": "standard", "matrix": "W_QK", "index": [0, 1, 2], "value": [1.0, 0.3, 1e-9]})
    assert tuple(plots.spectra(spec).layout.yaxis.range) == (-4, 0.1)


def test_name_ticks_get_room_and_a_short_log_axis_gets_more_than_one_tick():
    """Category names are angled with room made for them (clipped to 'tied_q' at 1280 before); a log axis over
    less than a decade ticks 1-2-5 (one '1e+4' tick alone before), over more, decades."""
    bars = pd.DataFrame({"f": ["x", "x"], "attention": ["tied_qk", "tied_qkv"], "m": [1.0, 2.0]})
    fig = plots.bars_by_attention(bars, "m", "f")
    assert fig.layout.xaxis.tickangle == -45 and fig.layout.xaxis.automargin
    from core.dashboard.plots.style import tidy_axes

    short = tidy_axes(plots.go.Figure(plots.go.Scatter(x=[1, 2], y=[12_000, 30_000])).update_yaxes(type="log"))
    long = tidy_axes(plots.go.Figure(plots.go.Scatter(x=[1, 2], y=[10, 30_000])).update_yaxes(type="log"))
    assert short.layout.yaxis.dtick == "D2" and long.layout.yaxis.dtick == 1


def test_a_parameterization_with_nothing_to_update_is_named_not_left_as_an_empty_legend_entry():
    df = pd.DataFrame(
        [
            {"matrix": "W_QK", "attention": n, "step": s, "value": v}
            for n, v in (("standard", 0.01), ("identity", 0.0))
            for s in (5, 10)
        ]
    )
    fig = plots.update_sizes(df)
    assert [t.name for t in fig.data] == ["standard"]
    assert any("identity" in a.text for a in fig.layout.annotations)


def test_legends_list_parameterizations_in_the_registrys_order_whatever_facet_drew_them_first():
    """A parameterization missing from the first facet was listed last (the Learning rate page's two charts
    disagreed): legend ranks follow the registry."""
    from core.dashboard.plots.style import ORDER

    df = pd.DataFrame(
        [{"task": "a", "attention": "bilinear", "lr": 1e-3, "seed": 0, "v": 1.0}]
        + [{"task": "b", "attention": n, "lr": 1e-3, "seed": 0, "v": 1.0} for n in ("standard", "bilinear")]
    )
    fig = plots.lr_sweep(df, "v", ["a", "b"], df.iloc[:0])
    ranks = {t.name: t.legendrank for t in fig.data if t.showlegend and t.name in ORDER}
    assert set(ranks) == {"standard", "bilinear"} and None not in ranks.values()
    assert ranks["standard"] < ranks["bilinear"]  # drawn second, listed first
