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
    from core.experiments import lines, recipe
    from core.results import store as st

    text = (ROOT / "docs" / "reproduce.md").read_text()
    assert all(c in text for c in recipe.CRITERION_SWEEPS)
    recorded = {lines.documented(p["command"]) for p in st.provenance_of(ROOT / "data")}
    assert recorded <= set(recipe.CRITERION_SWEEPS)


def test_an_empty_store_is_one_line(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    with pytest.raises(SystemExit) as exit_:
        main(["report", "--store", str(tmp_path / "empty"), "--out", str(tmp_path / "docs")])
    assert exit_.value.code == 2 and "--store" in capsys.readouterr().err
    assert not (tmp_path / "docs").exists()


def test_an_open_points_cap_is_raised_by_the_latest_line_that_made_it_for_every_parameterization_there():
    from core.experiments.lines import raised
    from core.experiments.recipe import CRITERION_SWEEPS

    grid, widened = CRITERION_SWEEPS[:2]  # induction's grid, then its lrs one step up (the later line)
    recorded = widened.replace("--store data", "--store /tmp/scratch") + " --device cuda"
    assert raised([recorded, grid], 12800) == widened.replace("--steps 12800", "--steps 25600")
    some = raised([recorded, grid], 12800, ("standard", "mqa"), 10)  # a later line trained some of them
    assert "--attention standard,mqa " in some and "--seeds 10 " in some and "--steps 25600 " in some
    assert "## Still to run" in (ROOT / "docs" / "reproduce.md").read_text()


def test_an_open_cells_best_lr_at_an_end_of_its_points_lrs_widens_the_raise_that_way_for_the_whole_point():
    from core.experiments.lines import beyond_edges, raised
    from core.experiments.recipe import CRITERION_SWEEPS

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
    are carried (or stop where they did again), and a fourth member the point lacks (its fresh member-steps: 200)
    runs the same in both."""
    import pandas as pd

    from core.report.pending import raise_steps

    point = pd.DataFrame({"stop": ["cap", "solved", "pruned"], "stop_step": [100, 40, 20]})
    assert raise_steps(point, 100, 200, fresh=200) == (100 + 200, 200 + 40 + 20 + 200)
    assert raise_steps(point, 100, 200, fresh=0) == (100, 260)
    # the grid only widens (the cap stays): where the point is stored, only the new lr's member trains
    assert raise_steps(point, 100, 100, fresh=100) == (100, 100 + 40 + 20 + 100)


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
    # 3 parameterizations x 10 seeds x 2 new lrs; the stored 90 runs are skipped. stacked solved 10 of 10 at no lr,
    # so its new lrs run to the cap (2 x 10 x 1,000); standard's and bilinear's best lrs solved all ten in 500 steps
    # summed, so their new lrs stop by then, plus an evaluation a seed (2 x (500 + 10 x 50) each)
    assert "| stacked (0.001), bilinear (0.01) |  | 24,000 · " in row and row.endswith(" | 60 |")  # run files added
    assert row.startswith("| 20,000 (stacked) |")  # only its 2 new lrs train: its stored runs are carried
    from_zero = row.split(" | ")[-2].split(" · ")[1]
    assert f"In all, 24,000 member-steps extended, {from_zero} from step 0" in text  # the one line's, summed


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
