"""Every page through streamlit's AppTest: no exception, the widgets, and a trace per parameterization."""

import base64
import re
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import replace

import numpy as np
import pandas as pd
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


def test_attention_maps_and_heatmaps_name_each_parameterization():
    at = open_page("attention_maps", attn="standard,tied_qk")
    assert {t["name"] for t in specs(at)[0]["data"]} == {"standard", "tied_qk"}
    at = open_page("similarity", attn="standard,tied_qk")
    heat = [s for s in specs(at) if s["data"] and s["data"][0]["type"] == "heatmap"][0]
    assert {t["name"] for t in heat["data"]} == {"standard", "tied_qk"}


def test_attention_maps_show_each_heads_previous_token_and_induction_scores():
    at = open_page("attention_maps", tasks="induction", attn="standard,identity")
    tables = [d.value for d in at.dataframe if any(str(c).startswith("L1 H") for c in d.value.columns)]
    assert len(tables) == 2  # previous-token, then induction
    prev, induction = tables
    assert set(prev.index) == {"standard", "identity"} and prev.loc["standard"].filter(like="L0").max() > 0.3
    assert induction.loc["standard"].filter(like="L1").max() > 0.5  # standard's two-layer induction circuit


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


def test_overview_findings_are_computed_at_best_lr_and_table_covers_grid():
    from core.analysis import findings
    from core.results import store as st

    at = open_page("overview")
    text = " ".join(m.value for m in at.markdown)
    for task in ("associative_recall", "induction", "reverse", "sort", "histogram"):  # all to the criterion now
        assert f"on {task} (to the criterion, cap " in text  # its endpoints, not a loss ratio
    assert "test loss ×" not in text
    table = at.dataframe[0].value
    seeds = {t: 5 for t in table.task}  # every task at its longest training: the criterion for two of them
    assert len(table) == 8 * 5 and all(r.seeds == seeds[r.task] for r in table.itertuples())
    runs = findings.at_longest(findings.at_main_size(st.load_runs(ROOT / "data")))  # criterion runs at their cap
    best = findings.best_lr(runs).set_index(["task", "attention"]).lr
    assert all(best[(r.task, r.attention)] == r.lr for r in table.itertuples())
    assert all(re.fullmatch(rf"\d+/{seeds[t]} \[0\.\d\d, [01]\.\d\d\]", k) for t, k in zip(table.task, table.solved))


def test_overview_answers_each_seed_question_in_one_line_with_the_full_answer_on_hover():
    from core.analysis import scaling, words
    from core.results import store as st

    at = open_page("overview")
    answers = [m for m in at.markdown if m.value.startswith(("**000", "**001", "**002", "**004"))]
    assert len(answers) == 4 and all(m.proto.help for m in answers)
    runs = st.load_runs(ROOT / "data")
    # one protocol on the first screen: the line reads a scan only once it is trained to the criterion; until then
    # the tasks' criterion endpoints (endpoints.endpoints), the fixed-budget scan in the full answer behind the ?
    d_head = scaling.outcomes(runs, "d_head")
    if (d_head.until == "solved").all():
        assert words.brief(d_head, "d_head", ["bilinear"]) in answers[1].value
    else:
        from core.analysis import endpoints, findings
        from core.attention import NAMES
        from core.training.task_specs import TASK_NAMES

        ends = endpoints.endpoints(findings.at_main_size(runs), list(NAMES), list(TASK_NAMES))
        assert words.endpoint_glance(ends, "bilinear") in answers[1].value
    for line in words.scan_sentences(d_head, "d_head", ["standard", "bilinear"]):  # the sentences behind the line
        assert line.replace("**", "`", 2) in answers[1].proto.help
    # 002 (the tied variants): its full answer reads every axis scanned, and a second link opens those scans
    for axis in scaling.axes_present(runs):
        assert f"scanned {', '.join(f'{v:g}' for v in sorted(set(scaling.outcomes(runs, axis).x)))})" in (
            answers[2].proto.help
        ), axis
    # 004 names the task it rests on, with the one-layer control, read from the store (endpoints.layer_control)
    assert "On induction (a token's earlier successor recalled at varying offsets" in answers[3].proto.help
    assert "`identity` 0/5 with 2 layers" in answers[3].proto.help and "`standard` 0/5 with 1 layer" in (
        answers[3].proto.help
    )
    links = {link.proto.label: link.proto for link in at.get("page_link")}
    assert "attn=standard%2Ctied_qk%2Ctied_qkv" in links["→ tied variants' scans"].query_string
    assert links["→ tied variants' scans"].page.endswith("scaling")


