"""The Scaling page on every axis (a made-up store) and on the bundled data."""

from pathlib import Path

import numpy as np
import pytest
from apptest import array, open_page, specs
from fake_scans import SETTINGS, fake_runs, write_store
from streamlit.testing.v1 import AppTest

from core.analysis import axes, scaling, words
from core.results import store as st

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def scan_store(tmp_path_factory):
    root = tmp_path_factory.mktemp("stores")
    write_store(root / "scan", fake_runs(seeds=3))
    return root


@pytest.mark.parametrize("axis", list(axes.AXES))
def test_the_scaling_page_draws_every_axis(axis, scan_store, monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_STORES", str(scan_store))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.query_params.update({"store": "scan", "axis": axis, "sc_seeds": "1"})
    at.run()
    at.switch_page("pages/scaling.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox(key="axis").value == axis
    charts = specs(at)
    assert len(charts) == 2 and len(at.get("download_button")) >= 3  # every chart and the table have a CSV
    names = {t.get("name") for t in charts[0]["data"] if t.get("showlegend", True)}
    assert names == ({"standard", "tied_qk"} if axis == "d_head" else {"standard", "tied_qk", "identity"})
    text = " ".join(m.value for m in at.markdown)
    var = axes.AXES[axis].var
    assert (f"needs {var} ≥" if axes.AXES[axis].grows else f"solves up to {var} ≤") in text
    th = at.dataframe[0].value.set_index("attention")
    assert th.threshold["standard"] == words.threshold_text(axis, SETTINGS[axis][1])  # words, never a NaN
    assert th.threshold.get("identity", "never") == "never"


def test_the_scaling_page_draws_steps_to_solve_on_a_criterion_axis_only():
    """On an axis trained to the criterion, "steps to solve" plots each cell's Kaplan-Meier median on a log axis;
    an axis on a fixed budget does not offer it."""
    runs = st.load_runs(ROOT / "data")
    criterion = [a for a in axes.axes_present(runs) if (scaling.outcomes(runs, a).until == "solved").all()]
    fixed = [a for a in axes.axes_present(runs) if a not in criterion]
    at = open_page("scaling", axis=criterion[0], sc_y="median_steps")
    assert at.radio(key="sc_y").value == "median_steps"
    fig = specs(at)[0]
    assert fig["layout"]["yaxis"]["type"] == "log"
    table = scaling.outcomes(runs, criterion[0])
    ref = table[table.attention == "standard"].sort_values("x")
    drawn = next(t for t in fig["data"] if t.get("name") == "standard")
    expected = ref.median_steps.where(np.isfinite(ref.median_steps), ref.steps)  # past the cap: drawn at it
    assert array(drawn["y"]).tolist() == pytest.approx(expected.tolist())
    if fixed:
        at = open_page("scaling", axis=fixed[0], sc_y="median_steps")
        assert "median_steps" not in at.radio(key="sc_y").options and at.radio(key="sc_y").value == "share"
