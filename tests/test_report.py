"""docs/results.md and docs/reproduce.md are what `python -m core report --store data` writes today."""

import shutil
from pathlib import Path

import pandas as pd
import pytest

from core.cli import main

ROOT = Path(__file__).resolve().parents[1]
DOCS = ("results.md", "reproduce.md")


def test_the_committed_documents_equal_a_fresh_generation(tmp_path):
    assert main(["report", "--store", str(ROOT / "data"), "--out", str(tmp_path)]) == 0
    for name in DOCS:
        assert (tmp_path / name).read_text() == (ROOT / "docs" / name).read_text(), f"docs/{name} is stale"


def test_check_names_a_stale_document_and_writes_nothing(tmp_path, capsys):
    for name in DOCS:
        shutil.copy(ROOT / "docs" / name, tmp_path / name)
    assert main(["report", "--store", str(ROOT / "data"), "--out", str(tmp_path), "--check"]) == 0
    (tmp_path / "results.md").write_text((tmp_path / "results.md").read_text().replace("10/10", "9/10", 1))
    with pytest.raises(SystemExit) as exit_:
        main(["report", "--store", str(ROOT / "data"), "--out", str(tmp_path), "--check"])
    assert exit_.value.code == 1 and "stale: results.md" in capsys.readouterr().err
    assert "9/10" in (tmp_path / "results.md").read_text()  # --check leaves the file as it found it


def test_every_documented_command_and_every_sweep_record_is_in_reproduce():
    from core.experiments import recipe as prov
    from core.results import store as st

    text = (ROOT / "docs" / "reproduce.md").read_text()
    assert all(c in text for c in prov.CRITERION_SWEEPS)
    recorded = {prov.documented(p["command"]) for p in st.provenance_of(ROOT / "data")}
    assert recorded <= set(prov.CRITERION_SWEEPS)


