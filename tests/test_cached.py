"""The pages' cached view of a store: its key follows every write, even a burst within one timestamp tick,
and no loader keeps an unbounded number of the states it showed."""

import inspect
import os
from pathlib import Path

import numpy as np

from core.dashboard import cached


def _set_mtime(folder, ns: int) -> None:
    os.utime(folder, ns=(ns, ns))


def test_a_settled_store_keys_on_its_folders_mtimes_alone(tmp_path):
    (tmp_path / "runs").mkdir()
    past = 1_700_000_000 * 10**9
    _set_mtime(tmp_path / "runs", past)
    assert cached.fingerprint(tmp_path) == (past, 0, 0, 0) == cached.fingerprint(tmp_path)


def test_a_burst_of_writes_within_one_tick_still_gets_a_new_key_once_it_settles(tmp_path, monkeypatch):
    runs = tmp_path / "runs"
    runs.mkdir()
    tick = 1_700_000_000 * 10**9
    clock = {"now": tick + 2_000_000}  # 2 ms into the burst: the first run is written, the rest not yet
    monkeypatch.setattr(cached.time, "time_ns", lambda: clock["now"])
    _set_mtime(runs, tick)
    mid_burst = cached.fingerprint(tmp_path)
    (runs / "second.parquet").write_bytes(b"")  # the next member's run, in the same timestamp tick
    _set_mtime(runs, tick)
    assert cached.fingerprint(tmp_path) == mid_burst  # within the second: the read may be reused ...
    clock["now"] = tick + 1_500_000_000  # a second on, no write can still land in that tick:
    assert cached.fingerprint(tmp_path) == (tick, 0, 0, 0) != mid_burst  # a key no mid-burst read had


def _loaders():
    loaders = {name: f for name, f in vars(cached).items() if hasattr(f, "_info")}  # the st.cache_data ones
    return {name: f for name, f in loaders.items() if "fp" in inspect.signature(f).parameters}


def test_every_store_loader_is_bounded():
    names = {
        "runs",
        "metrics",
        "analysed_run",
        "named",
        "table",
        "qk_match",
        "patterns",
        "weights_problems",
        "unreadable",
        "selected",
        "scanned",
        "scan_tables",
        "scan_thresholds",
        "scan_words",
    }
    assert names <= set(_loaders())
    assert all(f._info.max_entries for f in _loaders().values())


def test_the_runs_table_is_reloaded_once_its_entry_is_evicted(monkeypatch):
    calls = []
    monkeypatch.setattr(cached.st_store, "load_runs", lambda store: calls.append(store) or store)
    cached.runs.clear()
    for i in range(cached.MAX_ENTRIES + 1):  # one state more than a loader keeps: the oldest goes
        cached.runs("s", (i,))
    cached.runs("s", (cached.MAX_ENTRIES,))
    assert len(calls) == cached.MAX_ENTRIES + 1  # the newest is still held ...
    cached.runs("s", (0,))
    assert len(calls) == cached.MAX_ENTRIES + 2  # ... the oldest was let go, and is read again
    cached.runs.clear()


def test_weight_analyses_share_runs_across_subsets_and_run_at_most_the_cap_at_once(monkeypatch):
    import threading
    import time

    active, peak, calls = [0], [0], []

    def load(store, rid):
        calls.append(rid)
        active[0] += 1
        peak[0] = max(peak[0], active[0])
        time.sleep(0.05)
        active[0] -= 1
        return [{"W_QK": np.eye(4)[None], "W_OV": np.eye(4)[None]}]

    monkeypatch.setattr(cached.weights, "load_head_weights", load)
    cached.analysed_run.clear()
    threads = [
        threading.Thread(target=cached.analysed, args=("s", tuple(f"r{i}{j}" for j in range(3)), (0,)))
        for i in range(6)
    ]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert peak[0] <= cached.HEAVY._initial_value == 2
    cached.analysed("s", ("r00", "r11", "r22"), (0,))  # a new subset of runs already analysed: nothing loads
    assert len(calls) == 18
    cached.analysed_run.clear()


