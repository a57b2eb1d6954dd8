"""Sweeps on worker processes: the same runs as in-process, and no orphans when the sweep is killed."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from core.experiments import sweep
from core.results import store as st
from core.training.config import TrainConfig

ROOT = Path(__file__).resolve().parents[1]
TINY_TRAIN = TrainConfig(steps=15, eval_every=5, batch_size=8)
TINY_MODEL = {"d_model": 16, "n_heads": 2}


def test_workers_store_the_runs_the_in_process_sweep_stores(tmp_path):
    jobs = sweep.plan(["standard", "mqa", "identity"], ["reverse"], 2, TINY_TRAIN, TINY_MODEL)
    steps, inline = [], []
    one = sweep.run(tmp_path / "one", jobs, "cpu", workers=1, on_step=inline.append)
    two = sweep.run(tmp_path / "two", jobs, "cpu", workers=2, on_step=steps.append)
    assert one["trained"] == two["trained"] == 6 and two["skipped"] == 0
    assert len(steps) == 3 * TINY_TRAIN.steps  # progress comes back from the workers, one call per step
    assert sum(steps) == sum(inline) == 6 * TINY_TRAIN.steps  # in member-steps (two members a job), both engines
    a, b = (st.load_runs(tmp_path / n).set_index("run_id").sort_index() for n in ("one", "two"))
    assert list(a.index) == list(b.index)
    assert (b.threads == 1).all()  # two workers on this 2-core budget: one core each
    assert (a.eval_loss - b.eval_loss).abs().max() < 1e-4  # same runs, whatever the thread count
    assert sweep.run(tmp_path / "two", jobs, "cpu", workers=2)["skipped"] == 6  # resume


def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:  # field 4 of /proc/PID/stat: the parent's pid
            out.append(int(stat.parent.name))
    return out


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text()
    except OSError:  # exited since it was listed
        return ""


def _workers(pid: int) -> list[int]:
    """A sweep's live pool workers: forked by its forkserver (a child of the sweep), or spawned by the sweep
    itself. Live: the empty process the server forks first to show it is ready may not be reaped yet."""
    kids = _children(pid)
    server = [k for k in kids if "forkserver" in _cmdline(k)]
    forked = [w for k in server for w in _children(k)]
    workers = forked or [k for k in kids if "multiprocessing.spawn" in _cmdline(k)]
    return [w for w in workers if _alive(w)]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc to find the workers")
def test_workers_exit_when_the_sweep_alone_is_killed(tmp_path):
    flags = "--d-model 16 --n-heads 2 --steps 2000 --quiet --workers 2 --attention standard,mqa --task reverse"
    argv = [sys.executable, "-m", "core", "sweep", "--store", str(tmp_path), *flags.split()]
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while time.time() < deadline and len(_workers(proc.pid)) < 2:
        time.sleep(0.1)
    workers = _workers(proc.pid)
    assert len(workers) == 2, "the sweep should have started its workers"
    os.kill(proc.pid, signal.SIGKILL)  # the parent only: its workers are orphaned mid-job
    proc.wait()
    deadline = time.time() + 20
    while time.time() < deadline and any(_alive(p) for p in workers):
        time.sleep(0.2)
    assert not any(_alive(p) for p in workers), "orphaned workers must exit, not train on"
    assert not list((tmp_path / "runs").glob("*.parquet"))  # 2000 steps: nothing was finished, nothing half-written


def test_a_ctrl_c_inside_the_first_submit_cancels_and_ends_the_workers_it_started(tmp_path, monkeypatch):
    from concurrent.futures import process

    started = []

    def interrupted(manager):  # Ctrl-C after the pool forked its workers, before its manager thread ran
        started.extend(manager.processes.values())
        raise KeyboardInterrupt

    monkeypatch.setattr(process._ExecutorManagerThread, "start", interrupted)
    jobs = sweep.plan(["standard", "mqa"], ["reverse"], 1, TINY_TRAIN, TINY_MODEL)
    counts = sweep.run(tmp_path, jobs, "cpu", workers=2)
    assert counts["cancelled"] and counts["trained"] == 0  # a clean cancel, not shutdown's "cannot join thread"
    assert started and not any(p.is_alive() for p in started)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc to find the workers")
def test_a_killed_worker_is_retried_once_and_the_sweep_ends_with_every_run(tmp_path):
    flags = (
        "--d-model 16 --n-heads 2 --steps 300 --eval-every 100 --quiet --workers 2 --attention standard,mqa,identity"
    )
    argv = [sys.executable, "-m", "core", "sweep", "--store", str(tmp_path), *flags.split(), "--task", "reverse"]
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while time.time() < deadline and len(_workers(proc.pid)) < 2:
        time.sleep(0.1)
    time.sleep(3)  # the workers have picked up their first jobs
    workers = _workers(proc.pid)
    os.kill(max(workers), signal.SIGKILL)  # one worker dies mid-job (out of memory, an operator's kill)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert "trained 9 runs" in out  # the dead worker's job was retried on a fresh pool
    assert len(st.load_runs(tmp_path)) == 9


def _dies_on_identity(store, index, job, missing, device, command):
    """A worker's job function that kills its own process on identity's job (as an OOM kill would)."""
    from core.experiments import workers

    if job.model.attention == "identity":
        workers._progress.put(("start", index))
        time.sleep(0.5)
        os.kill(os.getpid(), signal.SIGKILL)
    return workers._train(store, index, job, missing, device, command)


def test_a_job_that_kills_its_worker_twice_is_reported_in_one_line_and_the_rest_stored(tmp_path):
    from core.experiments import workers

    todo = [(j, j.members) for j in sweep.plan(["standard", "identity"], ["reverse"], 1, TINY_TRAIN, TINY_MODEL)]
    out = workers.run_parallel(tmp_path, todo, "cpu", "pytest", 2, train=_dies_on_identity)
    assert {"failed": ["reverse/identity"]} in out
    assert sum(o.get("trained", 0) for o in out) == 1 and len(st.load_runs(tmp_path)) == 1


def _dies_holding_the_progress_lock(store, index, job, missing, device, command):
    """Killed (once) while writing a progress event: the queue's write lock stays held by a dead process."""
    from core.experiments import workers

    marker = Path(store) / "died"
    if job.model.attention == "identity" and not marker.exists():
        marker.touch()
        workers._progress.put(("start", index))
        time.sleep(0.5)
        workers._progress._wlock.acquire()  # as a kill inside Queue's feeder thread, mid-write, leaves it
        os.kill(os.getpid(), signal.SIGKILL)
    return workers._train(store, index, job, missing, device, command)


