"""`python -m core todo`: docs/reproduce.md's Still to run lines, retargeted to a scratch store, kept by their
member-steps (--at-most) or by their hours on this machine (--hours, timed by core.experiments.pace)."""

import pandas as pd
import pytest

from core.cli import main


def test_todo_prints_each_still_to_run_line_retargeted_to_train_the_same_runs_then_the_points_not_yet_trained(
    monkeypatch, capsys
):
    """`todo --into S --device cuda --workers 4`: the Still to run line with its store, workers and device
    changed, which plans the same jobs as the line itself and records as it (lines.documented)."""
    from test_endpoints import three_lrs

    from core.cli import todo
    from core.cli.land import line_jobs
    from core.experiments.lines import documented
    from core.experiments.recipe import CRITERION_SWEEPS
    from core.report.pending import pending

    line = next(c for c in CRITERION_SWEEPS if "--task reverse" in c)
    runs = three_lrs().assign(command=line)
    monkeypatch.setattr(todo.st, "load_runs", lambda store: runs)  # a store holding these runs
    want = list(pending(runs).line)
    argv = ["todo", "--into", "/tmp/scratch", "--device", "cuda", "--workers", "4"]
    assert len(want) == 1 and main(argv) == 0
    (got,) = capsys.readouterr().out.splitlines()
    assert "--store /tmp/scratch " in got and "--workers 4 " in got and got.endswith(" --device cuda")
    assert documented(got) == documented(want[0])  # recorded as the line itself
    here = got.removesuffix(" --device cuda")  # the sweep parser checks for a GPU
    assert [j.run_ids() for j in line_jobs(here)] == [j.run_ids() for j in line_jobs(want[0])]


def test_todo_names_a_bad_flag_in_one_line(tmp_path, capsys):
    for argv, flag in ((["--device", "gpu"], "--device"), (["--store", str(tmp_path)], "--store")):
        with pytest.raises(SystemExit) as exit_:
            main(["todo", *argv])
        err = capsys.readouterr().err
        assert exit_.value.code == 2 and flag in err and len(err.strip().splitlines()) == 1


def test_todo_adds_a_store_or_workers_a_line_does_not_name_and_quotes_a_store_for_the_shell():
    import shlex

    from core.cli.todo import for_store

    assert for_store("python -m core sweep --task x", "/tmp/s", None, 3) == (
        "python -m core sweep --task x --store /tmp/s --workers 3"
    )
    line = for_store("python -m core sweep --task x --store data --workers 2", "/tmp/my store", "cuda")
    assert shlex.split(line)[4:] == ["--task", "x", "--store", "/tmp/my store", "--workers", "2", "--device", "cuda"]


def test_todo_at_most_keeps_the_lines_that_fit_by_their_member_steps_from_step_0(monkeypatch, capsys):
    """`todo --at-most N`: a Still to run line by its member-steps from step 0 (pending): kept at its cost, dropped
    one below."""
    from test_endpoints import three_lrs

    from core.cli import todo
    from core.experiments.recipe import CRITERION_SWEEPS
    from core.report.pending import pending

    line = next(c for c in CRITERION_SWEEPS if "--task reverse" in c)
    runs = three_lrs().assign(command=line)
    monkeypatch.setattr(todo.st, "load_runs", lambda store: runs)
    (cost,) = pending(runs).from_zero
    for at_most in (cost - 1, cost):
        assert main(["todo", "--at-most", str(at_most)]) == 0
        printed = capsys.readouterr().out.splitlines()
        assert len(printed) == (cost <= at_most)