def test_stored_analyses_stand_in_for_the_weights_and_a_run_missing_there_is_analysed_live(tmp_path, monkeypatch):
    """A store whose analysis/trained*.parquet cover some runs: those are read, never loaded; the rest are
    analysed from their weights; the result is what analysing every run live gives."""
    import shutil
    from pathlib import Path

    import pandas as pd

    from core.analysis.baselines import trained_analyses
    from core.results import store as st
    from core.results import weights

    data = Path(__file__).resolve().parents[1] / "data"
    ids = sorted(p.stem for p in (data / "weights").glob("*.safetensors"))[:4]
    (tmp_path / "weights").mkdir()
    for rid in ids:
        shutil.copy(data / "weights" / f"{rid}.safetensors", tmp_path / "weights")
    for name, table in zip(("trained", "trained_spectra"), trained_analyses(tmp_path, ids[:2])):
        st.write_named(tmp_path, "analysis", name, table)
    live = trained_analyses(tmp_path, ids)
    loaded, real = [], weights.load_head_weights
    monkeypatch.setattr(cached.weights, "load_head_weights", lambda s, rid: loaded.append(rid) or real(s, rid))
    cached.analysed_run.clear()
    got = cached.analysed(str(tmp_path), tuple(ids), cached.fingerprint(tmp_path))
    assert sorted(loaded) == ids[2:]
    for mine, want in zip(got, live):
        keys = [c for c in mine.columns if c != "value"]
        mine, want = (df.astype({"run_id": str}).sort_values(keys).reset_index(drop=True) for df in (mine, want))
        pd.testing.assert_frame_equal(
            mine.astype({c: str for c in ("metric", "matrix") if c in mine}),
            want.astype({c: str for c in ("metric", "matrix") if c in want}),
            check_dtype=False,
        )
    cached.analysed_run.clear()


def test_stored_solve_steps_stand_in_for_the_curves_and_a_run_missing_there_is_read_from_its_curve(
    tmp_path, monkeypatch
):
    """Runs in analysis/solve_steps.parquet are read from it (their curves never loaded), the rest from their
    validation curve; the result is curves.time_to_solve of every curve."""
    import shutil
    from pathlib import Path

    import pandas as pd

    from core.analysis import curves
    from core.analysis.baselines import solve_steps
    from core.results import store as st

    data = Path(__file__).resolve().parents[1] / "data"
    runs = st.load_runs(data)
    ids = sorted(runs[runs.task == "associative_recall"].run_id)[:12]  # solved and unsolved among them
    (tmp_path / "runs").mkdir()
    for rid in ids:
        shutil.copy(st.run_path(data, rid), st.run_path(tmp_path, rid))
    st.write_named(tmp_path, "analysis", "solve_steps", solve_steps(tmp_path, ids[:8]))
    loaded, real = [], st.load_metrics
    monkeypatch.setattr(cached.st_store, "load_metrics", lambda s, r, m: loaded.extend(r) or real(s, r, m))
    cached.solve_steps.clear()
    cached.metrics.clear()
    got = cached.solve_steps(str(tmp_path), tuple(ids), cached.fingerprint(tmp_path))
    assert sorted(loaded) == ids[8:]
    want = curves.time_to_solve(st.load_metrics(tmp_path, ids, ["val_acc"])).astype(float)
    assert 0 < len(want) < len(ids)
    pd.testing.assert_series_equal(got.sort_index(), want.sort_index(), check_names=False)
    cached.solve_steps.clear()