@pytest.mark.timeout(120)
def test_a_worker_killed_mid_write_does_not_hang_the_retry(tmp_path):
    """The retry pool gets a queue of its own: with one shared queue its workers blocked at exit on the dead
    worker's lock, and the sweep hung (the intermittent hang of the test above)."""
    from core.experiments import workers

    todo = [(j, j.members) for j in sweep.plan(["standard", "identity", "mqa"], ["reverse"], 1, TINY_TRAIN, TINY_MODEL)]
    out = workers.run_parallel(tmp_path, todo, "cpu", "pytest", 2, train=_dies_holding_the_progress_lock)
    assert sum(o.get("trained", 0) for o in out) == 3 and len(st.load_runs(tmp_path)) == 3


def test_workers_take_the_longest_jobs_first():
    jobs = sweep.plan(["identity", "standard", "stacked"], ["histogram", "associative_recall"], 3, TINY_TRAIN)
    order = sorted(jobs, key=lambda j: sweep.cost(j, 3), reverse=True)
    assert [(j.task.name, j.model.attention) for j in order[:2]] == [
        ("associative_recall", "stacked"),  # the longest sequences and the most weights
        ("associative_recall", "standard"),
    ]
    assert order[-1].model.attention == "identity" and order[-1].task.name == "histogram"
    assert sweep.cost(jobs[0], 1) * 3 == sweep.cost(jobs[0], 3)


