"""Fault injection: kill, corrupt and fuzz (bounded, seeded), and hold the store's promises: a resumed sweep
retrains what it cannot read (the bad file kept aside, named), claims are won once, temp files of killed
writers go, readers skip what they cannot read with a reason, and the CLI answers an OSError in one line."""

import json
import multiprocessing as mp
import os
import random
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from core.experiments import sweep
from core.results import claims
from core.results import store as st
from core.training.config import TrainConfig

ROOT = Path(__file__).resolve().parents[1]
TINY = dict(d_model=16, n_heads=2)
TRAIN = TrainConfig(steps=10, eval_every=5, batch_size=8)


def _store(path: Path, seeds=2) -> list[str]:
    jobs = sweep.plan(["standard"], ["reverse"], seeds, TRAIN, TINY)
    assert sweep.run(path, jobs, "cpu")["trained"] == seeds
    return sorted(st.load_runs(path).run_id)


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    path = tmp_path_factory.mktemp("faults") / "store"
    return path, _store(path)


def _copy(made, tmp_path) -> tuple[Path, list[str]]:
    src, ids = made
    shutil.copytree(src, tmp_path / "s")
    return tmp_path / "s", ids


def _rewrite_meta(path: Path, edit) -> None:
    table = pq.read_table(path)
    meta = json.loads(table.schema.metadata[st.META_KEY])
    edit(meta)
    pq.write_table(table.replace_schema_metadata({st.META_KEY: json.dumps(meta).encode()}), path)


def _string_steps(path: Path) -> None:
    table = pq.read_table(path)
    col = table.schema.get_field_index("step")
    table = table.set_column(col, "step", pa.array([str(v) for v in table["step"].to_pylist()]))
    pq.write_table(table, path)


DAMAGE = {
    "truncated": lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2]),
    "zero-length": lambda p: p.write_bytes(b""),
    "garbled": lambda p: p.write_bytes(bytes(random.Random(0).randrange(256) for _ in range(p.stat().st_size))),
    "no metadata": lambda p: pq.write_table(pq.read_table(p).replace_schema_metadata({}), p),
    "seed is text": lambda p: _rewrite_meta(p, lambda m: m.update(seed="zero")),
    "seed beyond 64 bits": lambda p: _rewrite_meta(p, lambda m: m.update(seed=10**30)),
    "a 200,000-character name": lambda p: _rewrite_meta(p, lambda m: m["model"].update(attention="a" * 200_000)),
    "lr missing": lambda p: _rewrite_meta(p, lambda m: m["train"].pop("lr")),
    "step is text": _string_steps,
    "another run's id": lambda p: _rewrite_meta(p, lambda m: m.update(run_id="0123456789abcdef")),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_resumed_sweep_retrains_an_unreadable_run_and_keeps_the_bad_file_aside(made, tmp_path, damage):
    store, ids = _copy(made, tmp_path)
    bad = st.run_path(store, ids[0])
    DAMAGE[damage](bad)
    assert ids[0] not in set(st.load_runs(store).run_id)  # readers skip it (with a warning), never crash
    assert st.run_problem(store, ids[0])
    jobs = sweep.plan(["standard"], ["reverse"], 2, TRAIN, TINY)
    with pytest.warns(UserWarning, match=f"moved runs/{ids[0]}.parquet to unreadable/"):
        counts = sweep.run(store, jobs, "cpu")
    assert (counts["trained"], counts["skipped"]) == (1, 1)
    assert sorted(st.load_runs(store).run_id) == ids and st.run_problem(store, ids[0]) is None
    assert len(list((store / st.UNREADABLE).glob(f"{ids[0]}.*.parquet"))) == 1  # kept, not deleted


def test_fuzzed_run_files_never_crash_a_reader(made, tmp_path):
    """40 seeded corruptions (flipped bytes, cut tails) of the two run files: every reader skips or reads."""
    store, ids = _copy(made, tmp_path)
    originals = {rid: st.run_path(store, rid).read_bytes() for rid in ids}
    rng = random.Random(1234)
    for _ in range(40):
        rid = rng.choice(ids)
        data = bytearray(originals[rid])
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        if rng.random() < 0.3:
            data = data[: rng.randrange(len(data))]
        st.run_path(store, rid).write_bytes(bytes(data))
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            runs = st.load_runs(store)  # warns for a file it skips
            st.load_metrics(store, ids)
        assert all("\n" not in str(w.message) for w in said)  # one line each (pyarrow's thrift errors run over)
        assert set(runs.run_id) <= set(ids)
        assert (st.run_problem(store, rid) is None) == (rid in set(runs.run_id))
        st.run_path(store, rid).write_bytes(originals[rid])