def test_todo_hours_keeps_the_lines_that_finish_here_in_time_timing_a_line_no_further_than_it_must(monkeypatch, capsys):
    """`todo --hours H`: a Still to run line by its jobs' member-steps from step 0 at their pace here (stubbed: one
    second a member-step), longest first on --cores workers. A line whose longest job alone is over H is dropped
    without timing the rest."""
    from test_endpoints import three_lrs

    from core.cli import todo
    from core.experiments import pace
    from core.experiments.recipe import CRITERION_SWEEPS
    from core.report.pending import pending

    line = next(c for c in CRITERION_SWEEPS if "--task reverse" in c)
    runs = three_lrs().assign(command=line)
    monkeypatch.setattr(todo.st, "load_runs", lambda store: runs)
    timed = []
    monkeypatch.setattr(pace, "member_step_seconds", lambda job, device: timed.append(job) or 1.0)
    monkeypatch.setattr(pace.os, "getloadavg", lambda: (0.0, 0.0, 0.0))  # an idle machine: no busy line first
    (row,) = pending(runs).itertuples()
    hours = [s / 3600 for s in row.job_steps]
    for cores in (1, 2):
        took = pace.wall_hours(hours, cores)
        for limit, shown in ((took, 1), (took * 0.99, 0)):
            timed.clear()
            assert main(["todo", "--hours", str(limit), "--cores", str(cores)]) == 0
            out, err = capsys.readouterr()
            assert len(out.splitlines()) == shown
            alone = max(hours) > limit
            said = "alone" if alone else f"# {took:.1f} h on {cores} cores (longest job {max(hours):.1f} h)"
            assert said in err.splitlines()[0] and row.line in err.splitlines()[0]
            assert len(timed) == (1 if alone else len(hours))  # an over-long line: one job timed


@pytest.mark.parametrize(("load", "cpus", "cores", "said"), [(2.1, 2, 2, True), (0.2, 2, 2, False), (1.0, 4, 2, False)])
def test_todo_hours_says_first_when_other_work_holds_the_cores_its_paces_are_timed_on(
    monkeypatch, capsys, load, cpus, cores, said
):
    """A pace timed beside another sweep runs about twice as slow: `todo --hours` says so on stderr, before any line,
    where the load leaves fewer than --cores CPUs free, and says nothing on a machine with those cores free."""
    from test_endpoints import three_lrs

    from core.cli import todo
    from core.experiments import pace
    from core.experiments.recipe import CRITERION_SWEEPS

    line = next(c for c in CRITERION_SWEEPS if "--task reverse" in c)
    monkeypatch.setattr(todo.st, "load_runs", lambda store: three_lrs().assign(command=line))
    monkeypatch.setattr(pace, "member_step_seconds", lambda job, device: 1.0)
    monkeypatch.setattr(pace.os, "getloadavg", lambda: (load, 0.0, 0.0))
    monkeypatch.setattr(pace.os, "cpu_count", lambda: cpus)
    assert main(["todo", "--hours", "1", "--cores", str(cores)]) == 0
    first = capsys.readouterr().err.splitlines()[0]
    assert (f"# load {load:.1f} on {cpus} CPUs leaves fewer than the {cores} free" in first) == said
    assert said or first.startswith("# over 1 h") or " h on " in first  # else the first line is a line's estimate


def test_todo_into_a_scratch_store_carries_from_the_store_it_read_on_the_lines_that_raise_its_runs(monkeypatch, capsys):
    """A Still to run line retargeted with --into gets `--carry-from` the store todo read, so a member that store
    holds stopped before the old cap is not trained again."""
    from test_endpoints import three_lrs

    from core.cli import todo
    from core.experiments.recipe import CRITERION_SWEEPS

    line = next(c for c in CRITERION_SWEEPS if "--task reverse" in c)
    monkeypatch.setattr(todo.st, "load_runs", lambda store: three_lrs().assign(command=line))
    assert main(["todo", "--into", "/tmp/scratch"]) == 0
    (printed,) = capsys.readouterr().out.splitlines()
    assert printed.endswith(" --carry-from data")
    assert main(["todo"]) == 0 and "--carry-from" not in capsys.readouterr().out  # the lines as they are


