"""`python -m core sweep` interrupted or doubled: a kill, Ctrl-C, and two sweeps on one store at once."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tiny import TINY_FLAGS

from core.results import store as st

ROOT = Path(__file__).resolve().parents[1]


def sweep_argv(store, flags: str) -> list[str]:
    return [sys.executable, "-m", "core", "sweep", "--store", str(store), *TINY_FLAGS, *flags.split()]


def test_two_concurrent_sweeps_on_one_store_train_each_run_once(tmp_path):
    argv = sweep_argv(tmp_path, "--seeds 2 --workers 1 --attention standard,tied_qk,identity,mqa --task reverse")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}  # one thread each, as two workers: two threads each would contend
    procs = [
        subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in "ab"
    ]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs)
    trained = [int(o.split("trained ")[1].split()[0]) for o in outs]
    assert sum(trained) == 8, outs  # each of the 8 runs trained by exactly one of the two
    assert len(st.load_runs(tmp_path)) == 8 and not list((tmp_path / "claims").glob("*.claim"))
    assert len(list((tmp_path / "bench").glob("sweep-*.parquet"))) == sum(t > 0 for t in trained)


def test_kill_mid_sweep_then_rerun_stores_every_run_exactly_once(tmp_path):
    # a pool: the kill takes the sweep's whole process group, its workers mid-write too
    argv = sweep_argv(tmp_path, "--seeds 2 --attention standard,tied_qk,identity,mqa --task reverse,sort --workers 2")
    proc = subprocess.Popen(
        argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    deadline = time.time() + 120
    while time.time() < deadline and len(list((tmp_path / "runs").glob("*.parquet"))) < 3:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = {p.name for p in (tmp_path / "runs").glob("*.parquet")}
    assert 3 <= len(before) < 16, "the kill should land mid-sweep"
    assert len(st.load_runs(tmp_path)) == len(before)  # whatever is there is whole
    subprocess.run(argv, cwd=ROOT, check=True, capture_output=True)
    runs = st.load_runs(tmp_path)
    assert len(runs) == 16 and runs.run_id.is_unique
    assert {p.stem for p in (tmp_path / "weights").glob("*.safetensors")} == set(runs.run_id)
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]


CANCELLED = ["python -m core sweep: cancelled; what finished before it is stored"]


LONG = "--steps 20000 --seeds 2 --attention standard,mqa --task reverse"


def _training(store) -> bool:
    return bool(list(store.glob("claims/*.claim")))


def interrupted(store, workers: int, sigint, send, flags=LONG, ready=_training, settle=2.0) -> tuple[int, str, str]:
    """A sweep of `flags` started with SIGINT's disposition `sigint`, sent a signal by `send(proc)` `settle` seconds
    after `ready(store)` holds (by default: once it trains): (exit status, stdout, stderr)."""
    argv = sweep_argv(store, f"{flags} --workers {workers}")
    proc = subprocess.Popen(
        argv,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, sigint),
    )
    try:
        deadline = time.time() + 120
        while time.time() < deadline and not ready(store):
            time.sleep(0.05)
        time.sleep(settle)  # a moment on: the workers train, the finished jobs are counted
        send(proc)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:  # never left running past the test
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode, out, err


def test_ctrl_c_on_a_sweep_with_workers_is_a_one_line_cancel_that_releases_its_claims(tmp_path):
    # SIGINT as a terminal leaves it, even where this suite itself runs in the background (a shell's `&`
    # starts it with SIGINT ignored, which children inherit and Python then leaves ignored); Ctrl-C in a
    # terminal sends it to the whole foreground group
    rc, _, err = interrupted(tmp_path, 2, signal.SIG_DFL, lambda proc: os.killpg(proc.pid, signal.SIGINT))
    assert rc == 130 and err.strip().splitlines() == CANCELLED, err
    assert not list(tmp_path.rglob("*.claim")) and not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]


def test_sigterm_on_a_background_sweep_cancels_cleanly_and_records_its_part(tmp_path):
    # a background job (`cmd &`) starts with SIGINT ignored: SIGTERM (kill's and timeout's default) is what reaches
    # it (with workers: the next test)
    rc, out, err = interrupted(tmp_path, 1, signal.SIG_IGN, lambda proc: proc.send_signal(signal.SIGTERM))
    assert rc == 130 and err.strip().splitlines() == CANCELLED, err
    assert "until the cancel" in out and not list(tmp_path.rglob("*.claim"))
    record = st.load_named(tmp_path, "bench")
    assert len(record) == 1 and bool(record.cancelled.iloc[0]) and record.seconds.iloc[0] > 2


def test_sigterm_on_a_sweep_with_workers_counts_and_records_the_jobs_finished_before_it(tmp_path):
    # two workers, four jobs of two runs: SIGTERM, sent to the sweep's own process only (its workers follow it),
    # lands once the first two jobs are stored (and the sweep has their counts), while the last two train
    rc, out, err = interrupted(
        tmp_path,
        2,
        signal.SIG_IGN,
        lambda proc: proc.send_signal(signal.SIGTERM),
        flags="--steps 600 --eval-every 200 --seeds 2 --lr 1e-3 --attention standard,mqa,tied_qk,gqa --task reverse",
        ready=lambda store: len(list((store / "runs").glob("*.parquet"))) >= 4,
        settle=0.5,
    )
    assert rc == 130 and err.strip().splitlines() == CANCELLED, err
    assert len(st.load_runs(tmp_path)) == 4, "the cancel should land while the last two jobs train"
    assert "trained 4 runs" in out, out  # not 0: the jobs that ended before the cancel are counted
    assert not list(tmp_path.rglob("*.claim")) and not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]
    record = st.load_named(tmp_path, "bench")
    assert len(record) == 1 and bool(record.cancelled.iloc[0])
    assert record.runs.iloc[0] == 4 and record.gflop.iloc[0] > 0  # the FLOPs of the runs it stored
