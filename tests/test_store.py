"""The store round-trips runs without torch or pickle and survives foreign or broken files."""

import os
import subprocess
import sys
from importlib import metadata

import numpy as np
import pandas as pd
import pytest
import torch
from tiny import tiny_run

from core.experiments.run_job import record
from core.results import claims, provenance, weights
from core.results import store as st
from core.training.config import TrainConfig
from core.training.tasks import make_task

ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def trained():
    return tiny_run()


def write(store, job, result):
    rid = job.run_ids()[(job.train.lr, 0)]
    metrics = pd.DataFrame(result.metrics, columns=["step", "metric", "value"])
    st.write_run(
        store, record(job, result, rid, "pytest"), metrics, result.head_weights, result.patterns, result.examples
    )
    return rid


def test_round_trip(tmp_path, trained):
    job, result = trained
    rid = write(tmp_path, job, result)
    runs = st.load_runs(tmp_path)
    assert len(runs) == 1 and set(st.RUN_COLUMNS) <= set(runs.columns)
    row = runs.iloc[0]
    assert (row.run_id, row.attention, row.task, row.seed, row.status) == (rid, "stacked", "sort", 0, "ok")
    assert row.params_total == sum(
        row[c] for c in runs.columns if c.startswith("params_") and c not in ("params_total",)
    )
    assert row.test_acc == row.eval_acc == pytest.approx(result.final["test_acc"])
    assert row.val_loss == pytest.approx(result.final["val_loss"]) and row.n_ensemble == 1
    metrics = st.load_metrics(tmp_path)
    assert set(metrics.metric) >= {"train_loss", "val_loss", "val_acc", "test_loss", "test_acc", "wall_time"}
    assert (metrics.run_id == rid).all()
    layers = weights.load_head_weights(tmp_path, rid)
    for got, want in zip(layers, result.head_weights):
        for k in ("W_QK", "W_OV", "W_Q", "W_O"):
            np.testing.assert_allclose(got[k], want[k].numpy(), atol=3e-3, rtol=2e-2)
    patterns, examples = weights.load_patterns(tmp_path, rid)
    assert patterns.shape == tuple(result.patterns.shape) and np.array_equal(examples, result.examples.numpy())
    prov = st.provenance_of(tmp_path)[0]
    assert prov["command"] == "pytest" and prov["versions"]["torch"] == metadata.version("torch")
    assert prov["date"].startswith("20") and prov["versions"]["numpy"] == np.__version__
    assert not list(tmp_path.rglob("*.tmp"))


