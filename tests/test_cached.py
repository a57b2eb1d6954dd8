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
    assert cached.fingerprint(tmp_path) == (past, 0, 0, 0, 0) == cached.fingerprint(tmp_path)
    (tmp_path / "packs").mkdir()  # a pack written or rewritten (land, prune) is a new key
    _set_mtime(tmp_path / "packs", past + 1)
    assert cached.fingerprint(tmp_path) == (past, past + 1, 0, 0, 0)


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
    assert cached.fingerprint(tmp_path) == (tick, 0, 0, 0, 0) != mid_burst  # a key no mid-burst read had


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
    import pandas as pd

    from core.analysis import curves
    from core.analysis.baselines import solve_steps
    from core.results import packs
    from core.results import store as st

    data = Path(__file__).resolve().parents[1] / "data"
    runs = st.load_runs(data)
    ids = sorted(runs[runs.task == "associative_recall"].run_id)[:12]  # solved and unsolved among them
    packs.unpack(data, tmp_path, ids)  # loose run files, as a sweep writes them
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


def test_a_selection_key_is_order_free_and_hashable():
    from core.dashboard import selection

    a = selection.key({"tasks": ["sort", "induction"], "attentions": ["standard"], "size": None})
    b = selection.key({"size": None, "attentions": ["standard"], "tasks": ["sort", "induction"]})
    assert a == b and hash(a) == hash(b)
    assert a != selection.key({"tasks": ["induction", "sort"], "attentions": ["standard"], "size": None})  # order
    assert selection.scan_key({"tasks": ["sort"], "attentions": ["standard"], "lr": "all"}) == selection.scan_key(
        {"tasks": ["induction"], "attentions": ["standard"], "lr": "all"}
    )  # the scans ignore the task choice
