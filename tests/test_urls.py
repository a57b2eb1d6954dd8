"""URL state: a link's filters win over the session's sidebar state, and out-of-range URL values never raise."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]


def test_a_links_query_params_override_the_sidebars_session_state():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.run()
    assert len(at.sidebar.multiselect[1].value) == 8  # the session has chosen all eight
    at.query_params.update({"attn": "standard,identity", "lr": "best"})  # what page_link's query_params set
    at.switch_page("pages/loss_curves.py").run()
    assert not at.exception
    assert at.sidebar.multiselect[1].value == ["standard", "identity"]
    at.sidebar.multiselect[1].set_value(["standard", "stacked"]).run()  # the visitor's own choice then holds
    assert at.sidebar.multiselect[1].value == ["standard", "stacked"]
    assert at.query_params["attn"] == "standard,stacked"


@pytest.mark.parametrize("value, expected", [("5", 0.99), ("-1", 0.0), ("inf", 0.0), ("nan", 0.0), ("x", 0.0)])
def test_a_url_value_out_of_a_widgets_range_is_clamped_or_ignored(value, expected):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.query_params["smooth"] = value
    at.run()
    at.switch_page("pages/loss_curves.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.slider(key="smooth").value == expected