def test_an_empty_store_is_one_line(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    with pytest.raises(SystemExit) as exit_:
        main(["report", "--store", str(tmp_path / "empty"), "--out", str(tmp_path / "docs")])
    assert exit_.value.code == 2 and "--store" in capsys.readouterr().err
    assert not (tmp_path / "docs").exists()


def test_an_open_points_cap_is_raised_by_the_latest_line_that_made_it_for_every_parameterization_there():
    from core.experiments.recipe import CRITERION_SWEEPS, NOT_YET, raised

    grid, widened = CRITERION_SWEEPS[:2]  # induction's grid, then its lrs one step up (the later line)
    recorded = widened.replace("--store data", "--store /tmp/scratch") + " --device cuda"
    assert raised([recorded, grid], 12800) == widened.replace("--steps 12800", "--steps 25600")
    some = raised([recorded, grid], 12800, ("standard", "mqa"), 10)  # a later line trained some of them
    assert "--attention standard,mqa " in some and "--seeds 10 " in some and "--steps 25600 " in some
    text = (ROOT / "docs" / "reproduce.md").read_text()
    assert "## Still to run" in text and all(c in text for c in NOT_YET)


def test_an_open_cells_best_lr_at_an_end_of_its_points_lrs_widens_the_raise_that_way_for_the_whole_point():
    from core.experiments.recipe import CRITERION_SWEEPS, beyond_edges, raised

    grid = (3e-4, 1e-3, 3e-3, 1e-2)
    assert beyond_edges(grid, {1e-2}) == (*grid, 3e-2) and beyond_edges(grid, {3e-4, 1e-3}) == (1e-4, *grid)
    assert beyond_edges(grid, {1e-3, 3e-3}) == grid and beyond_edges((1e-2,), {1e-2}) == (1e-2,)  # no grid
    wide = (1e-4, *grid, 3e-2)
    assert beyond_edges(wide, {3e-2, 1e-4}) == (3e-5, *wide, 0.1)  # the 1-3-10 ladder, both ways
    line = CRITERION_SWEEPS[0]  # induction's grid
    wide = raised([line], 12800, lrs=beyond_edges(grid, {1e-2}))
    assert wide == CRITERION_SWEEPS[1].replace("--steps 12800", "--steps 25600")  # the widening the recipe made by hand


def test_a_raises_member_steps_extend_the_censored_members_or_repeat_each_stop_from_step_0():
    """Cap 100 raised to 200: the censored member goes on 100 steps (200 from step 0), the two that stopped early
    are carried (or stop where they did again), and a fourth member the point lacks runs 200 steps in both."""
    import pandas as pd

    from core.report.pending import raise_steps

    point = pd.DataFrame({"stop": ["cap", "solved", "pruned"], "stop_step": [100, 40, 20]})
    assert raise_steps(point, 100, 200, members=4) == (100 + 200, 200 + 40 + 20 + 200)
    assert raise_steps(point, 100, 200, members=3) == (100, 260)
    # the grid only widens (the cap stays): where the point is stored, only the new lr's member trains
    assert raise_steps(point, 100, 100, members=4) == (100, 100 + 40 + 20 + 100)


def test_a_closed_point_with_a_best_lr_at_an_end_of_its_grid_gets_a_line_at_its_cap_one_lr_further_each_way():
    from test_endpoints import three_lrs

    from core.experiments.recipe import CRITERION_SWEEPS
    from core.report.pending import section

    line = next(c for c in CRITERION_SWEEPS if "--task reverse" in c)
    text = "\n".join(section(three_lrs().assign(command=line)))
    widened = line.replace("--lr grid", "--lr 0.0003,0.001,0.003,0.01,0.03").replace("--steps 6400", "--steps 1000")
    widened = widened.replace("--attention all", "--attention standard,stacked,bilinear").replace(
        "--seeds 5", "--seeds 10"
    )
    assert "0 cells are open" in text and "2 cells have their best lr at an end" in text
    row = next(r for r in text.splitlines() if widened in r)
    # 3 parameterizations x 10 seeds x 2 new lrs, each to the cap; the stored 90 runs are skipped
    assert "| stacked (0.001), bilinear (0.01) |  | 60,000 · " in row and row.endswith(" | 60 |")  # run files added
    assert row.startswith("| 20,000 (standard) |")  # only its 2 new lrs train: its stored runs are carried
    from_zero = row.split(" | ")[-2].split(" · ")[1]
    assert f"In all, 60,000 member-steps extended, {from_zero} from step 0" in text  # the one line's, summed


def test_todo_prints_each_still_to_run_line_retargeted_to_train_the_same_runs_then_the_points_not_yet_trained(
    monkeypatch, capsys
):
    """`todo --into S --device cuda --workers 4`: the Still to run line with its store, workers and device
    changed, which plans the same jobs as the line itself and records as it (recipe.documented), then NOT_YET."""
    from test_endpoints import three_lrs

    from core.cli import todo
    from core.cli.land import line_jobs
    from core.experiments.recipe import CRITERION_SWEEPS, NOT_YET, documented
    from core.report.pending import pending

    line = next(c for c in CRITERION_SWEEPS if "--task reverse" in c)
    runs = three_lrs().assign(command=line)
    monkeypatch.setattr(todo.st, "load_runs", lambda store: runs)  # a store holding these runs
    want = list(pending(runs).line)
    argv = ["todo", "--into", "/tmp/scratch", "--device", "cuda", "--workers", "4"]
    assert len(want) == 1 and main(argv) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[-len(NOT_YET) :] == [
        n.replace("--store data", "--store /tmp/scratch").replace("--workers 2", "--workers 4") + " --device cuda"
        for n in NOT_YET
    ]
    (got,) = printed[: -len(NOT_YET)]
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


def test_todo_at_most_keeps_the_lines_that_fit_counting_a_line_without_runs_as_its_dry_run_does(
    monkeypatch, capsys, tmp_path
):
    """`todo --at-most N`: a Still to run line by its member-steps from step 0 (pending), a NOT_YET line by the most
    its plan can take, which is what `sweep --dry-run` prints for it on an empty store."""
    import re

    from test_endpoints import three_lrs

    from core.cli import todo
    from core.experiments.recipe import CRITERION_SWEEPS, NOT_YET
    from core.report.pending import pending

    line = next(c for c in CRITERION_SWEEPS if "--task reverse" in c)
    runs = three_lrs().assign(command=line)
    monkeypatch.setattr(todo.st, "load_runs", lambda store: runs)
    (cost,) = pending(runs).from_zero
    for not_yet in NOT_YET:
        argv = not_yet.removeprefix("python -m core ").replace("--store data", f"--store {tmp_path}").split()
        assert main([*argv, "--dry-run"]) == 0
        most = int(re.search(r"at most ([\d,]+) member-steps", capsys.readouterr().out)[1].replace(",", ""))
        assert todo.most_steps(not_yet) == most
    for at_most in sorted({cost, cost - 1, *(todo.most_steps(n) for n in NOT_YET)}):
        assert main(["todo", "--at-most", str(at_most)]) == 0
        printed = capsys.readouterr().out.splitlines()
        assert len(printed) == (cost <= at_most) + sum(todo.most_steps(n) <= at_most for n in NOT_YET)


def test_each_job_trains_its_censored_and_new_members_to_the_cap_and_jobs_are_taken_longest_first():
    """job_steps: per parameterization, what a scratch store trains with --carry-from the point's store: its members
    censored at the cap and the ones it lacks, from step 0 to the new cap; one that stopped before the cap is
    carried. wall_hours: jobs longest first, each to the worker free first, as the sweep's pool takes them."""
    from test_endpoints import CELLS, runs

    from core.benchmarks.pace import wall_hours
    from core.report.pending import job_steps, raise_steps

    point = runs(CELLS).assign(stop_step=lambda d: d.solve_step.fillna(d.steps))
    steps = job_steps(point, 1000, 2000, ("standard", "stacked", "bilinear"), 11)  # one new seed each
    assert steps == ((0 + 1) * 2000, (3 + 1) * 2000, (0 + 1) * 2000)  # stacked: 3 censored; each: 1 new seed
    extended, from_zero = raise_steps(point, 1000, 2000, 33)
    assert sum(steps) == extended + 3 * 1000 < from_zero  # the censored from 0, not from 1000; no stop repeated
    assert wall_hours((3.0, 2.0, 2.0, 1.0), 2) == 4.0 and wall_hours((3.0, 2.0, 2.0, 1.0), 1) == 8.0
    assert wall_hours((5.0, 1.0, 1.0), 2) == 5.0  # one long job sets the wall time, not the sum over two


def test_the_pace_of_a_job_is_its_step_time_here_per_member_plus_its_share_of_evaluation():
    """member_step_seconds trains a few steps of the job here and divides by member-steps: a job of twice the
    model's width costs more per member-step than its narrow twin, timed the same way."""
    from core.benchmarks.pace import member_step_seconds
    from core.experiments.sweep import plan
    from core.training.config import TrainConfig

    train = TrainConfig(steps=400, eval_every=50, batch_size=8, until="solved", schedule="constant")
    narrow, wide = (plan(["standard"], ["reverse"], 2, train, {"d_model": d, "n_heads": 2})[0] for d in (16, 128))
    paces = [member_step_seconds(job, "cpu", steps=6, members=2) for job in (narrow, wide)]
    assert 0 < paces[0] < paces[1] < 1


def test_todo_hours_keeps_the_lines_that_finish_here_in_time_timing_a_line_no_further_than_it_must(monkeypatch, capsys):
    """`todo --hours H`: a Still to run line by its jobs' member-steps from step 0 at their pace here (stubbed: one
    second a member-step), longest first on --cores workers; a NOT_YET line by every member to the cap. A line whose
    longest job alone is over H is dropped without timing the rest."""
    from test_endpoints import three_lrs

    from core.benchmarks import pace
    from core.cli import todo
    from core.experiments.recipe import CRITERION_SWEEPS, NOT_YET
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
            assert len(out.splitlines()) == shown  # a NOT_YET line's jobs to the cap take far longer
            alone = max(hours) > limit
            said = "alone" if alone else f"# {took:.1f} h on {cores} cores (longest job {max(hours):.1f} h)"
            assert said in err.splitlines()[0] and row.line in err.splitlines()[0]
            assert len(timed) == (1 if alone else len(hours)) + len(NOT_YET)  # an over-long line: one job timed


@pytest.mark.parametrize(("load", "cpus", "cores", "said"), [(2.1, 2, 2, True), (0.2, 2, 2, False), (1.0, 4, 2, False)])
def test_todo_hours_says_first_when_other_work_holds_the_cores_its_paces_are_timed_on(
    monkeypatch, capsys, load, cpus, cores, said
):
    """A pace timed beside another sweep runs about twice as slow: `todo --hours` says so on stderr, before any line,
    where the load leaves fewer than --cores CPUs free, and says nothing on a machine with those cores free."""
    from test_endpoints import three_lrs

    from core.benchmarks import pace
    from core.cli import todo
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
    holds stopped before the old cap is not trained again; a NOT_YET line has no runs to carry and gets none."""
    from test_endpoints import three_lrs

    from core.cli import todo
    from core.experiments.recipe import CRITERION_SWEEPS, NOT_YET

    line = next(c for c in CRITERION_SWEEPS if "--task reverse" in c)
    monkeypatch.setattr(todo.st, "load_runs", lambda store: three_lrs().assign(command=line))
    assert main(["todo", "--into", "/tmp/scratch"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert [p.endswith(" --carry-from data") for p in printed] == [True] + [False] * len(NOT_YET)
    assert main(["todo"]) == 0 and "--carry-from" not in capsys.readouterr().out  # the lines as they are


def _criterion_scans(seeds: int) -> pd.DataFrame:
    """fake_scans' runs trained to the criterion (cap 800), over 3e-4, 1e-3 and 3e-3 with 1e-3 best in every cell
    (no lr at an end of its grid) and no censored seed still improving (no open cell); one command a point."""
    from fake_scans import fake_id, fake_runs

    runs = fake_runs(seeds)
    low = runs[runs.lr == 3e-3].assign(lr=3e-4)
    runs = pd.concat([runs, low.assign(run_id=[fake_id(r, "3e-4") for r in low.run_id])], ignore_index=True)
    runs.loc[(runs.lr == 1e-3) & (runs.val_loss > 1), "val_loss"] = 1.9
    solved = runs.test_acc == 1.0
    size = [
        f"--d-model {r.d_model} --d-head {r.d_head} --n-heads {r.n_heads} --length {r.length}"
        for r in runs.itertuples()
    ]
    return runs.assign(
        until="solved",
        stop=solved.map({True: "solved", False: "cap"}),
        solve_step=solved.map({True: 300.0, False: float("nan")}),
        stop_step=solved.map({True: 300, False: 800}),
        command=[
            f"python -m core sweep --task {t} --seeds {seeds} --lr 0.0003,0.001,0.003 --until solved --steps 800 "
            f"--attention all {s}"
            for t, s in zip(runs.task, size)
        ],  # fmt: skip
    )


def test_a_threshold_decided_at_fewer_than_ten_seeds_gets_a_line_for_ten_once_its_cells_are_closed():
    """Each axis's threshold against standard is decided at the setting where they part (values[1] of each axis
    in fake_scans: standard solves there, tied_qk and identity do not); with 5 seeds there, the point gets its
    line at its own cap for those parameterizations at 10 seeds, whose jobs train only the 5 new seeds a cell
    (with --carry-from, every stored run of the point's own cap is carried). At 10 seeds none is owed; a point
    whose deciding cell is open is raised first, not given seeds."""
    from fake_scans import SETTINGS

    from core.analysis import axes
    from core.report.pending import DECIDING_SEEDS, pending

    runs = _criterion_scans(5)
    todo = pending(runs)
    assert len(todo) == len(axes.AXES) and (todo.open == "").all() and (todo.edges == "").all()
    for axis, row in zip(axes.AXES, todo.itertuples()):
        names = ("standard", "tied_qk") + (("identity",) if axis != "d_head" else ())
        var = axes.AXES[axis].var.replace("_", "-")
        assert f" --{var} {SETTINGS[axis][1]} " in row.line + " " and f"--seeds {DECIDING_SEEDS} " in row.line
        assert "--steps 800 " in row.line and row.trained == names
        assert row.seeds == ", ".join(f"{n} (5)" for n in names) and row.added == len(names) * 5 * 3
        assert row.job_steps == (5 * 3 * 800,) * len(names) and row.extended == row.added * 800
    assert pending(_criterion_scans(DECIDING_SEEDS)).empty
    still = runs.assign(val_loss_drop=runs.val_loss_drop.where(runs.attention != "tied_qk", 1.0))
    again = pending(still)
    assert again.seeds.eq("").all() and again.open.str.contains("tied_qk").all()