def _race(store, barrier, results, i):
    barrier.wait()
    results[i] = claims.claim(store, "contested")
    barrier.wait()  # a sweep holds its claim while alive: a winner that exited early would leave it stale


def test_processes_released_together_onto_a_stale_claim_win_it_once(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    ctx = mp.get_context("fork")
    for trial in range(15):
        store = tmp_path / str(trial)
        claims.claim_path(store, "contested").parent.mkdir(parents=True)
        claims.claim_path(store, "contested").write_text(str(dead.pid))
        barrier, results = ctx.Barrier(6), ctx.Array("b", 6)
        procs = [ctx.Process(target=_race, args=(store, barrier, results, i)) for i in range(6)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(30)
        assert sum(results[:]) == 1, f"trial {trial}: {results[:]} won"


def test_a_claim_whose_pid_now_belongs_to_another_process_is_stale(tmp_path):
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        path = claims.claim_path(tmp_path, "r")
        path.parent.mkdir(parents=True)
        path.write_text(f"{other.pid} 1")  # a live pid, but not the process that started at tick 1
        assert claims.claim(tmp_path, "r")
        path.write_text(f"{other.pid} {claims.start_time(other.pid)}")  # the very process: alive, held
        assert not claims.claim(tmp_path, "r")
    finally:
        other.kill()
        other.wait()


def _cli(*args, user=None, timeout=300):
    cmd = [sys.executable, "-m", "core", *args]
    if user:
        cmd = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *cmd]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def test_a_killed_baselines_temp_file_is_removed_by_the_next_command(made, tmp_path):
    store, _ = _copy(made, tmp_path)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    leftover = store / "analysis" / f".init.parquet.{dead.pid}.tmp"
    leftover.parent.mkdir(exist_ok=True)
    leftover.write_bytes(b"half a table")
    done = _cli("index", "--store", str(store))
    assert done.returncode == 0, done.stderr
    assert not leftover.exists()


def _denied(monkeypatch, store: Path):
    """What a non-root server meets on a store it may not read: EACCES from every listing and open under it
    (injected: tests run as root, which CAP_DAC_OVERRIDE lets read anything)."""
    import builtins
    import errno

    def denied(path) -> bool:
        return str(path).startswith(str(store)) and Path(path) != store

    def guard(real):
        def call(path, *a, **kw):
            if denied(path):
                raise PermissionError(errno.EACCES, "Permission denied", str(path))
            return real(path, *a, **kw)

        return call

    monkeypatch.setattr(os, "scandir", guard(os.scandir))
    monkeypatch.setattr(builtins, "open", guard(builtins.open))
    monkeypatch.setattr(Path, "iterdir", guard(Path.iterdir))
    monkeypatch.setattr(Path, "glob", guard(Path.glob))


@pytest.mark.parametrize("command", ["summary", "prune", "index"])
def test_an_unreadable_store_is_one_line(made, tmp_path, monkeypatch, capsys, command):
    from core import cli

    store, _ = _copy(made, tmp_path)
    _denied(monkeypatch, store)
    assert cli.main([command, "--store", str(store)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Permission denied" in err, err


@pytest.mark.parametrize("folder", ["weights", "models"])
def test_a_full_disk_while_writing_tensors_is_one_line_and_leaves_no_temp_file(tmp_path, monkeypatch, capsys, folder):
    import errno

    from core import cli

    real = Path.write_bytes

    def full(self, data):
        if self.parent.name == folder:
            real(self, data[: len(data) // 2])  # part written, then the disk fills
            raise OSError(errno.ENOSPC, "No space left on device", str(self))
        return real(self, data)

    monkeypatch.setattr(Path, "write_bytes", full)
    store = tmp_path / "s"
    args = [
        "sweep",
        "--attention",
        "standard",
        "--task",
        "reverse",
        "--seeds",
        "1",
        "--steps",
        "10",
        "--d-model",
        "16",
        "--n-heads",
        "2",
        "--workers",
        "1",
        "--store",
        str(store),
        "--quiet",
    ]
    with pytest.raises(SystemExit) as ended:
        cli.main(args)
    err = capsys.readouterr().err.strip()
    assert ended.value.code == 1 and len(err.splitlines()) == 1 and "disk full" in err, err
    assert not [p for p in store.rglob("*") if p.is_file() and (".tmp" in p.name)]  # nothing half-written stays
    assert not list((store / "runs").glob("*.parquet")) if (store / "runs").exists() else True
