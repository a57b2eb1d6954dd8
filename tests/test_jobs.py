"""The Train page's background sweep: runs, refuses a second one, cancels cleanly."""

import time

import pytest

from core import jobs, sweep
from core import store as st
from core.config import TrainConfig

TINY = {"d_model": 16, "n_heads": 2}


def wait(job, timeout=120):
    deadline = time.time() + timeout
    while job.state == "running" and time.time() < deadline:
        time.sleep(0.05)
    return job.state


def test_background_sweep_finishes_and_stores_runs(tmp_path):
    plan = sweep.plan(["standard", "identity"], ["reverse"], 2, TrainConfig(steps=20, eval_every=10), TINY)
    job = jobs.start(str(tmp_path), plan)
    assert wait(job) == "finished" and job.progress == 1.0
    assert job.counts["trained"] == 4 and len(st.load_runs(tmp_path)) == 4


def test_one_sweep_at_a_time_and_cancel_keeps_only_finished_runs(tmp_path):
    plan = sweep.plan(["standard", "stacked", "mqa"], ["sort"], 1, TrainConfig(steps=400, eval_every=10), TINY)
    job = jobs.start(str(tmp_path), plan)
    with pytest.raises(RuntimeError, match="already running"):
        jobs.start(str(tmp_path), plan)
    while job.done < 5 and job.state == "running":
        time.sleep(0.01)
    job.cancel.set()
    assert wait(job) == "cancelled"
    assert len(st.load_runs(tmp_path)) < 3 and not list(tmp_path.rglob("*.tmp"))
    assert jobs.start(str(tmp_path), plan[:0]) is not job  # the slot is free again