def test_overview_verdict_matrix_links_each_cell_to_its_evidence_with_the_sidebars_store():
    """The matrix is HTML (drawn before plotly.js loads): every compared cell links to urls.evidence's page and
    params over the sidebar's URL state, hover text in its title; an SVG of it and a CSV of its cells download."""
    from html import unescape
    from urllib.parse import parse_qs, urlsplit

    at = open_page("overview", store="data", precision="fp32", lr="best")  # as a shared link carries them
    body = at.get("html")[0].proto.body
    hrefs = [unescape(h) for h in re.findall(r'href="([^"]*)"', body)]
    titles = re.findall(r'<td title="([^"]*)"', body)
    assert len(hrefs) == len([t for t in titles if t != "not compared"]) >= 7 * 5
    first = urlsplit(hrefs[0])
    q = {k: v[0] for k, v in parse_qs(first.query).items()}
    assert first.path == "loss_curves" and q["attn"] == "standard,stacked" and q["tasks"] == "associative_recall"
    assert q["store"] == "data" and q["lr"].startswith("best") and q["precision"] == "fp32"  # the sidebar's state
    scans = [urlsplit(h) for h in hrefs if h.startswith("scaling?")]
    assert scans and {parse_qs(u.query)["axis"][0] for u in scans} >= {"d_head", "d_model", "n_heads"}
    assert "stacked vs standard on associative_recall" in unescape(titles[0])
    labels = [b.proto.label for b in at.get("download_button")]
    assert labels[:2] == ["Download CSV", "Download SVG"]


def test_overview_draws_its_seeds_strip_only_when_opened_and_a_link_can_open_it():
    at = open_page("overview")
    assert not specs(at)  # nothing for a new visitor's browser to load plotly.js for
    at = open_page("overview", ov_seeds="true")
    (fig,) = specs(at)
    named = [t["name"] for t in fig["data"] if t.get("name") in COLORS]
    assert set(named) == set(COLORS)  # every parameterization's dots ...
    shown = [t["name"] for t in fig["data"] if t.get("name") in COLORS and t.get("showlegend", True)]
    assert sorted(shown) == sorted(COLORS)  # ... named once in the legend


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


def test_parameters_page_formulas_match_measured_counts_and_folds_are_exact():
    at = open_page("parameters")
    table = at.dataframe[0].value
    assert table["match"].all() and len(table) == 8
    folds = at.dataframe[1].value
    assert (folds["max abs error"] < 1e-5).all()


def test_parameters_page_draws_before_its_child_answers_then_fills_in(monkeypatch):
    """The first run draws the page with a note where the child's sections go (it never waits for a torch
    import); once the answer is in, the next run draws them from it."""
    from streamlit.testing.v1 import AppTest

    from core.dashboard import live

    release, ask = threading.Event(), live._ask
    monkeypatch.setattr(live, "_ask", lambda what, **kw: release.wait(60) and ask(what, **kw))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.query_params["fold_seed"] = "4242"  # a question no other test asked: not answered from the memo
    at.run()
    at.switch_page("pages/parameters.py")
    at.run()
    assert not at.exception and [i.value for i in at.info] == [live.PENDING]
    assert len(at.dataframe) == 0 and len(specs(at)) == 1  # the update sizes, drawn meanwhile
    release.set()
    for _ in range(240):
        at.run()
        if not any(i.value == live.PENDING for i in at.info):
            break
        time.sleep(0.5)
    assert not at.exception and at.dataframe[0].value["match"].all() and len(specs(at)) == 4


