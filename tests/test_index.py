"""The runs index (core.results.index) is a cache of the run files: it must read exactly what the files hold, and a
stale, partial or corrupt index must never change what load_runs returns."""

import os
import shutil
import warnings
from pathlib import Path

import pandas as pd
import pytest

from core import cli
from core.experiments import sweep
from core.results import index
from core.results import runfile as rf
from core.results import store as st
from core.training.config import TrainConfig


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """A store made by a sweep: two jobs of four members each, so two segments compacted into one."""
    store = tmp_path_factory.mktemp("swept")
    jobs = sweep.plan(
        ["standard", "mqa"],
        ["reverse"],
        2,
        TrainConfig(steps=10, eval_every=5, batch_size=8),
        {"d_model": 16, "n_heads": 2},
        [1e-3, 3e-3],
    )
    assert sweep.run(store, jobs, "cpu")["trained"] == 8
    return store


@pytest.fixture
def store(swept, tmp_path):
    copy = tmp_path / "store"
    shutil.copytree(swept, copy)  # copytree keeps mtimes, as the index needs
    return copy


def _from_files(store) -> pd.DataFrame:
    bare = store.parent / "bare"
    shutil.copytree(store, bare, ignore=shutil.ignore_patterns("index"))
    return st.load_runs(bare)


def _reads(monkeypatch) -> list:
    seen = []
    real = rf.read_run_meta  # how the index reads a run file
    monkeypatch.setattr(rf, "read_run_meta", lambda path: seen.append(Path(path)) or real(path))
    return seen


def test_a_sweep_leaves_one_compacted_segment_that_reads_what_the_files_hold(store, monkeypatch):
    assert len(list((store / "index").glob("runs-*.parquet"))) == 1
    reads = _reads(monkeypatch)
    runs = st.load_runs(store)
    assert not [p for p in reads if p.parent.name == "runs"]  # every row came from the index
    pd.testing.assert_frame_equal(runs, _from_files(store))
    assert len(runs) == 8


def test_a_run_rewritten_or_deleted_since_indexing_is_read_from_its_file(store, monkeypatch):
    runs = st.load_runs(store)
    changed, gone = runs.run_id[0], runs.run_id[1]
    path = rf.run_path(store, changed)
    meta = rf.read_meta(path)
    rf.write_table(path, pd.read_parquet(path), {**meta, "status": "diverged"})
    os.utime(path, ns=(1, 1))  # a rewrite the index cannot have seen, whatever the clock's resolution
    rf.run_path(store, gone).unlink()
    reads = _reads(monkeypatch)
    now = st.load_runs(store).set_index("run_id")
    assert [p.stem for p in reads if p.parent.name == "runs"] == [changed]  # only the stale row is re-read
    assert now.status[changed] == "diverged" and gone not in now.index and len(now) == 7


def test_a_corrupt_segment_is_skipped_with_a_warning_naming_it(store):
    bad = store / "index" / "runs-0-corrupt.parquet"
    bad.write_bytes(b"not parquet")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        runs = st.load_runs(store)
    assert any(str(bad) in str(w.message) for w in caught)
    pd.testing.assert_frame_equal(runs, _from_files(store))


def test_foreign_files_stay_skipped_with_a_warning_whether_or_not_indexed(store):
    foreign = store / "runs" / "foreign.parquet"
    pd.DataFrame({"x": [1]}).to_parquet(foreign)
    index.compact(store, rebuild=True)
    with pytest.warns(UserWarning, match="foreign.parquet: not a readable attention-lab run"):
        runs = st.load_runs(store)
    assert len(runs) == 8


def test_compact_merges_appended_segments_and_drops_deleted_runs(store):
    ids = sorted(st.load_runs(store).run_id)
    index.append(store, ids[:3])
    index.append(store, ids[3:])
    assert len(list((store / "index").glob("runs-*.parquet"))) == 3
    rf.run_path(store, ids[0]).unlink()
    assert index.compact(store) == 7
    assert len(list((store / "index").glob("runs-*.parquet"))) == 1
    pd.testing.assert_frame_equal(st.load_runs(store), _from_files(store))


def test_the_index_command_rebuilds_a_copy_that_lost_its_mtimes(store, monkeypatch, capsys):
    for p in (store / "runs").iterdir():
        os.utime(p, ns=(2, 2))  # as a git clone or a plain cp leaves a store: every row stale
    assert cli.main(["index", "--store", str(store)]) == 0
    assert capsys.readouterr().out.strip() == f"indexed 8 runs in {store}/index/"
    reads = _reads(monkeypatch)
    st.load_runs(store)
    assert not [p for p in reads if p.parent.name == "runs"]


def test_a_symlink_loop_in_runs_is_skipped_and_named(store):
    loop = store / "runs" / "loop.parquet"
    loop.symlink_to(loop)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        runs = st.load_runs(store)
    assert any("loop.parquet" in str(w.message) for w in caught)
    assert len(runs) == 8


def test_a_segment_without_its_stat_columns_reads_the_files(store):
    index.compact(store, rebuild=True)
    (seg,) = (store / "index").glob("runs-*.parquet")
    rf.write_table(seg, pd.read_parquet(seg).drop(columns=index.STAT), {"kind": "index"})
    pd.testing.assert_frame_equal(st.load_runs(store), _from_files(store))


def test_a_segment_with_a_column_since_dropped_reads_as_the_files_do(store, monkeypatch):
    index.compact(store, rebuild=True)
    (seg,) = (store / "index").glob("runs-*.parquet")
    rf.write_table(seg, pd.read_parquet(seg).assign(seconds_per_step=0.5), {"kind": "index"})  # an older row's
    reads = _reads(monkeypatch)
    runs = st.load_runs(store)
    assert not [p for p in reads if p.parent.name == "runs"]  # still read from the index
    pd.testing.assert_frame_equal(runs, _from_files(store))


@pytest.mark.parametrize("column, value", [("test_acc", "x"), ("val_loss", "0.1"), ("seed", 1.5), ("mlp", "yes")])
def test_a_crafted_segment_whose_stat_matches_is_type_checked_and_skipped(store, capsys, column, value):
    """The index is a cache, yet a row whose file stat matches is trusted: its types are checked as a run file's."""
    (segment,) = (store / "index").glob("runs-*.parquet")
    df = pd.read_parquet(segment)
    df[column] = [value] * len(df)
    rf.write_table(segment, df, {"kind": "index"})
    with pytest.warns(UserWarning, match=f"{segment.name}.*column {column}: must be"):
        runs = st.load_runs(store)
    pd.testing.assert_frame_equal(runs, _from_files(store))
    assert cli.main(["summary", "--store", str(store)]) == 0
    err = capsys.readouterr().err
    assert f"column {column}: must be" in err and "Traceback" not in err


def test_a_cold_read_leaves_an_index_so_the_next_read_opens_no_run_file(store, monkeypatch):
    monkeypatch.setattr(index, "COLD", 1)  # the store holds 8 runs; a real cold read leaves an index from 50
    shutil.rmtree(store / "index")
    first = st.load_runs(store)
    reads = _reads(monkeypatch)
    pd.testing.assert_frame_equal(st.load_runs(store), first)
    assert not reads


def test_a_cold_read_of_a_read_only_store_reads_and_writes_nothing(store, monkeypatch):
    monkeypatch.setattr(index, "COLD", 1)
    shutil.rmtree(store / "index")
    monkeypatch.setattr(rf, "_write", lambda *a: (_ for _ in ()).throw(PermissionError(13, "read-only")))
    assert len(st.load_runs(store)) == 8 and not (store / "index").exists()
