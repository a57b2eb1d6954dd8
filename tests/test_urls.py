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


def test_a_verdict_cell_opens_its_evidence_with_standard_beside_it():
    from core.dashboard import urls

    assert urls.evidence("bilinear", "induction", {}, "best") == (
        "pages/loss_curves.py",
        {"attn": "standard,bilinear", "lr": "best", "tasks": "induction"},
    )
    titles = {"d_head": "d_head", "n_heads (induction)": "n_heads_induction"}
    page, params = urls.evidence("tied_qk", "scan: n_heads (induction)", titles, "best")
    assert page == "pages/scaling.py" and params == {
        "attn": "standard,tied_qk",
        "lr": "best",
        "axis": "n_heads_induction",
    }
    assert urls.evidence("standard", "sort", {}, "best")[1]["attn"] == "standard"  # named once


def test_a_plain_link_carries_the_sidebars_url_state_under_its_own_params():
    from urllib.parse import parse_qs, urlsplit

    from core.dashboard import urls

    keep = {"store": "mine", "attn": "standard,mqa,gqa", "steps": "800"}
    link = urlsplit(urls.href("pages/scaling.py", {"attn": "standard,mqa", "axis": "d_head"}, keep))
    assert link.path == "scaling" and not link.netloc  # relative: any base path holds
    assert parse_qs(link.query) == {"store": ["mine"], "attn": ["standard,mqa"], "steps": ["800"], "axis": ["d_head"]}


def test_the_links_sidebar_keys_are_exactly_the_sidebars_url_widgets():
    """The sidebar records the keys of its own URL widgets (urls.recording), every one a sidebar widget. Opening
    the app adds nothing to the URL (defaults stay out of it: no history entry to go Back through); a choice
    goes in, in one change with the run's others."""
    from core.dashboard import urls

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.run()
    assert not at.exception
    recorded = at.session_state[urls.SIDEBAR]
    assert set(recorded) >= {"store", "tasks", "attn", "lr"} and not set(at.query_params)
    assert set(recorded) <= {w.key for w in at.sidebar if getattr(w, "key", None)}
    at.sidebar.multiselect(key="attn").set_value(["standard", "tied_qk"]).run()
    assert dict(at.query_params) in ({"attn": "standard,tied_qk"}, {"attn": ["standard,tied_qk"]})


def test_a_run_writes_its_url_values_in_one_change(monkeypatch):
    """Each assignment to st.query_params is a message the browser turns into a history entry: a run's values
    are staged and written once (flush), and a value already in the URL is not written again."""
    from core.dashboard import urls

    class Params(dict):
        updates = 0

        def update(self, other):
            Params.updates += 1
            super().update(other)

    params, state = Params(keep="1"), {}
    monkeypatch.setattr(urls.st, "query_params", params)
    monkeypatch.setattr(urls.st, "session_state", state)
    for key, value, default in (("a", "x", "d"), ("b", "y", "d"), ("keep", "1", "0"), ("c", "d", "d")):
        urls._to_url(key, value, default)
    assert params == {"keep": "1"}  # nothing written yet
    urls.flush()
    assert Params.updates == 1 and params == {"keep": "1", "a": "x", "b": "y"}  # c is its default: left out
    urls._to_url("a", "x", "d")
    urls.flush()
    assert Params.updates == 1  # unchanged: no message at all


def test_recording_notes_the_url_widgets_drawn_inside_it_only(monkeypatch):
    from core.dashboard import urls

    state = {}
    monkeypatch.setattr(urls.st, "session_state", state)
    monkeypatch.setattr(urls, "_from_url", lambda *a: None)
    monkeypatch.setattr(urls, "_to_url", lambda *a: None)
    widget = lambda *args, key, **kw: key  # noqa: E731
    urls.url_widget(widget, "before", "a", 1)
    with urls.recording("keys"):
        urls.url_widget(widget, "inside", "b", 1)
        urls.url_widget(widget, "inside", "c", 1)
    urls.url_widget(widget, "after", "d", 1)
    assert state == {"keys": ("b", "c")}