def test_statistics_are_computed_once_per_store_state_and_selection(monkeypatch):
    from core.dashboard import selection
    from core.results.stores import BUNDLED

    calls = []
    monkeypatch.setattr(cached.findings, "compare_to", lambda runs, best: calls.append(len(runs)) or runs.head(0))
    cached.comparisons.clear()
    store, fp = str(BUNDLED), cached.fingerprint(BUNDLED)
    sel = {
        "store": store,
        "tasks": ["sort"],
        "attentions": ["standard", "mqa"],
        "size": None,
        "steps": selection.LONGEST,
        "precision": "fp32",
        "lr": selection.BEST,
    }
    cached.comparisons(store, fp, selection.key(sel), True)
    cached.comparisons(store, fp, selection.key(dict(sel)), True)  # another session, the same view: read
    cached.comparisons(store, fp, selection.key({**sel, "attentions": ["standard"]}), True)  # other runs: computed
    cached.comparisons(store, fp, selection.key(sel), False)
    family = {
        **sel,
        "tasks": list(cached.runs(store, fp).task.unique()),
        "attentions": list(cached.runs(store, fp).attention.unique()),
    }
    chosen = cached.selected(store, fp, selection.key(family), False, None)
    want = int((chosen.until != "solved").sum())  # the fixed-budget runs: criterion cells have their endpoints
    assert calls == [want, want, want] and want > 0  # the whole family each time, whatever the sidebar picks
    assert cached.comparisons._info.max_entries
    cached.comparisons.clear()


def test_a_selection_key_is_order_free_and_hashable():
    from core.dashboard import selection

    a = selection.key({"tasks": ["sort", "induction"], "attentions": ["standard"], "size": None})
    b = selection.key({"size": None, "attentions": ["standard"], "tasks": ["sort", "induction"]})
    assert a == b and hash(a) == hash(b)
    assert a != selection.key({"tasks": ["induction", "sort"], "attentions": ["standard"], "size": None})  # order
    assert selection.scan_key({"tasks": ["sort"], "attentions": ["standard"], "lr": "all"}) == selection.scan_key(
        {"tasks": ["induction"], "attentions": ["standard"], "lr": "all"}
    )  # the scans ignore the task choice


def test_the_keyed_loaders_give_what_the_functions_give_on_the_bundled_store():
    """Cross-check: the cached views keyed by (store, fingerprint, selection) against the plain functions."""
    import pandas as pd

    from core.analysis import axes, curves, findings, scaling, words
    from core.dashboard import selection
    from core.results import store as st_store
    from core.results.stores import BUNDLED

    store, fp = str(BUNDLED), cached.fingerprint(BUNDLED)
    runs = st_store.load_runs(store)
    sel = {
        "store": store,
        "tasks": ["associative_recall", "sort"],
        "attentions": ["standard", "tied_qk", "mqa"],
        "size": None,
        "steps": selection.LONGEST,
        "precision": "fp32",
        "lr": selection.BEST,
    }
    got = cached.selected(store, fp, selection.key(sel), False, None)
    assert set(got.task) == {"associative_recall", "sort"} and set(got.attention) == {"standard", "tied_qk", "mqa"}
    assert (got.groupby(["task", "attention", "n_heads", "d_model", "d_head", "length"]).lr.nunique() == 1).all()
    assert list(dict.fromkeys(got.task)) == ["associative_recall", "sort"]  # the sidebar's task order
    cmp = cached.comparisons(store, fp, selection.key(sel), True)
    family = {**sel, "tasks": list(runs.task.unique()), "attentions": list(runs.attention.unique())}
    chosen = selection.selected(runs, family, False, None)
    whole = findings.compare_to(chosen[chosen.until != "solved"], best=True)
    mine = whole[whole.task.isin(sel["tasks"]) & whole.attention.isin(sel["attentions"])].reset_index(drop=True)
    pd.testing.assert_frame_equal(cmp, mine)
    assert set(cmp.attention) == {"tied_qk", "mqa"}
    every = cached.selected(store, fp, selection.key(sel), False, selection.ALL)
    assert every.lr.nunique() > 1 and set(got.run_id) < set(every.run_id)

    tables = cached.scan_tables(store, fp, selection.scan_key(sel))
    scanned = selection.scanned(runs, sel)
    assert list(tables) == axes.axes_present(scanned) and "d_head" in tables
    pd_eq = [tables[a].equals(scaling.outcomes(scanned, a)) for a in tables]
    assert all(pd_eq), pd_eq
    said = cached.scan_words(store, fp, selection.scan_key(sel), ("tied_qk",))
    for a, (sentences, brief) in said.items():
        assert sentences == words.scan_sentences(tables[a], a, ["standard", "tied_qk"])
        assert brief == words.brief(tables[a], a, ["tied_qk"])
    assert any(said[a][0] for a in said), "tied_qk differs from standard on some axis"
    th = cached.scan_thresholds(store, fp, selection.scan_key(sel), ("standard", "tied_qk", "mqa"))
    assert all(t.equals(scaling.thresholds(tables[a], ["standard", "tied_qk", "mqa"])) for a, t in th.items())

    with_weights = got[got.run_id.map(lambda r: st_store.weights_path(store, r).exists())]
    ids = tuple(with_weights[with_weights.task == "sort"].run_id)
    assert ids
    analysed = cached.analysed(store, tuple(sorted(ids)), fp)[0]
    for metric in ("sym_QK", "overlap_QK"):
        init = cached.init_rows(store, tuple(sorted(ids)), metric, fp)
        direct = curves.matched_baselines(
            analysed,
            init,
            cached.table(store, "analysis", "random", fp),
            with_weights[with_weights.task == "sort"],
            metric,
        )
        pd.testing.assert_frame_equal(cached.matched_baselines(store, ids, metric, fp), direct)


