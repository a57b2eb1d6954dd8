"""Every page through streamlit's AppTest: no exception, the widgets, and a trace per parameterization."""

import base64
import re
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest
from apptest import PAGES, ROOT, assert_no_missing_values_shown, open_page, specs
from streamlit.testing.v1 import AppTest

from core.dashboard import charts, ui
from core.dashboard.plots import COLORS
from core.experiments import sweep
from core.training.config import TrainConfig


def trace_colour(trace: dict) -> str | None:
    return (trace.get("line") or {}).get("color") or (trace.get("marker") or {}).get("color")


@pytest.mark.parametrize("page", list(PAGES))
def test_page_renders_on_bundled_data(page):
    """Each page's default view draws its charts with a CSV each, and opens with no warning."""
    at = open_page(page)
    assert not at.warning, [w.value for w in at.warning]
    charts = specs(at)
    assert len(charts) >= PAGES[page]
    for spec in charts:  # each chart's camera button saves a 2x PNG named for it, for slides
        image = spec["config"]["toImageButtonOptions"]
        assert image["format"] == "png" and image["scale"] == 2 and image["filename"]
        assert spec["config"]["showSendToCloud"] is False  # no third-party upload from a shared deployment
        axes = [v for k, v in spec["layout"].items() if k.startswith(("xaxis", "yaxis"))]
        assert axes and all(a["exponentformat"] == "e" for a in axes)  # plain numbers, tidied as built
        assert all(a.get("dtick") in (1, "D2") for a in axes if a.get("type") == "log" and "tickvals" not in a)
    if PAGES[page]:
        assert len(at.get("download_button")) >= PAGES[page]
    assert_no_missing_values_shown(at)


@pytest.mark.parametrize("page", ["loss_curves", "runtime", "similarity"])
def test_a_trace_per_selected_parameterization_in_its_colour(page):
    chosen = ["standard", "stacked", "tied_qk"]
    at = open_page(page, attn=",".join(chosen))
    main = specs(at)[0]["data"]
    named = {t["name"] for t in main}
    assert set(chosen) <= named and not ({"bilinear", "identity", "mqa"} & named)
    for t in main:
        if t.get("name") in COLORS and trace_colour(t) and "band" not in t["name"]:
            assert trace_colour(t) == COLORS[t["name"]], t["name"]


def test_link_restores_selection_and_page_controls():
    params = dict(tasks="reverse,sort", attn="standard,identity", metric="test_acc", smooth="0.5", lr="0.001")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    assert at.sidebar.multiselect[0].value == ["reverse", "sort"]
    assert at.sidebar.multiselect[1].value == ["standard", "identity"]
    assert at.sidebar.selectbox(key="lr").value == "0.001"
    at.switch_page("pages/loss_curves.py").run()
    assert at.selectbox(key="metric").value == "test_acc" and at.slider(key="smooth").value == 0.5
    assert at.query_params["lr"] == "0.001"  # the choice is written back: a pasted link keeps it
    fig = specs(at)[0]
    texts = [a["text"] for a in fig["layout"]["annotations"]]
    assert texts[:2] == ["reverse", "sort"] and texts[2:] == ["in_context", "in_context"]  # chance on accuracy
    assert {t["name"] for t in fig["data"] if not t["name"].endswith("band")} == {"standard", "identity"}


def test_pages_without_charts_warm_plotly_js_and_chart_pages_do_not():
    """The Overview and Runs (nothing ticked) load the charts' plotly.js once the browser is idle, so the chart
    page a visitor opens next finds it ready; a chart page loads it with its first chart and gets no warm-up."""

    def warms(at) -> bool:
        mounted = at.get("bidi_component")
        return any("requestIdleCallback" in c.proto.js_content and charts.BUNDLE in c.proto.js_content for c in mounted)

    assert warms(open_page("overview")) and warms(open_page("runs"))
    assert not warms(open_page("similarity")) and not warms(open_page("loss_curves"))