def _history(rows) -> pd.DataFrame:
    cols = ["task", "attention", "until", "steps", "steps_done"]
    return pd.DataFrame([dict(zip(cols, r)) for r in rows], columns=cols)


def test_criterion_jobs_known_to_train_long_start_first():
    """Under the criterion a job's length is how long its members train: identity, the least work a step, trained
    to the cap in the store's criterion runs and goes first; with no history (or to a fixed budget) work decides."""
    crit = TrainConfig(steps=100, eval_every=10, until="solved", schedule="constant")
    todo = [(j, j.members) for j in sweep.plan(["identity", "standard", "stacked"], ["associative_recall"], 2, crit)]
    names = lambda pairs: [j.model.attention for j, _ in pairs]  # noqa: E731
    by_work = ["stacked", "standard", "identity"]
    assert names(sweep.longest_first(todo, _history([]))) == by_work
    history = _history(
        [
            ("associative_recall", "identity", "solved", 6400, 6400),
            ("associative_recall", "identity", "solved", 800, 800),
        ]
        + [("associative_recall", a, "solved", 6400, 300) for a in ("standard", "stacked")]
        + [("reverse", "standard", "solved", 6400, 6400)]  # another task's runs say nothing of this one
    )
    assert names(sweep.longest_first(todo, history)) == ["identity", "stacked", "standard"]
    fixed = [
        (j, j.members) for j in sweep.plan(["identity", "standard", "stacked"], ["associative_recall"], 2, TINY_TRAIN)
    ]
    assert names(sweep.longest_first(fixed, history)) == by_work  # a fixed budget: every member trains to the end


def test_a_fresh_store_borrows_the_prior_stores_history(tmp_path):
    """A fresh store has no criterion runs: the prior store's (the bundled results by default) order its first
    sweep; a pair the store has history of keeps its own, and a missing prior leaves the work order."""
    crit = TrainConfig(steps=100, eval_every=10, until="solved", schedule="constant")
    todo = [(j, j.members) for j in sweep.plan(["identity", "standard", "stacked"], ["associative_recall"], 2, crit)]
    names = lambda pairs: [j.model.attention for j, _ in pairs]  # noqa: E731
    fresh = tmp_path / "fresh"
    bundled = names(sweep.longest_first(todo, st.load_runs(sweep.BUNDLED)))  # by the bundled runs' shares of the cap
    assert bundled[0] == "identity"  # the least work a step, and the longest to train
    assert names(sweep.longest_first(todo, sweep._history(fresh, todo))) == bundled
    by_work = names(sweep.longest_first(todo, sweep._history(fresh, todo, prior=tmp_path / "none")))
    assert by_work == ["stacked", "standard", "identity"]  # no prior: the work order, identity last
    prior = _history([("associative_recall", "identity", "solved", 6400, 6400)])
    own = _history([("associative_recall", "identity", "solved", 6400, 64)])
    merged = sweep.with_prior(own, prior)
    assert list(merged.steps_done) == [64]  # the store's own history of a pair wins over the prior's
    assert list(sweep.with_prior(_history([]), prior).steps_done) == [6400]


def test_the_prior_is_not_read_where_the_stores_own_history_covers_every_job(tmp_path, monkeypatch):
    crit = TrainConfig(steps=100, eval_every=10, until="solved", schedule="constant")
    todo = [(j, j.members) for j in sweep.plan(["identity", "standard"], ["associative_recall"], 2, crit)]
    own = _history([("associative_recall", a, "solved", 6400, 64) for a in ("identity", "standard")])
    read = []
    monkeypatch.setattr(sweep.st, "load_runs", lambda store: read.append(store) or own)
    assert sweep._history(tmp_path / "own", todo, prior=tmp_path) is own and read == [tmp_path / "own"]
    other = [(j, j.members) for j in sweep.plan(["stacked"], ["sort"], 1, crit)]
    sweep._history(tmp_path / "own", todo + other, prior=tmp_path)
    assert read[-1] == tmp_path  # a pair the store has never trained: the prior is read
