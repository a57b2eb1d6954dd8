"""The Train page's background sweep: runs, refuses a second one, cancels cleanly."""

import subprocess
import sys
import time
from pathlib import Path

import pytest

from core.dashboard import jobs
from core.results import store as st

TINY = {"d_model": 16, "n_heads": 2}
ROOT = Path(__file__).resolve().parents[1]


def wait(job, timeout=120):
    deadline = time.time() + timeout
    while job.state == "running" and time.time() < deadline:
        time.sleep(0.05)
    return job.state


def test_background_sweep_finishes_and_stores_runs(tmp_path):
    plan = jobs.plan(["standard", "identity"], ["reverse"], 2, {"steps": 20, "eval_every": 10}, TINY)
    job = jobs.start(str(tmp_path), plan, owner="a")
    assert wait(job) == "finished" and job.progress == 1.0
    assert job.counts["trained"] == 4 and len(st.load_runs(tmp_path)) == 4


def test_a_sweep_to_the_criterion_reports_its_members_and_a_shrinking_total(tmp_path):
    train = {"steps": 400, "eval_every": 10, "until": "solved", "schedule": "constant", "lr": 1e-2}
    plan = jobs.plan(["standard"], ["reverse"], 2, train, TINY, [1e-2, 3e-4])
    job = jobs.start(str(tmp_path), plan, owner="a")
    assert wait(job) == "finished" and job.progress == 1.0
    stops = st.load_runs(tmp_path).stop.value_counts().to_dict()
    assert job.members == {"training": 0, **stops} and stops.get("solved")  # as the runs record it
    assert job.saved > 0 and job.done < job.total  # members that stopped early took fewer steps than planned
    assert "solved" in jobs.describe_members(job)


def test_one_sweep_at_a_time_and_cancel_keeps_only_finished_runs(tmp_path):
    plan = jobs.plan(["standard", "stacked", "mqa"], ["sort"], 1, {"steps": 400, "eval_every": 10}, TINY)
    job = jobs.start(str(tmp_path), plan, owner="a")
    with pytest.raises(RuntimeError, match="already running"):
        jobs.start(str(tmp_path), plan, owner="b")
    while job.done < 5 and job.state == "running":
        time.sleep(0.01)
    job.stop()
    assert wait(job) == "cancelled"
    assert len(st.load_runs(tmp_path)) < 3 and not list(tmp_path.rglob("*.tmp"))
    again = jobs.start(str(tmp_path), jobs.plan(["standard"], ["reverse"], 1, {"steps": 10}, TINY), owner="a")
    assert again is not job and wait(again) == "finished"  # the slot is free again


def test_a_sweep_cancelled_before_storing_anything_leaves_no_store_and_says_where_it_stands(tmp_path):
    store = tmp_path / "mine"
    plan = jobs.plan(["standard", "mqa"], ["sort"], 1, {"steps": 2000, "eval_every": 10}, TINY)
    job = jobs.start(str(store), plan, owner="a")
    while job.done < 5 and job.state == "running":
        time.sleep(0.01)
    assert job.label.startswith("job 1 of 2: sort / ") and " so far" in jobs.describe_members(job)
    job.stop()
    assert wait(job) == "cancelled" and job.counts["trained"] == 0
    assert not store.exists()  # the empty store it made is gone: not left in the sidebar's Store list
    again = jobs.start(str(store), jobs.plan(["standard"], ["reverse"], 1, {"steps": 10}, TINY), owner="b")
    assert wait(again) == "finished" and len(st.load_runs(store)) == 1  # and the name is free again


@pytest.mark.parametrize(
    "field, request_",
    [
        ("n_heads", {"model": {"d_model": 30, "n_heads": 4}}),
        ("d_model", {"model": {"d_model": 1 << 20, "n_heads": 4}}),
        ("attention", {"attentions": ["nope"]}),
        ("steps", {"train": {"steps": 0}}),
        ("precision", {"train": {"steps": 10, "precision": "fp8"}}),
    ],
)
def test_a_bad_request_is_one_line_naming_the_field_and_creates_no_store(field, request_, tmp_path):
    request = {**jobs.plan(["standard"], ["reverse"], 1, {"steps": 10}, TINY), **request_}
    with pytest.raises(ValueError, match=f"^{field}:") as err:
        jobs.start(str(tmp_path / "new-store"), request, owner="a")
    assert "\n" not in str(err.value) and not (tmp_path / "new-store").exists()