def test_a_failed_child_shows_its_error_on_the_pages_rerun_and_is_asked_again_only_later(monkeypatch):
    """A child that fails is not re-asked by the rerun its answer triggers (that would loop): the page shows its
    one-line error; the question is asked again once the failure has stood RETRY_AFTER seconds."""
    from core.dashboard import live

    calls = []

    def fail(what, **kw):
        calls.append(what)
        raise RuntimeError(f"{what}: no torch here")

    monkeypatch.setattr(live, "_ask", fail)
    question = (["standard"], {"d_model": 8}, [], {"d_model": 8, "n_heads": 2, "seed": 4343})
    first = live.parameters(*question)
    assert live.answered(first, within=5) and isinstance(first.exception(), RuntimeError)
    assert live.parameters(*question) is first and calls == ["parameters"]
    at = open_page("parameters", fold_seed="4343")  # its own question, failing the same way
    assert not at.exception and any("no torch here" in e.value for e in at.error)
    clock = time.monotonic() + live.RETRY_AFTER + 1
    monkeypatch.setattr(live.time, "monotonic", lambda: clock)
    assert live.parameters(*question) is not first and live.answered(live.parameters(*question), within=5)
    assert len(calls) >= 2


def test_small_multiples_follow_the_sidebars_task_order():
    at = open_page("runtime", tasks="sort,associative_recall,reverse")
    assert at.sidebar.multiselect[0].value == ["sort", "associative_recall", "reverse"]
    fig = specs(at)[0]
    assert [a["text"] for a in fig["layout"]["annotations"]] == ["sort", "associative_recall", "reverse"]


def _training_table(at: AppTest):
    return next(df.value for df in at.dataframe if "engine" in df.value)


def test_runtime_page_shows_the_training_bench_with_its_paired_rounds(stores_root):

    from core.results import store as st

    at = open_page("runtime")
    tr = _training_table(at)
    assert list(tr.engine)[0] == "plain loop" and {"rounds", "speedup_min", "speedup_max"} <= set(tr.columns)
    assert ((tr.speedup_min <= tr.speedup) & (tr.speedup <= tr.speedup_max)).all()
    # each sweep's floor: its FLOPs at the measured peak, less than its wall time exactly as utilisation < 1
    sw = next(df.value for df in at.dataframe if "seconds_at_peak" in df.value)
    assert sw.seconds_at_peak.to_numpy() == pytest.approx((sw.seconds * sw.utilisation).to_numpy(), rel=1e-6)
    fair = sw.utilisation < 1  # a peak measured while the machine was shared comes out low: named on the page
    assert (sw.seconds_at_peak[fair] < sw.seconds[fair]).all()
    assert fair.all() or "ran above the peak measured beside them" in " ".join(c.value for c in at.caption)
    blas = next(df.value for df in at.dataframe if "blas_threads" in df.value)  # its own table, as stored
    assert blas.reset_index(drop=True).equals(st.load_table(ROOT / "data", "bench", "blas")[list(blas.columns)])
    # a store benchmarked before paired rounds (no rounds, no speedup range) still shows its table
    shutil.copytree(ROOT / "data" / "bench", stores_root / "old" / "bench")
    shutil.copytree(ROOT / "data" / "runs", stores_root / "old" / "runs")
    path = stores_root / "old" / "bench" / "training.parquet"
    old = pd.read_parquet(path).drop(columns=["rounds", "speedup_min", "speedup_max"])
    st.write_table(path, old, st.read_meta(path))
    tr = _training_table(open_page("runtime", store="old"))
    assert "rounds" not in tr and len(tr) == len(old)


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


def test_runs_page_sorts_and_filters_from_the_url():
    at = open_page("runs", rsort="test_acc", rdesc="1", rstatus="ok", attn="standard,identity", tasks="sort")
    table = next(df.value for df in at.dataframe if "run_id" in df.value)
    assert list(table.test_acc) == sorted(table.test_acc, reverse=True)
    assert set(table.attention) == {"standard", "identity"} and set(table.task) == {"sort"}
    assert len(table) == 2 * 5 * 4  # two parameterizations x 5 seeds x the 4 lrs of the grid: every run
    assert list(table.columns[:2]) == ["run_id", "test_acc"]  # the sorted column second: on screen at 1280
    one = table.run_id.iloc[0]
    filtered = next(df.value for df in open_page("runs", rid=one[:6]).dataframe if "run_id" in df.value)
    assert list(filtered.run_id) == [one]