def test_run_files_fit_one_disk_block_and_index_slim_rewrites_old_ones_so(tmp_path, trained):
    """A run file is written in one 4 KiB block with only our metadata. One in an older layout (Arrow's schema
    copy and pandas' entry beside ours, two blocks): `index --slim` rewrites it in today's, and its runs, metrics
    and metadata read back exactly as before; a second pass has nothing to do."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rid = write(tmp_path, *trained)
    path = st.run_path(tmp_path, rid)
    assert set(pq.ParquetFile(path).metadata.metadata) == {st.META_KEY} and path.stat().st_size <= 4096
    fresh = (st.load_metrics(tmp_path), st.read_meta(path))
    table = pq.read_table(path)  # the old layout: pandas' entry beside ours, and Arrow's schema stored
    old = pa.Table.from_pandas(table.to_pandas(), preserve_index=False).schema.metadata
    pq.write_table(table.replace_schema_metadata({**old, **table.schema.metadata}), path, compression="zstd")
    assert path.stat().st_size > 4096
    before = (st.load_runs(tmp_path), st.load_metrics(tmp_path), st.read_meta(path))
    pd.testing.assert_frame_equal(before[1], fresh[0])
    assert before[2] == fresh[1]
    broken = st.run_path(tmp_path, "0" * 16)
    broken.write_bytes(b"half a file")  # unreadable: left exactly as it is
    command = [sys.executable, "-m", "core", "index", "--store", str(tmp_path), "--slim"]
    index = lambda: subprocess.run(command, cwd=ROOT, capture_output=True, text=True)  # noqa: E731
    done = index()
    assert done.returncode == 0 and "slimmed 1 of 2 table files" in done.stdout, done.stderr
    assert broken.read_bytes() == b"half a file"
    broken.unlink()
    assert set(pq.ParquetFile(path).metadata.metadata) == {st.META_KEY} and path.stat().st_size <= 4096
    pd.testing.assert_frame_equal(st.load_runs(tmp_path), before[0])
    pd.testing.assert_frame_equal(st.load_metrics(tmp_path), before[1])
    assert st.read_meta(path) == before[2]
    assert "slimmed 0 of 1 table files" in index().stdout


def test_foreign_and_broken_files_are_skipped_with_a_warning(tmp_path, trained):
    job, result = trained
    write(tmp_path, job, result)
    (tmp_path / "runs" / "garbage.parquet").write_bytes(b"not parquet")
    pd.DataFrame({"a": [1]}).to_parquet(tmp_path / "runs" / "foreign.parquet")
    (tmp_path / "runs" / ".half-written.parquet.123.tmp").write_bytes(b"partial")
    with pytest.warns(UserWarning, match="garbage.parquet") as record:
        runs = st.load_runs(tmp_path)
    assert any("foreign.parquet" in str(w.message) for w in record)
    assert len(runs) == 1
    with pytest.warns(UserWarning):
        assert st.load_metrics(tmp_path).run_id.nunique() == 1


def test_empty_or_missing_store_loads_empty(tmp_path):
    assert st.load_runs(tmp_path / "nope").empty and list(st.load_runs(tmp_path).columns) == st.RUN_COLUMNS
    assert st.load_metrics(tmp_path).empty and st.load_named(tmp_path, "bench").empty


def test_provenance_is_dirty_for_code_changes_not_for_regenerated_data(tmp_path):
    git = lambda *a: subprocess.run(["git", *a], cwd=tmp_path, check=True, capture_output=True)  # noqa: E731
    git("init", "-q")
    for f in ("core/training/train.py", "data/runs/a.parquet", "README.md"):
        (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f).write_text("v1")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    head = provenance._git_commit(tmp_path)
    assert head and not head.endswith("+dirty")
    (tmp_path / "data" / "runs" / "a.parquet").unlink()  # a sweep regenerating the bundled store
    (tmp_path / "README.md").write_text("v2")
    assert provenance._git_commit(tmp_path) == head
    (tmp_path / "core" / "train.py").write_text("v2")  # the code that makes results
    assert provenance._git_commit(tmp_path) == head + "+dirty"


def test_a_killed_writers_temporary_files_are_removed_and_a_live_writers_kept(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (tmp_path / "runs").mkdir()
    stale = tmp_path / "runs" / f".abc.parquet.{dead.pid}.tmp"
    live = tmp_path / "runs" / f".def.parquet.{os.getpid()}.tmp"
    foreign = tmp_path / "runs" / ".notes.tmp"  # not one of ours: no pid in its name
    (tmp_path / "scratch" / "checkpoints").mkdir(parents=True)  # a kill mid-checkpoint leaves one there too
    saving = tmp_path / "scratch" / "checkpoints" / f".0123.pt.{dead.pid}.tmp"
    for path in (stale, live, foreign, saving):
        path.write_bytes(b"some bytes")
    assert st.remove_stale_tmp(tmp_path) == 2
    assert not stale.exists() and not saving.exists() and live.exists() and foreign.exists()


def test_a_claim_belongs_to_one_live_process_and_a_dead_ones_is_taken_over(tmp_path):
    assert claims.claim(tmp_path, "r1") and claims.claim(tmp_path, "r1")  # ours, twice
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        claims.claim_path(tmp_path, "r2").write_text(str(other.pid))
        assert not claims.claim(tmp_path, "r2")  # a live process holds it
        claims.release(tmp_path, "r2")
        assert claims.claim_path(tmp_path, "r2").exists()  # release frees only our own
    finally:
        other.kill()
        other.wait()
    assert claims.claim(tmp_path, "r2")  # its holder died: taken over
    claims.release(tmp_path, "r1")
    assert not claims.claim_path(tmp_path, "r1").exists()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    claims.claim_path(tmp_path, "r3").write_text(str(dead.pid))
    assert st.remove_stale_tmp(tmp_path) == 1 and not claims.claim_path(tmp_path, "r3").exists()


def test_a_claim_being_taken_is_never_dropped_as_stale_by_a_sweep_starting(tmp_path):
    """A claim is written whole and linked into place under the claims lock; a sweep starting meanwhile judges
    stale claims under that lock too, so it waits, then finds the claim held, not an empty (nobody's) file."""
    import threading

    path = claims.claim_path(tmp_path, "r1")
    path.parent.mkdir(parents=True)
    dropped = []
    with claims._locked(path.parent):
        path.write_text("")  # as a claim looked between its creation and its write, before the fix
        starting = threading.Thread(target=lambda: dropped.append(st.remove_stale_tmp(tmp_path)))
        starting.start()
        starting.join(0.5)
        assert starting.is_alive()  # waits for the claims lock
        path.write_text(claims._me())
    starting.join(10)
    assert dropped == [0] and claims.held(path)
    assert claims.claim(tmp_path, "r2") and claims.claim_path(tmp_path, "r2").read_text() == claims._me()
    assert not list(path.parent.glob(".*.tmp"))  # the claim's temp file is gone


def test_old_stores_read_with_test_metrics_as_their_eval_ones(tmp_path, trained):
    job, result = trained
    rid = write(tmp_path, job, result)
    path = st.run_path(tmp_path, rid)
    meta = st.read_meta(path)
    meta["final"] = {"eval_loss": 1.5, "eval_acc": 0.5, "train_loss": 1.4}  # a store made before the split
    old = pd.read_parquet(path).replace({"metric": {"test_loss": "eval_loss", "test_acc": "eval_acc"}})
    st.write_table(path, old, meta)
    row = st.load_runs(tmp_path).iloc[0]
    assert (row.test_loss, row.test_acc, row.eval_acc) == (1.5, 0.5, 0.5) and pd.isna(row.val_loss)
    assert {"test_loss", "test_acc"} <= set(st.load_metrics(tmp_path).metric)


@pytest.mark.parametrize(
    "device, command, read",
    [
        ("cpu", "pytest", "cpu"),
        (None, "python -m core sweep --device cuda --workers 4", "cuda"),
        (None, "pytest", None),
    ],
)
def test_a_run_reads_where_it_trained_and_an_older_one_the_device_its_command_named(
    tmp_path, trained, device, command, read
):
    job, result = trained
    path = st.run_path(tmp_path, write(tmp_path, job, result))
    meta = st.read_meta(path)
    assert meta["device"] == "cpu"  # recorded as it trained
    meta = {k: v for k, v in meta.items() if k != "device"} | ({"device": device} if device else {})
    meta["provenance"]["command"] = command  # a run stored before its record held a device has no key
    st.write_table(path, pd.read_parquet(path), meta)
    row = st.load_runs(tmp_path).iloc[0]
    assert row.device == read if read else pd.isna(row.device)


def test_weights_problem_and_drop_weights(tmp_path, trained):
    job, result = trained
    rid = write(tmp_path, job, result)
    assert weights.weights_problem(tmp_path, rid) is None
    st.weights_path(tmp_path, rid).write_bytes(b"truncated")
    assert weights.weights_problem(tmp_path, rid) not in (None, "missing")
    assert weights.drop_weights(tmp_path, [rid, "absent"]) == 1 and weights.weights_problem(tmp_path, rid) == "missing"
    assert len(st.load_runs(tmp_path)) == 1  # the metrics stay


def _rewrite(path, edit, metadata=None):
    from safetensors import safe_open
    from safetensors.numpy import load_file, save_file

    with safe_open(str(path), "np") as f:
        meta = f.metadata()
    save_file(edit(load_file(str(path))), str(path), metadata=meta if metadata is None else metadata)


@pytest.mark.parametrize(
    "craft, reason",
    [
        (lambda t: {k: np.full_like(v, np.nan) if k.startswith("blocks.") else v for k, v in t.items()}, "non-finite"),
        (lambda t: {k.replace("blocks.", "layers."): v for k, v in t.items()}, "no blocks"),
        (lambda t: {k: v for k, v in t.items() if not k.endswith(".W_K")}, "cannot be formed"),
        (lambda t: {k: v[..., :1] if k.endswith("W_O") else v for k, v in t.items()}, "has shape"),
        ("no d_head", "d_head"),
    ],
)
def test_crafted_weights_are_refused_with_a_reason_not_a_crash(tmp_path, trained, craft, reason):
    """A header that parses is not enough: every tensor the Similarity page uses is checked as it loads."""
    job, result = trained
    rid = write(tmp_path, job, result)
    path = st.weights_path(tmp_path, rid)
    if craft == "no d_head":
        _rewrite(path, lambda t: t, metadata={"run_id": rid})
    else:
        _rewrite(path, craft)
    assert reason in weights.weights_problem(tmp_path, rid)
    with pytest.raises(ValueError, match=reason):
        weights.load_head_weights(tmp_path, rid)


def test_a_reloaded_run_reproduces_its_stored_test_loss_until_pruned(tmp_path):
    import core
    from core.experiments import sweep
    from core.training.reference import evaluate

    jobs = sweep.plan(
        ["tied_qk"], ["reverse"], 2, TrainConfig(steps=20, eval_every=10, batch_size=8), {"d_model": 16, "n_heads": 2}
    )
    assert sweep.run(tmp_path, jobs, "cpu")["trained"] == 2
    runs = st.load_runs(tmp_path)
    for row in runs.itertuples():
        model, configs = core.load_model(tmp_path, row.run_id)
        assert configs["model"].attention == "tied_qk" and configs["train"].lr == row.lr
        x, y, m = make_task(configs["task"]).eval_set("test")
        with torch.no_grad():
            assert evaluate(model, x, y, m)[0] == pytest.approx(row.test_loss, rel=1e-5)
    weights.drop_weights(tmp_path, [runs.run_id[0]])
    with pytest.raises(ValueError, match="keeps no model"):
        core.load_model(tmp_path, runs.run_id[0])


def test_a_stores_size_counts_whole_blocks_and_leaves_out_its_caches_and_temporary_files(tmp_path):
    from core.results.size import size

    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "a.parquet").write_bytes(b"x" * 5000)  # two 4 KiB blocks
    (tmp_path / "runs" / "b.parquet").write_bytes(b"x" * 10)  # one
    (tmp_path / "runs" / ".b.parquet.123.tmp").write_bytes(b"x" * 10)  # a writer in flight
    for cache in ("index", "claims", "scratch"):
        (tmp_path / cache).mkdir()
        (tmp_path / cache / "f").write_bytes(b"x" * 100)
    assert size(tmp_path) == (5010, 3 * 4096)
    assert size(tmp_path, caches=True) == (5310, 6 * 4096)