def test_the_family_of_comparisons_does_not_change_with_the_sidebar():
    """Selecting only associative recall and three parameterizations must not make them 'worse' by shrinking
    the Holm family: each shown row is the same row as with everything selected."""
    from core.dashboard import selection
    from core.results.stores import BUNDLED

    store, fp = str(BUNDLED), cached.fingerprint(BUNDLED)
    runs = cached.runs(store, fp)
    every = {
        "store": store,
        "tasks": list(runs.task.unique()),
        "attentions": list(runs.attention.unique()),
        "size": None,
        "steps": selection.LONGEST,
        "precision": "fp32",
        "lr": selection.BEST,
    }
    few = {**every, "tasks": ["associative_recall"], "attentions": ["standard", "stacked", "mqa", "gqa"]}
    whole = cached.comparisons(store, fp, selection.key(every), True).set_index(["attention", "task"])
    part = cached.comparisons(store, fp, selection.key(few), True).set_index(["attention", "task"])
    assert len(part) and len(whole) > len(part)
    for col in ("p_holm", "tost_holm", "verdict"):
        assert part[col].equals(whole.loc[part.index, col]), col
    # and the criterion cells' endpoints: Holm over the store's whole table, whatever the sidebar shows
    whole = cached.endpoint_table(store, fp, selection.key(every)).set_index(["attention", "task"])
    part = cached.endpoint_table(store, fp, selection.key(few)).set_index(["attention", "task"])
    assert len(part) == 4 and len(whole) > 4 * len(part)  # standard's row and three compared
    for col in ("fisher_holm", "logrank_holm"):
        assert part[col].equals(whole.loc[part.index, col]), col


def test_a_store_view_reads_through_the_cache_in_any_run_id_order_and_hides_server_paths():
    """core.dashboard.view.StoreView: one state of one store; the same runs asked in another order are one cache
    entry, and no provenance command shows an absolute path of the machine that made the runs."""
    from core.dashboard.view import StoreView

    data = Path(__file__).resolve().parents[1] / "data"
    v = StoreView.of(data)
    ids = list(v.runs().run_id[:4])
    first = v.metrics(ids, ["val_loss"])
    assert first.equals(v.metrics(ids[::-1], ["val_loss"]))
    assert set(first.run_id) == set(ids) and set(first.metric) == {"val_loss"}
    raw = [p["command"] for p in cached.provenance(v.store, v.fp)]
    assert any(" /" in c for c in raw)  # scratch-store sweeps recorded their absolute --store
    assert not any(" /" in p["command"] for p in v.provenance()) and len(v.provenance()) == len(raw)
