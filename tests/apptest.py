"""What the AppTest suites share: open a page through the router (with the sidebar checked), its charts' specs."""

import re
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from streamlit.testing.v1 import AppTest

from core.dashboard import charts
from core.dashboard.live import PENDING

ROOT = Path(__file__).resolve().parents[1]
PAGES = {
    "overview": 0,  # HTML matrix (test_app checks its links); its seeds strip is drawn when opened
    "scaling": 2,
    "loss_curves": 1,
    "runs": 0,
    "learning_rate": 3,
    "parameters": 3,
    "runtime": 1,
    "similarity": 3,
    "attention_maps": 1,
    "train": 0,
}  # page -> how many charts it shows on the bundled data


def open_page(page: str, **params) -> AppTest:
    """Run the app (router and sidebar), then switch to the page; the sidebar must be there on both."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    if page != "overview":
        at.switch_page(f"pages/{page}.py")
        at.run()
    deadline = time.monotonic() + 120
    while any(i.value == PENDING for i in at.info) and time.monotonic() < deadline:
        time.sleep(0.5)  # a live child still answering (Parameters): the browser's fragment reruns; here, by hand
        at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert [w.label for w in at.sidebar.multiselect] == ["Tasks", "Parameterizations"]
    assert [w.label for w in at.sidebar.selectbox] == [
        "Store",
        "Model size",
        "Training steps",
        "Precision",
        "Learning rate",
    ]
    return at


def array(v):
    """A trace's values as numbers, whether plain or plotly's typed-array encoding (a figure built from a dict)."""
    import base64

    import numpy as np

    return np.frombuffer(base64.b64decode(v["bdata"]), dtype=v["dtype"]) if isinstance(v, dict) else np.asarray(v)


def specs(at: AppTest) -> list[dict]:
    """The figure (data, layout, config) of every chart on the page, in page order."""
    return [charts.spec(el.proto.json) for el in at.get("bidi_component") if el.proto.component_name == charts.NAME]


def page_text(at: AppTest) -> str:
    """The page's text elements joined: what a visitor reads, to search for a message."""
    parts = [e.value for kind in ("markdown", "info", "warning", "error", "caption", "code") for e in at.get(kind)]
    return " ".join(str(p) for p in parts)


def assert_no_missing_values_shown(at) -> None:
    """No 'nan', 'NaN' or 'None' reaches a visitor: not in the text, the HTML, or a table's cells (a missing
    value in a dataframe is drawn as 'None')."""
    html = " ".join(el.proto.body for el in at.get("html"))
    shown = re.findall(r"(?<![\w.-])(?:nan|NaN|None)(?![\w-])", page_text(at) + " " + html)
    assert not shown, shown
    for table in at.dataframe:  # read as Arrow: AppTest's own pandas conversion fails on categorical columns
        arrow = pa.ipc.open_stream(table.proto.arrow_data.data).read_all()
        floats = [c for c in arrow.column_names if pa.types.is_floating(arrow[c].type)]
        missing = [c for c in arrow.column_names if arrow[c].null_count] + [
            c for c in floats if pc.any(pc.is_nan(arrow[c])).as_py()
        ]
        assert not missing, missing