def test_todo_hours_into_a_scratch_store_times_only_what_is_left_there(monkeypatch, capsys):
    """With --into, a job's member-steps are the fewer of pending's count from step 0 and the dry run's count in that
    store (members going on from a checkpoint or a shorter cap's end state, with --carry-from the store todo read):
    a job the scratch store has all but finished no longer sets the line's hours."""
    from test_endpoints import three_lrs

    from core.cli import todo
    from core.experiments import outlook, pace
    from core.experiments.recipe import CRITERION_SWEEPS
    from core.report.pending import pending

    line = next(c for c in CRITERION_SWEEPS if "--task reverse" in c)
    runs = three_lrs().assign(command=line)
    monkeypatch.setattr(todo.st, "load_runs", lambda store: runs)
    monkeypatch.setattr(pace, "member_step_seconds", lambda job, device: 1.0)
    monkeypatch.setattr(pace.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    (row,) = pending(runs).itertuples()
    longest = row.trained[row.job_steps.index(max(row.job_steps))]
    there = {name: 100 if name == longest else 10**12 for name in row.trained}  # the longest job nearly done there
    seen, claimed = [], [0] * len(there)

    def dry_run(store, jobs):
        seen.append((store, {job.carry_from for job in jobs}))
        return pd.DataFrame({"attention": list(there), "member-steps": list(there.values()), "claimed": claimed})

    monkeypatch.setattr(outlook, "outlook", dry_run)
    hours = [(100 if name == longest else steps) / 3600 for name, steps in zip(row.trained, row.job_steps)]
    took = pace.wall_hours(hours, 2)
    assert main(["todo", "--hours", str(took), "--into", "/tmp/scratch"]) == 0
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 1 and seen == [("/tmp/scratch", {"data"})]
    assert f"# {took:.1f} h on 2 cores (longest job {max(hours):.1f} h)" in err
    assert main(["todo", "--hours", str(took)]) == 0 and not capsys.readouterr().out  # from step 0 it does not fit
    claimed[row.trained.index(longest)] = 3  # a sweep training that job there now: its dry run counts those as none
    assert main(["todo", "--hours", str(took), "--into", "/tmp/scratch"]) == 0
    out, err = capsys.readouterr()
    assert not out and f"# a sweep running into /tmp/scratch holds the members of {longest} now" in err


def test_todo_writes_a_lines_parked_jobs_back_into_the_scratch_store_before_the_line(monkeypatch, tmp_path, capsys):
    """A line with jobs parked in the store (core.experiments.parking): `todo --into S` prints the `park --into S`
    line that writes them back before the sweep line, so a shell loop over its lines trains only the rest; without
    --into, stderr says they are parked."""
    import shlex

    from test_endpoints import three_lrs

    from core.cli import todo
    from core.experiments import parking
    from core.experiments.recipe import CRITERION_SWEEPS
    from core.report.pending import pending

    line = next(c for c in CRITERION_SWEEPS if "--task reverse" in c)
    runs = three_lrs().assign(command=line)
    monkeypatch.setattr(todo.st, "load_runs", lambda store: runs)
    (want,) = pending(runs).line
    parking.folder(tmp_path, want).mkdir(parents=True)
    monkeypatch.setattr(parking, "parked_share", lambda store, line, jobs: {jobs[0].model.attention: 0.4})
    assert main(["todo", "--store", str(tmp_path), "--into", "/tmp/scratch"]) == 0
    park, sweep = capsys.readouterr().out.splitlines()
    assert shlex.split(park) == [
        "python",
        "-m",
        "core",
        "park",
        want,
        "--into",
        "/tmp/scratch",
        "--store",
        str(tmp_path),
    ]
    assert "--store /tmp/scratch " in sweep
    assert main(["todo", "--store", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == [want] and "runs of 1 jobs of this line are parked in" in err


def test_todo_hours_says_in_how_many_parts_a_job_over_the_hours_fits(monkeypatch):
    """A job over H hours: the --part K/N that splits its lrs into parts of about H each, or, past one lr a part,
    how long one lr takes."""
    from core.cli import todo
    from core.cli.land import line_jobs

    (job,) = line_jobs("python -m core sweep --task reverse --attention standard --lr 1e-4,3e-4,1e-3,3e-3,1e-2")
    assert "sweep --part K/3: 2.4 h each" in todo._parts(job, 7.3, 2.5)
    assert "over 2 h even one lr at a time: 4.0 h" in todo._parts(job, 20.0, 2.0)