def test_charts_use_the_bundled_plotly_js_of_plotly_pys_version_and_only_trace_types_it_draws():
    """Every chart is drawn by static/'s cartesian plotly.js: the version the pinned plotly.py builds figures for,
    and it registers every trace type the pages draw (a type it lacks would leave an empty chart)."""
    import plotly.offline

    bundle = charts.PATH.read_text()
    assert f"v{plotly.offline.get_plotlyjs_version()}\n" in bundle[:200]
    drawn = set(re.findall(r'moduleType:"trace",name:"(\w+)"', bundle))
    used = {t.get("type", "scatter") for page in PAGES for spec in specs(open_page(page)) for t in spec["data"]}
    used |= {t.get("type", "scatter") for t in specs(open_page("overview", ov_seeds="true"))[0]["data"]}
    assert used and used <= drawn, used - drawn
    assert (ROOT / ".streamlit" / "config.toml").read_text().count("enableStaticServing = true") == 1


def test_small_multiples_follow_the_sidebars_task_order():
    at = open_page("runtime", tasks="sort,associative_recall,reverse")
    assert at.sidebar.multiselect[0].value == ["sort", "associative_recall", "reverse"]
    fig = specs(at)[0]
    assert [a["text"] for a in fig["layout"]["annotations"]] == ["sort", "associative_recall", "reverse"]


def _training_table(at: AppTest):
    return next(df.value for df in at.dataframe if "engine" in df.value)


def test_the_steps_choice_reads_each_task_at_its_longest_training_unless_one_length_is_picked(stores_root):
    tiny, train = {"d_model": 16, "n_heads": 2}, TrainConfig(steps=10, eval_every=5, batch_size=8)
    store = stores_root / "lengths"
    for task, steps in (("reverse", 10), ("reverse", 20), ("sort", 10)):  # reverse retrained twice as long
        sweep.run(store, sweep.plan(["standard"], [task], 1, replace(train, steps=steps), tiny), "cpu")

    def last_steps(at) -> dict:
        fig = specs(at)[0]
        names = [a["text"] for a in fig["layout"]["annotations"]][:2]  # the small multiples' titles, in order
        xs = [t["x"] for t in fig["data"] if t["name"] == "standard"]  # plotly's typed arrays: dtype + base64
        return {name: int(np.frombuffer(base64.b64decode(x["bdata"]), x["dtype"]).max()) for name, x in zip(names, xs)}

    at = open_page("loss_curves", store="lengths")
    assert at.sidebar.selectbox(key="steps").value == ui.LONGEST
    assert last_steps(at) == {"reverse": 20, "sort": 10}
    at = open_page("loss_curves", store="lengths", steps="10")
    assert at.sidebar.selectbox(key="steps").value == "10" and at.query_params["steps"] == "10"
    assert last_steps(at) == {"reverse": 10, "sort": 10}


def test_no_page_imports_torch():
    """Every page, opened in a fresh interpreter through the router, leaves torch unloaded (~180 MB and 1.5 s of
    a first draw): the registries' names, formulas and chance levels reach them torch-free, and the pages that
    need torch (Parameters' live counts, Train's sweep) run it in a child process (tests/test_jobs.py). The
    server's numpy runs its BLAS on one thread (core/analysis/blas.py)."""
    pages = [*PAGES, "in_practice", "train"]
    code = f"""
import sys
from streamlit.testing.v1 import AppTest
at = AppTest.from_file({str(ROOT / "app.py")!r}, default_timeout=180)
at.run()
for page in {pages!r}:
    if page != "overview":
        at.switch_page(f"pages/{{page}}.py")
        at.run()
    assert not at.exception, (page, [e.value for e in at.exception])
    assert "torch" not in sys.modules, page
print("torch-free:", len({pages!r}))
from core.analysis.blas import blas_threads
print("blas threads:", blas_threads())
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"torch-free: {len(pages)}" in done.stdout and "blas threads: 1\n" in done.stdout


def test_the_served_config_turns_off_the_file_watcher_and_usage_statistics():
    """Streamlit reads .streamlit/config.toml from where `streamlit run app.py` starts: no per-session module walk,
    and nothing sent to third parties."""
    options = "c.get_option('server.fileWatcherType'), c.get_option('browser.gatherUsageStats')"
    read = f"from streamlit import config as c; print({options})"
    out = subprocess.run([sys.executable, "-c", read], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["none", "False"]
