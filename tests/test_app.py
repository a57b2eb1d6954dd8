"""Every page through streamlit's AppTest: no exception, the widgets, and a trace per parameterization."""

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core.plots import COLORS

ROOT = Path(__file__).resolve().parents[1]
PAGES = {
    "overview": 0,
    "loss_curves": 1,
    "parameters": 3,
    "runtime": 1,
    "similarity": 3,
    "attention_maps": 1,
    "train": 0,
}  # page -> how many plotly charts it shows on the bundled data


def open_page(page: str, **params) -> AppTest:
    """Run the app (router and sidebar), then switch to the page; the sidebar must be there on both."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    if page != "overview":
        at.switch_page(f"pages/{page}.py")
        at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert [w.label for w in at.sidebar.multiselect] == ["Tasks", "Parameterizations"]
    assert at.sidebar.selectbox[0].label == "Model size"
    return at


def specs(at: AppTest) -> list[dict]:
    return [json.loads(el.proto.spec) for el in at.get("plotly_chart")]


def trace_colour(trace: dict) -> str | None:
    return (trace.get("line") or {}).get("color") or (trace.get("marker") or {}).get("color")


@pytest.mark.parametrize("page", list(PAGES))
def test_page_renders_on_bundled_data(page):
    at = open_page(page)
    assert len(at.get("plotly_chart")) >= PAGES[page]
    if PAGES[page]:
        assert len(at.get("download_button")) >= PAGES[page]


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


def test_attention_maps_and_heatmaps_name_each_parameterization():
    at = open_page("attention_maps", attn="standard,tied_qk")
    assert {t["name"] for t in specs(at)[0]["data"]} == {"standard", "tied_qk"}
    at = open_page("similarity", attn="standard,tied_qk")
    heat = [s for s in specs(at) if s["data"] and s["data"][0]["type"] == "heatmap"][0]
    assert {t["name"] for t in heat["data"]} == {"standard", "tied_qk"}


def test_link_restores_selection_and_page_controls():
    params = dict(tasks="reverse,sort", attn="standard,identity", metric="eval_acc", smooth="0.5")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    assert at.sidebar.multiselect[0].value == ["reverse", "sort"]
    assert at.sidebar.multiselect[1].value == ["standard", "identity"]
    at.switch_page("pages/loss_curves.py").run()
    assert at.selectbox(key="metric").value == "eval_acc" and at.slider(key="smooth").value == 0.5
    fig = specs(at)[0]
    assert [a["text"] for a in fig["layout"]["annotations"]] == ["reverse", "sort"]
    assert {t["name"] for t in fig["data"] if not t["name"].endswith("band")} == {"standard", "identity"}


def test_overview_findings_are_computed_and_table_covers_grid():
    at = open_page("overview")
    text = " ".join(m.value for m in at.markdown)
    assert "reaches the same final eval loss as standard within seed noise on" in text
    table = at.dataframe[0].value
    assert len(table) == 8 * 5 and set(table.seeds) == {3}


def test_parameters_page_formulas_match_measured_counts_and_folds_are_exact():
    at = open_page("parameters")
    table = at.dataframe[0].value
    assert table["match"].all() and len(table) == 8
    folds = at.dataframe[1].value
    assert (folds["max abs error"] < 1e-5).all()


@pytest.mark.parametrize("page", list(PAGES))
def test_empty_store_shows_the_command_not_a_traceback(page, tmp_path):
    at = open_page(page, store=str(tmp_path))
    if page == "train":
        assert at.button or at.get("form")
        return
    want = "python -m core pretrained" if page == "in_practice" else "python -m core sweep"
    assert any(want in i.value for i in at.info), [i.value for i in at.info]


def test_train_page_is_off_when_read_only(monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_READONLY", "1")
    at = open_page("train")
    assert any("Training is off here" in i.value for i in at.info)


def test_small_multiples_follow_the_sidebars_task_order():
    at = open_page("runtime", tasks="sort,associative_recall,reverse")
    assert at.sidebar.multiselect[0].value == ["sort", "associative_recall", "reverse"]
    fig = specs(at)[0]
    assert [a["text"] for a in fig["layout"]["annotations"]] == ["sort", "associative_recall", "reverse"]


def _training_table(at: AppTest):
    return next(df.value for df in at.dataframe if "engine" in df.value)


def test_runtime_page_shows_the_training_bench_with_its_paired_rounds(tmp_path):
    import shutil

    import pandas as pd

    from core import store as st

    tr = _training_table(open_page("runtime"))
    assert list(tr.engine)[0] == "plain loop" and {"rounds", "speedup_min", "speedup_max"} <= set(tr.columns)
    assert ((tr.speedup_min <= tr.speedup) & (tr.speedup <= tr.speedup_max)).all()
    # a store benchmarked before paired rounds (no rounds, no speedup range) still shows its table
    shutil.copytree(ROOT / "data" / "bench", tmp_path / "bench")
    shutil.copytree(ROOT / "data" / "runs", tmp_path / "runs")
    path = tmp_path / "bench" / "training.parquet"
    old = pd.read_parquet(path).drop(columns=["rounds", "speedup_min", "speedup_max"])
    st.write_table(path, old, st.read_meta(path))
    tr = _training_table(open_page("runtime", store=str(tmp_path)))
    assert "rounds" not in tr and len(tr) == len(old)
