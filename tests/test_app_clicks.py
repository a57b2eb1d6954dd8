"""A click on a chart opens the runs behind it: the component's click (charts.draw's return) routed by the page."""

import pytest
from apptest import open_page, specs

from core.dashboard import charts

clicks: list[dict] = []  # what each test's chart reported


def _clicking(monkeypatch, chart: str, point) -> None:
    """charts.draw as it is, except that the named chart reports `point` as clicked, as the browser's click would."""
    real = charts.draw

    def draw(fig, name, config):
        real(fig, name, config)
        if name != chart:
            return None
        clicks.append(point(fig))
        return clicks[-1]

    clicks.clear()
    monkeypatch.setattr(charts, "draw", draw)


def _first_point(trace_name: str):
    """The first point of the named trace, as plotly.js reports a click on it."""

    def point(fig):
        trace = next(t for t in fig.data if t.name == trace_name)
        return {"trace": trace_name, "x": None, "y": None, "z": None, "customdata": list(trace.customdata[0])}

    return point


def test_a_scaling_point_opens_its_cells_seeds_in_runs_with_their_curves(monkeypatch):
    _clicking(monkeypatch, "scaling-d_head", _first_point("tied_qk"))
    at = open_page("scaling", axis="d_head")
    assert at.title[0].value == "Runs", [t.value for t in at.title]
    ticked = at.query_params["rsel"].split(",")
    shown = at.dataframe[0].value
    assert len(ticked) >= 5 and set(ticked) <= set(shown.run_id)  # the cell's seeds, each listed
    cell = shown[shown.run_id.isin(ticked)]
    assert set(cell.attention) == {"tied_qk"} and cell.lr.nunique() == 1  # Runs lists every lr; the cell's ticked
    assert "d_head=" in at.query_params["size"]  # the scan point's own size, not the bundled one
    assert specs(at), "the ticked seeds' curves are drawn"


@pytest.mark.parametrize("trace", ["gqa", "best lr"])
def test_a_learning_rate_point_or_star_opens_its_curves(monkeypatch, trace):
    _clicking(monkeypatch, "lr-test_acc", _first_point(trace))
    at = open_page("learning_rate")
    assert at.title[0].value == "Loss curves", [t.value for t in at.title]
    clicked = clicks[0]["customdata"]
    assert trace in ("best lr", clicked[0])
    assert (at.query_params["attn"], at.query_params["tasks"]) == tuple(clicked[:2])
    assert at.query_params["lr"] == f"{clicked[2]:g}"
    drawn = {t.get("name") for s in specs(at) for t in s["data"]}
    assert clicked[0] in drawn and not drawn & {"standard", "stacked", "gqa"} - {clicked[0]}