def test_a_runs_link_with_ticked_runs_opens_with_their_curves():
    first = open_page("runs", rsort="test_acc", attn="standard", tasks="sort")
    ids = next(df.value for df in first.dataframe if "run_id" in df.value).run_id.iloc[:2].tolist()
    at = open_page("runs", rsort="test_acc", attn="standard", tasks="sort", rsel=",".join(ids))
    (spec,) = specs(at)
    drawn = {t["name"] for t in spec["data"]}
    assert len([n for n in drawn if " seed " in n]) == 2, drawn
    assert at.query_params["rsel"] in ([",".join(ids)], ",".join(ids))


def test_delta_curves_pair_each_seed_with_standards():
    at = open_page("loss_curves", delta="1", attn="standard,tied_qk", tasks="reverse")
    fig = specs(at)[0]
    names = {t.get("name") for t in fig["data"] if t.get("name")}
    assert "tied_qk" in names and "standard" not in names  # standard minus itself is not drawn
    assert fig["layout"]["yaxis"]["title"]["text"].startswith("Δ test_loss")
    assert fig["layout"]["yaxis"].get("type") != "log" and len(fig["layout"]["shapes"]) == 1  # the zero line


def test_the_served_config_turns_off_the_file_watcher_and_usage_statistics():
    """Streamlit reads .streamlit/config.toml from where `streamlit run app.py` starts: no per-session module walk,
    and nothing sent to third parties."""
    options = "c.get_option('server.fileWatcherType'), c.get_option('browser.gatherUsageStats')"
    read = f"from streamlit import config as c; print({options})"
    out = subprocess.run([sys.executable, "-c", read], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["none", "False"]


def test_similarity_matches_each_run_to_its_own_step0_reading_only_the_selected_rows():
    """The page reads analysis/init filtered to its runs and metric (the whole table holds a row per run, layer,
    head and metric of every run in the store): the matched baselines come out as from the whole table."""
    from core.analysis import findings
    from core.dashboard import cached
    from core.results import store as st

    at = open_page("similarity", attn="standard,tied_qk", sim_metric="cos_QK")
    shown = next(df.value for df in at.dataframe if "step0" in df.value)
    assert set(shown.attention) == {"standard", "tied_qk"} and shown.step0.notna().all()
    data = ROOT / "data"
    trained = st.load_table(data, "analysis", "trained")
    runs = st.load_runs(data)
    runs = runs[runs.attention.isin(["standard", "tied_qk"]) & runs.run_id.isin(set(trained.run_id))]
    whole, rand = st.load_table(data, "analysis", "init"), st.load_table(data, "analysis", "random")
    rows = cached.init_rows(str(data), tuple(sorted(runs.run_id)), "cos_QK", cached.fingerprint(data))
    assert 0 < 100 * len(rows) < len(whole)
    expected = findings.matched_baselines(trained, whole, rand, runs, "cos_QK")
    pd.testing.assert_frame_equal(findings.matched_baselines(trained, rows, rand, runs, "cos_QK"), expected)


def test_in_practice_names_each_random_baseline_once_and_keeps_the_models_apart_from_standard():
    at = open_page("in_practice")
    layout = specs(at)[0]["layout"]
    ys = sorted(a["y"] for a in layout.get("annotations", []) if str(a.get("text", "")).startswith("random"))
    assert ys and all(b - a >= 0.01 for a, b in zip(ys, ys[1:]))  # one line per distinct value
    import colorsys

    from core.analysis.pretrained import SOURCES
    from core.dashboard.plots import color

    def hue(c: str) -> float:
        r, g, b = (int(c[i : i + 2], 16) / 255 for i in (1, 3, 5))
        h, _, s = colorsys.rgb_to_hls(r, g, b)
        return h * 360 if s > 0.15 else -1.0  # a grey has no hue: apart from every colour

    for model in SOURCES:  # SmolLM2's line had a dark blue that read as standard's, the line it is compared with
        gap = abs(hue(color(model.name)) - hue(COLORS["standard"]))
        assert hue(color(model.name)) < 0 or min(gap, 360 - gap) > 45, model.name
        assert color(model.name) not in COLORS.values()
