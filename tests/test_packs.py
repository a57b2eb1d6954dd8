"""Packed runs (core.results.packs): a store whose run files were moved into a pack reads exactly as it did, every
packed run written out again is its run file byte for byte, and no kill, prune or damaged pack loses a run."""

import shutil

import pandas as pd
import pytest
from tiny import criterion_argv

from core.cli import main
from core.results import index, packs
from core.results import runfile as rf
from core.results import store as st
from core.results.export import runs_table
from core.results.superseded import superseded


def _copy(extension, tmp_path):
    store = tmp_path / "a"
    shutil.copytree(extension[0], store, ignore=shutil.ignore_patterns("index"))
    return store


def _reads(store) -> dict:
    runs = st.load_runs(store)
    return {
        "runs": runs,
        "metrics": st.load_metrics(store),
        "some": st.load_metrics(store, runs.run_id[::3], metrics=["val_acc", "test_loss"]),
        "superseded": superseded(store),
        "provenance": st.provenance_of(store),
        "export": runs_table(store),
        "meta": {rid: st.run_meta(store, rid) for rid in runs.run_id},
    }


def test_a_packed_store_reads_exactly_as_its_run_files_did(extension, tmp_path, capsys):
    store = _copy(extension, tmp_path)
    before, n = _reads(store), len(list((store / "runs").glob("*.parquet")))
    assert main(["pack", "--store", str(store)]) == 0
    assert f"packed {n} run files into packs/" in capsys.readouterr().out and n == 8
    assert not list((store / "runs").glob("*.parquet")) and len(packs.pack_paths(store)) == 1
    after = _reads(store)
    for key in ("runs", "metrics", "some", "export"):
        pd.testing.assert_frame_equal(before[key], after[key])
    assert before["superseded"] == after["superseded"] != [] and before["meta"] == after["meta"]
    assert before["provenance"] == after["provenance"]
    for rid in after["runs"].run_id:
        assert st.has_run(store, rid) and st.stored_whole(store, rid) and st.run_problem(store, rid) is None
    shutil.rmtree(store / "runs")  # a clone of a packed store has no runs/ (git keeps no empty folder)
    assert main(["index", "--store", str(store)]) == 0 and "indexed 8 runs" in capsys.readouterr().out


def test_each_packed_run_written_out_again_is_its_run_file_byte_for_byte(extension, tmp_path):
    store = _copy(extension, tmp_path)
    files = {p.stem: p.read_bytes() for p in (store / "runs").glob("*.parquet")}
    packs.pack(store)
    assert packs.unpack(store, tmp_path / "out", sorted(files)) == len(files)
    assert {rid: rf.run_path(tmp_path / "out", rid).read_bytes() for rid in files} == files


def test_a_kill_between_writing_a_pack_and_deleting_its_files_loses_and_doubles_nothing(extension, tmp_path):
    """The pack is written whole before the loose files go: killed in between, each run reads once (from its loose
    file), and packing again leaves one pack holding each run once."""
    store = _copy(extension, tmp_path)
    before = st.load_runs(store)
    packs.write(store, packs.build(packs.loose_paths(store)))  # the pack, and no file deleted yet
    pd.testing.assert_frame_equal(st.load_runs(store), before)
    assert len(st.load_metrics(store)) == len(st.load_metrics(_copy(extension, tmp_path / "b")))
    assert packs.pack(store)[0] == 8
    assert len(packs.pack_paths(store)) == 1 and sorted(packs.packed(store)) == sorted(before.run_id)
    pd.testing.assert_frame_equal(st.load_runs(store), before)


def test_prune_deletes_packed_runs_a_higher_cap_replaced_and_keeps_the_rest(extension, tmp_path, capsys):
    loose, packed = _copy(extension, tmp_path / "loose"), _copy(extension, tmp_path / "packed")
    packs.pack(packed)
    for store in (loose, packed):
        assert main(["prune", "--store", str(store), "--superseded"]) == 0
        assert "deleted 4 runs a higher cap replaced" in capsys.readouterr().out
    pd.testing.assert_frame_equal(st.load_runs(loose), st.load_runs(packed))
    assert superseded(packed) == [] and len(packs.pack_paths(packed)) == 1  # written again, under a new name


def test_a_sweep_into_a_packed_store_trains_nothing_it_holds(extension, tmp_path, capsys):
    store = _copy(extension, tmp_path)
    packs.pack(store)
    assert main(criterion_argv(store, 150)) == 0
    assert "trained 0 runs (0 diverged), skipped 4 already stored" in capsys.readouterr().out
    assert not list((store / "runs").glob("*.parquet"))  # every member read as stored from the pack


def test_a_damaged_pack_is_skipped_with_a_warning_naming_it_and_no_other_run_is_lost(extension, tmp_path):
    store = _copy(extension, tmp_path)
    first = packs.loose_paths(store)[:3]
    small = packs.write(store, packs.build(first))
    for path in first:
        path.unlink()
    packs.pack(store)  # the other five: a second pack
    assert len(packs.pack_paths(store)) == 2
    small.write_bytes(b"garbled")
    with pytest.warns(UserWarning, match=f"skipping {small}: not a readable attention-lab pack"):
        runs = st.load_runs(store)
    assert len(runs) == 5 and not set(runs.run_id) & {p.stem for p in first}
    assert small.read_bytes() == b"garbled"  # left as it is for its owner to look at


def test_a_pack_is_named_by_its_runs_and_listed_in_the_index_by_its_stat(extension, tmp_path):
    store = _copy(extension, tmp_path)
    paths = packs.loose_paths(store)
    assert packs.name_of(packs.build(paths)) == packs.name_of(packs.build(list(reversed(paths))))
    packs.pack(store)
    (pack,) = packs.pack_paths(store)
    stat = pack.stat()
    assert set(index.listing(store).values()) == {(stat.st_size, stat.st_mtime_ns)}


def test_a_run_two_packs_hold_after_a_kill_mid_rewrite_reads_once_and_is_dropped_from_both(extension, tmp_path):
    store = _copy(extension, tmp_path)
    paths = packs.loose_paths(store)
    packs.write(store, packs.build(paths))
    packs.write(store, packs.build(paths[:2]))  # the rewrite's new file, its old one not yet deleted
    for path in paths:
        path.unlink()
    assert len(packs.pack_paths(store)) == 2 and len(st.load_runs(store)) == 8
    assert packs.drop(store, [paths[0].stem]) == 1
    assert paths[0].stem not in packs.packed(store) and len(st.load_runs(store)) == 7
