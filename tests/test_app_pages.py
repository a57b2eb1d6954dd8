"""Each page's own behaviour through AppTest: Attention maps, Parameters, Runtime, Runs, Loss curves' deltas,
Similarity and In practice (every page's default view: test_app.py; the Overview: test_overview.py)."""

import shutil
import threading
import time

import pandas as pd
import pytest
from apptest import ROOT, array, open_page, specs
from streamlit.testing.v1 import AppTest

from core.dashboard.plots import COLORS


def trace_colour(trace: dict) -> str | None:
    return (trace.get("line") or {}).get("color") or (trace.get("marker") or {}).get("color")


def _training_table(at: AppTest):
    return next(df.value for df in at.dataframe if "engine" in df.value)


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


def test_parameters_page_formulas_match_measured_counts_and_folds_are_exact():
    at = open_page("parameters")
    table = at.dataframe[0].value
    assert table["match"].all() and len(table) == 8
    folds = at.dataframe[1].value
    assert (folds["max abs error"] < 1e-5).all()


def test_parameters_page_update_sizes_read_the_criterion_runs_of_the_chosen_task():
    at = open_page("parameters", mech_task="sort", mech_lr="0.001", attn="standard,stacked")
    update = [s for s in specs(at) if (s["layout"].get("xaxis") or {}).get("title", {}).get("text") == "step"]
    assert len(update) == 1 and {t["name"] for t in update[0]["data"]} >= {"standard", "stacked"}
    from core.analysis import findings
    from core.results import store

    runs = findings.one_protocol(findings.at_main_size(store.load_runs(ROOT / "data")))
    first_stop = runs[(runs.task == "sort") & (runs.lr == 1e-3)].groupby("attention").stop_step.min()
    for trace in update[0]["data"]:  # each line ends where the first of its runs stopped (it solved)
        assert array(trace["x"]).max() == first_stop[trace["name"]] < 6400
    said = " ".join(m.value for m in at.markdown)
    assert "as far per step" in said and "pairs in all" in said
    assert any("trained to the criterion" in c.value for c in at.caption)


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
    shutil.copytree(ROOT / "data" / "packs", stores_root / "old" / "packs")
    path = stores_root / "old" / "bench" / "training.parquet"
    old = pd.read_parquet(path).drop(columns=["rounds", "speedup_min", "speedup_max"])
    st.write_table(path, old, st.read_meta(path))
    tr = _training_table(open_page("runtime", store="old"))
    assert "rounds" not in tr and len(tr) == len(old)


def test_runtime_page_shows_the_criterion_bench_and_says_which_command_makes_it_when_absent(stores_root):
    from core.results import store as st

    shutil.copytree(ROOT / "data" / "packs", stores_root / "crit" / "packs")
    shutil.copytree(ROOT / "data" / "bench", stores_root / "crit" / "bench")
    (stores_root / "crit" / "bench" / "criterion.parquet").unlink(missing_ok=True)
    at = open_page("runtime", store="crit")
    assert any("`python -m core bench --criterion` makes them" in i.value for i in at.info)
    table = pd.DataFrame(
        {
            "kind": "criterion",
            "protocol": ["fixed", "criterion"],
            "runs": [160, 160],
            "steps": [1600, 6400],
            "member_steps": [256_000, 384_000],
            "seconds": [900.0, 1800.0],
            "stopped_early": [0.0, 0.7],
            "solved": [0, 90],
            "pruned": [0, 40],
            "step_utilisation": [0.5, 0.45],
        }
    ).assign(member_steps_ratio=lambda t: t.member_steps / 256_000, seconds_ratio=lambda t: t.seconds / 900)
    st.write_named(stores_root / "crit", "bench", "criterion", table, {"device": "cpu"})
    at = open_page("runtime", store="crit")
    shown = next(df.value for df in at.dataframe if "member_steps_ratio" in df.value)
    assert list(shown.protocol) == ["fixed", "criterion"] and list(shown.seconds_ratio) == [1.0, 2.0]
    assert not any("--criterion` makes them" in i.value for i in at.info)


def test_runtime_page_shows_a_cancelled_sweeps_record_apart_without_a_utilisation(stores_root):
    """A sweep stopped by Ctrl-C or SIGTERM records its wall time and the FLOPs of the runs it stored only: the
    page lists it apart from the finished sweeps, with its wall time and no utilisation (neither a low number nor a
    blank cell)."""
    from apptest import assert_no_missing_values_shown

    from core.results import store as st

    shutil.copytree(ROOT / "data" / "packs", stores_root / "cut" / "packs")
    names = sorted((ROOT / "data" / "bench").glob("sweep-*.parquet"))
    record = pd.read_parquet(names[-1]).assign(cancelled=True, gflops=float("nan"), utilisation=float("nan"))
    st.write_named(stores_root / "cut", "bench", "sweep-20990101T000000-1", record, {"device": "cpu"})
    shutil.copy(names[0], stores_root / "cut" / "bench" / names[0].name)  # an older record: no cancelled column
    at = open_page("runtime", store="cut")
    assert_no_missing_values_shown(at)
    sw = next(df.value for df in at.dataframe if "seconds_at_peak" in df.value)
    cut = next(df.value for df in at.dataframe if "seconds" in df.value and "utilisation" not in df.value)
    assert len(sw) == 1 and sw.utilisation.iloc[0] > 0  # the older record: not cancelled
    assert len(cut) == 1 and cut.seconds.iloc[0] == record.seconds.iloc[0]
    captions = " ".join(c.value for c in at.caption)
    assert "A `cancelled` sweep" in captions and "1 cancelled sweep(s)" in captions


def test_runs_page_sorts_and_filters_from_the_url():
    at = open_page("runs", rsort="test_acc", rdesc="1", rstatus="ok", attn="standard,identity", tasks="sort")
    table = next(df.value for df in at.dataframe if "run_id" in df.value)
    assert list(table.test_acc) == sorted(table.test_acc, reverse=True)
    assert set(table.attention) == {"standard", "identity"} and set(table.task) == {"sort"}
    lrs = set(table.lr) if "lr" in table else set()
    assert len(table) == 2 * 5 * len(lrs) and len(lrs) >= 4  # two parameterizations x 5 seeds x sort's lrs: every run
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


def test_similarity_matches_each_run_to_its_own_step0_reading_only_the_selected_rows():
    """The page reads analysis/init filtered to its runs and metric (the whole table holds a row per run, layer,
    head and metric of every run in the store): the matched baselines come out as from the whole table."""
    from core.analysis import curves
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
    expected = curves.matched_baselines(trained, whole, rand, runs, "cos_QK")
    pd.testing.assert_frame_equal(curves.matched_baselines(trained, rows, rand, runs, "cos_QK"), expected)


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
