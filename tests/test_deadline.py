"""`sweep --hours`: a job starts only where it can end in time; the others are left, unclaimed, for a later sweep."""

import time

import pytest
from tiny import sweep as tiny_sweep

from core.experiments import deadline, pace, sweep
from core.results import claims
from core.results import store as st
from core.training.config import TrainConfig

TRAIN = TrainConfig(steps=15, eval_every=5, batch_size=8)
MODEL = {"d_model": 16, "n_heads": 2}


def _jobs(steps=15, attentions=("standard", "mqa")):
    return sweep.plan(list(attentions), ["reverse"], 2, TrainConfig(**{**TRAIN.to_dict(), "steps": steps}), MODEL)


def test_the_estimate_counts_each_members_steps_from_where_it_starts():
    (job,) = _jobs(steps=100, attentions=("standard",))
    assert deadline.member_steps(job, {0: job.members}) == 2 * 100
    assert deadline.member_steps(job, {0: job.members[:1], 60: job.members[1:]}) == 100 + 40  # one goes on from 60
    assert not deadline.past(job, {0: job.members}, None)  # no deadline: every job starts
    assert deadline.past(job, {0: job.members}, time.time() - 1)  # none left: no job starts


@pytest.mark.parametrize("seconds, trains", [(1e-3, True), (10.0, False)])
def test_a_job_starts_only_where_its_members_at_the_pace_here_end_before_the_deadline(monkeypatch, seconds, trains):
    (job,) = _jobs(steps=100, attentions=("standard",))
    monkeypatch.setattr(pace, "member_step_seconds", lambda job, device=None: seconds)
    # 200 member-steps at 1 ms end in 0.2 s, at 10 s in 2,000 s: the deadline is a minute away
    assert deadline.past(job, {0: job.members}, time.time() + 60) is not trains


def test_jobs_past_the_deadline_train_nothing_and_let_their_claims_go_at_once(tmp_path):
    jobs, seen = _jobs(), []

    def on_job(job, n):  # as each job is claimed, the one before it has left: only its own claims are held
        seen.append(sorted(p.stem for p in (tmp_path / "claims").glob("*.claim")))

    counts = sweep.run(tmp_path, jobs, "cpu", workers=1, on_job=on_job, deadline=time.time() - 1)
    assert counts["trained"] == 0 and counts["left"] == ["reverse/standard", "reverse/mqa"]
    assert seen == [sorted(job.run_ids().values()) for job in jobs] and st.load_runs(tmp_path).empty
    assert not any(claims.held(p) for p in (tmp_path / "claims").glob("*.claim"))
    later = sweep.run(tmp_path, jobs, "cpu", workers=1, deadline=time.time() + 3600)  # a sweep with time: all of it
    assert later["trained"] == 4 and later["left"] == []


def test_workers_leave_the_jobs_past_the_deadline_too(tmp_path):
    counts = sweep.run(tmp_path, _jobs(), "cpu", workers=2, deadline=time.time() - 1)
    assert counts["trained"] == 0 and sorted(counts["left"]) == ["reverse/mqa", "reverse/standard"]
    assert st.load_runs(tmp_path).empty


def test_the_command_names_the_jobs_it_left_and_exits_75_then_a_rerun_trains_them(tmp_path, capsys):
    with pytest.raises(SystemExit) as out:
        tiny_sweep(tmp_path, "--task", "reverse", "--attention", "standard", "--hours", "1e-9")
    assert out.value.code == 75
    assert "left for a later sweep (could end past --hours 1e-09): reverse/standard" in capsys.readouterr().err
    assert st.load_runs(tmp_path).empty
    assert tiny_sweep(tmp_path, "--task", "reverse", "--attention", "standard", "--hours", "1") == 0
    assert len(st.load_runs(tmp_path)) == 3  # its three seeds


@pytest.mark.parametrize(
    "flags, says",
    [(["--hours", "0"], "--hours: must be a positive number"), (["--hours", "1", "--ray", "local"], "--hours: not")],
)
def test_a_bad_hours_flag_is_one_line(tmp_path, capsys, flags, says):
    with pytest.raises(SystemExit) as out:
        tiny_sweep(tmp_path, *flags)
    assert out.value.code == 2 and says in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()