def test_the_server_never_imports_torch_the_sweep_trains_in_a_child(tmp_path):
    """Run in a fresh interpreter: the Train page's server process stays torch-free while its sweep trains,
    and the child's runs are in the store when the job says finished."""
    code = f"""
import sys, time
from core.dashboard import jobs
from core.results import store
job = jobs.start({str(tmp_path)!r}, jobs.plan(["standard"], ["reverse"], 2, {{"steps": 10}}, {TINY!r}), "a")
while job.state == "running":
    time.sleep(0.05)
assert job.state == "finished" and job.counts["trained"] == 2, (job.state, job.error)
assert "torch" not in sys.modules
print("runs", len(store.load_runs({str(tmp_path)!r})))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "runs 2" in done.stdout


def test_the_server_budget_refuses_with_the_time_to_wait(monkeypatch):
    monkeypatch.setenv(jobs.BUDGET_ENV, "1000")  # GFLOP
    monkeypatch.setattr(jobs, "_spent", jobs.deque())
    monkeypatch.setattr(jobs, "_current", None)  # no sweep of an earlier test still winding down
    assert jobs.wait_seconds(2000) == float("inf")  # larger than the whole budget
    now = 1_000_000.0
    jobs._spent.extend([(now - 3000, 600), (now - 1000, 300)])
    assert jobs.wait_seconds(100, now) == 0.0  # 900 + 100 fits
    assert jobs.wait_seconds(300, now) == pytest.approx(600)  # once the oldest (600) leaves the hour
    assert jobs.wait_seconds(900, now) == pytest.approx(2600)  # only when both have left
    monkeypatch.setenv(jobs.BUDGET_ENV, "50")
    plan = jobs.plan(["standard"], ["reverse"], 1, {"steps": 2000}, TINY)  # 4 lrs x 2000 steps: 76 GFLOP, counted
    with pytest.raises(RuntimeError, match=r"this sweep \(76 GFLOP\) is larger than the server's budget"):
        jobs.start("unused", plan, owner="a")
    monkeypatch.setenv(jobs.BUDGET_ENV, "100")
    jobs._spent.clear()
    jobs._spent.append((__import__("time").time(), 30))
    with pytest.raises(RuntimeError, match=r"used up: try again in \d+ min"):
        jobs.start("unused", plan, owner="a")


def test_a_refused_start_creates_no_store(tmp_path, monkeypatch):
    monkeypatch.setenv(jobs.BUDGET_ENV, "1")  # the plan below is 1.1 GFLOP
    monkeypatch.setattr(jobs, "_spent", jobs.deque())
    monkeypatch.setattr(jobs, "_current", None)
    plan = jobs.plan(["standard"], ["reverse"], 1, {"steps": 20, "eval_every": 10}, TINY)
    with pytest.raises(RuntimeError, match="budget"):
        jobs.start(str(tmp_path / "new-store"), plan, owner="a")
    assert not (tmp_path / "new-store").exists()


def test_a_store_made_by_one_visitor_is_taken_for_every_other(tmp_path, monkeypatch):
    monkeypatch.setattr(jobs, "_spent", jobs.deque())
    monkeypatch.setattr(jobs, "_owners", {})
    monkeypatch.setattr(jobs, "_current", None)
    plan = jobs.plan(["standard"], ["reverse"], 1, {"steps": 20, "eval_every": 10}, TINY, [3e-3])
    mine = tmp_path / "mine"
    job = jobs.start(str(mine), plan, owner="a", name="mine")
    job._child.wait(120)
    for other, where in (("b", mine), ("b", tmp_path / "older")):
        (tmp_path / "older" / "runs").mkdir(parents=True, exist_ok=True)  # made before this server started
        with pytest.raises(ValueError, match=f"store name: '{where.name}' is taken"):
            jobs.start(str(where), plan, owner=other, name=where.name)
    while jobs.current().state == "running":
        __import__("time").sleep(0.1)
    jobs.start(str(mine), plan, owner="a", name="mine")._child.wait(120)  # its maker may resume it
