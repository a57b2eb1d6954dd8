"""The bundled data/ loads, covers the lr x seed grid made by the documented commands, and is small."""

import math
import re
from pathlib import Path

import pandas as pd
import pytest

from core.analysis import curves, findings
from core.attention.registry import ATTENTION
from core.cli.land import line_jobs
from core.experiments.lines import documented
from core.experiments.recipe import CRITERION_SWEEPS
from core.results import packs, weights
from core.results import size as sz
from core.results import store as st
from core.results.runfile import DENSE, kept_step
from core.training.config import LR_GRID
from core.training.task_specs import TASK_SPECS
from core.training.tasks import TASKS, chance_levels

DATA = Path(__file__).resolve().parents[1] / "data"
SEEDS = 5
WEIGHT_SEEDS = 2  # `python -m core prune --store data --max-seeds 2`
TASK_LENGTHS = {name: spec.length for name, spec in TASK_SPECS.items()}
TASK_SYMBOLS = {name: spec.n_symbols for name, spec in TASK_SPECS.items()}


def _bundled(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs at the bundled point: two layers, d_model 64, 4 heads of 16, each task at its default size."""
    at_size = (runs.d_head == runs.d_model // runs.n_heads) & (runs.d_model == 64) & (runs.n_heads == 4)
    default = (runs.length == runs.task.map(TASK_LENGTHS)) & (runs.n_symbols == runs.task.map(TASK_SYMBOLS))
    return runs[at_size & default & (runs.n_layers == 2)]


def test_a_sweep_run_elsewhere_on_a_gpu_is_its_recipe_lines_sweep():
    """--store, --device, --workers and the other engine flags decide where, when and how runs train and are kept,
    not which runs: a run id holds none."""
    line = CRITERION_SWEEPS[-1]
    gpu = (
        line.replace("--store data", "--store /tmp/gpu").replace(" --workers 2 --quiet", "")
        + " --device cuda --workers 4"
    )
    assert documented(gpu) == line and documented(line) == line
    assert documented(gpu + " --part 2/5 --hours 2.5 --carry-from data") == line  # which part, by when, from where
    assert documented(re.sub(r"--seeds \d+", "--seeds 6", line)) not in CRITERION_SWEEPS
    here = gpu.replace(" --device cuda", "")  # parsed on a machine that may have no GPU
    assert [j.run_ids() for j in line_jobs(here)] == [j.run_ids() for j in line_jobs(line)]


def test_every_run_is_a_documented_criterion_commands_whole_job():
    runs = st.load_runs(DATA)
    assert (runs.until == "solved").all() and (runs.schedule == "constant").all()  # no fixed-budget run is left
    planned = {frozenset(j.run_ids().values()): c for c in CRITERION_SWEEPS for j in line_jobs(c)}
    present = [ids for ids in planned if ids & set(runs.run_id)]
    assert set(runs.run_id) == set().union(*present) and all(ids <= set(runs.run_id) for ids in present)
    recorded = {documented(p["command"]) for p in st.provenance_of(DATA)}
    assert {planned[ids] for ids in present} <= recorded
    assert set(runs.stop) <= {"solved", "cap", "pruned", "diverged"}


def test_the_bundled_point_covers_every_task_parameterization_lr_and_seed_at_one_cap_a_task():
    runs = _bundled(st.load_runs(DATA))
    assert set(runs.status) <= {"ok", "diverged"}
    grid = runs.groupby(["task", "attention", "lr"]).seed.apply(set)
    for task in TASKS:
        for name in ATTENTION:
            assert all(set(range(SEEDS)) <= grid[task, name, lr] for lr in LR_GRID), (task, name)
    assert (runs.groupby("task").steps.nunique() == 1).all()  # one protocol per task: a raised cap raises all


def test_bundled_provenance_names_the_documented_command():
    commands = {p["command"] for p in st.provenance_of(DATA)}
    assert {documented(c) for c in commands} <= set(CRITERION_SWEEPS)
    assert all(p["versions"].get("torch") for p in st.provenance_of(DATA))  # recorded; an upgrade needs no retrain


def test_bundled_metrics_load_and_weights_are_kept_for_the_best_lr_runs():
    runs = st.load_runs(DATA)
    m = st.load_metrics(DATA, runs.run_id[:5])
    assert set(m.metric) >= {"train_loss", "val_loss", "val_acc", "test_loss", "test_acc", "update_qk.0"}
    best = findings.at_best_lr(findings.at_longest(findings.at_main_size(runs)))  # the pages' default view
    kept = {p.stem for p in (DATA / "weights").glob("*.safetensors")}
    main = set(best[best.seed < WEIGHT_SEEDS].run_id)
    control = runs[(runs.task == "induction") & (runs.n_layers == 1)]  # the one-layer control, at its own size
    control = findings.at_best_lr(findings.at_longest(control))
    assert kept == main | set(control[control.seed < WEIGHT_SEEDS].run_id)
    caps = _bundled(runs).groupby("task").steps.max()  # each task's cap at the bundled point
    assert runs[runs.run_id.isin(kept)].groupby("task").steps.max().equals(caps)
    models = {p.stem for p in (DATA / "models").glob("*.safetensors")}  # prune --max-model-seeds 1: seed 0's
    by_id = runs.set_index("run_id")
    assert models == {r for r in kept if by_id.seed[r] == 0 and by_id.task[r] == "induction"}  # --model-tasks
    layers = weights.load_head_weights(DATA, next(iter(kept)))
    assert layers[0]["W_QK"].shape == (4, 64, 64)


@pytest.mark.parametrize("path", sorted((DATA / "models").glob("*.safetensors")), ids=lambda p: p.stem)
def test_every_bundled_model_reloads_to_its_stored_test_numbers(path):
    """Models saved by older code (stacked's earlier W_QKV layout among them) reload to the numbers they scored."""
    import torch

    import core
    from core.training.reference import evaluate
    from core.training.tasks import make_task

    model, configs = core.load_model(DATA, path.stem)
    x, y, m = make_task(configs["task"]).eval_set("test")
    with torch.no_grad():
        loss, acc = evaluate(model, x, y, m)
    row = st.load_runs(DATA).set_index("run_id").loc[path.stem]
    assert loss == pytest.approx(row.test_loss, rel=1e-4) and acc == pytest.approx(row.test_acc)


def test_the_matched_baselines_cover_every_run():
    init = st.load_table(DATA, "analysis", "init")
    rand = st.load_table(DATA, "analysis", "random")
    assert set(init.run_id) == set(st.load_runs(DATA).run_id)
    assert set(rand.attention) == set(ATTENTION)
    fixed = rand[rand.by_construction]
    assert {("tied_qk", "cos_QK"), ("tied_qkv", "cos_QV")} <= set(zip(fixed.attention, fixed.metric))
    narrow = fixed[fixed.d_head < fixed.d_model]  # a head as wide as the model spans it: overlap_QK is 1 for all
    assert not set(narrow.attention) & {"standard", "stacked", "bilinear"}
    wide = fixed[(fixed.d_head == fixed.d_model) & fixed.attention.isin(["standard", "stacked", "bilinear"])]
    assert set(wide.metric) <= {"overlap_QK"}


def test_the_stored_weight_analyses_cover_every_kept_run_and_recompute():
    """Similarity reads these rows (80 runs' SVDs would be most of its first draw); each must be what
    similarity.analyse_run computes from the run's weights today."""
    from core.analysis.similarity import analyse_run

    kept = sorted(p.stem for p in (DATA / "weights").glob("*.safetensors"))
    stored = [st.load_table(DATA, "analysis", name) for name in ("trained", "trained_spectra")]
    assert set(stored[0].run_id) == set(stored[1].run_id) == set(kept)
    for rid in kept[:: len(kept) // 4]:
        for table, fresh in zip(stored, analyse_run(weights.load_head_weights(DATA, rid), rid)):
            mine = table[table.run_id == rid].reset_index(drop=True)
            pd.testing.assert_frame_equal(mine, fresh, check_dtype=False)


def test_the_stored_solve_steps_cover_every_run_and_recompute():
    """Learning rate reads these (every run's validation curve would be most of its first draw); each must be
    curves.time_to_solve of the run's stored curve, NaN where it never solves."""
    table = st.load_table(DATA, "analysis", "solve_steps").set_index("run_id").solve_step
    assert set(table.index) == set(st.load_runs(DATA).run_id)
    fresh = curves.time_to_solve(st.load_metrics(DATA, None, ["val_acc"]))
    pd.testing.assert_series_equal(table.dropna().sort_index(), fresh.astype(float).sort_index(), check_names=False)
    assert table.isna().sum() == len(table) - len(fresh) > 0


def test_the_stored_chance_levels_are_the_tasks_own():
    """The pages draw chance lines from this table (torch-free); it must be what the tasks compute today."""
    table = st.load_table(DATA, "analysis", "chance")
    for task in TASKS:
        stored = table[table.task == task].set_index("guesser").accuracy.to_dict()
        assert stored == pytest.approx(chance_levels(task), abs=1e-12), task


def test_the_stored_random_baselines_cover_every_shape_and_recompute():
    """The pages read random baselines from this table (D=576 takes tens of seconds to compute)."""
    from core.analysis.similarity import random_baseline

    table = st.load_table(DATA, "analysis", "random_shapes")
    pre = st.load_named(DATA, "pretrained")
    want = set(zip(st.load_runs(DATA).d_model, st.load_runs(DATA).d_head)) | set(zip(pre.d_model, pre.d_head))
    assert set(zip(table.d_model, table.d_head)) == want
    got = table[(table.d_model == 64) & (table.d_head == 16)].set_index("metric")["mean"]
    assert got.to_dict() == pytest.approx(random_baseline(64, 16).set_index("metric")["mean"].to_dict(), nan_ok=True)


def test_standard_at_its_best_lr_meets_the_criterion_on_every_task_and_seed():
    """Every task is trained to the criterion at the bundled point: standard meets it on every seed. Its test
    accuracy at the stop (chosen on validation) sits at the threshold, a seed a little under it at most."""
    best = findings.at_best_lr(findings.at_longest(findings.at_main_size(st.load_runs(DATA))))
    mine = best[best.attention == "standard"]
    assert set(mine.task) == set(TASKS) and (mine.until == "solved").all() and (mine.stop == "solved").all()
    assert mine.test_acc.min() >= 0.9, mine.groupby("task").test_acc.min()


def test_bundled_data_is_small_enough_for_community_cloud():
    # its files, and on disk in whole 4 KiB blocks; the runs index too where a read has built it
    assert max(sz.size(DATA, caches=True)) < sz.LIMIT
    # every run packed (core.results.packs), none a loose file filling a block of its own
    assert sorted(packs.packed(DATA)) == sorted(st.load_runs(DATA).run_id) and not packs.loose_paths(DATA)
    # curves thinned (runfile.kept_step): 16 evaluations after step 0, then 8 a doubling (73 to 102,400, not 2,048);
    # beside them thin_curve keeps only a run's last step, its solve step and its first at SOLVED
    steps = st.load_metrics(DATA, metrics=["val_acc"]).groupby("run_id").step.unique()
    train = {rid: meta["train"] for rid, meta, _ in packs.all_metas(DATA)}
    every = {rid: t["eval_every"] for rid, t in train.items()}
    extra = {r: [s for s in ss if s and not kept_step(int(s), every[r])] for r, ss in steps.items()}
    assert len(steps) == len(every) and max(map(len, extra.values())) <= 3
    doublings = {r: max(0, math.ceil(math.log2(t["steps"] / (DENSE * t["eval_every"])))) for r, t in train.items()}
    assert all(len(ss) <= 1 + DENSE + DENSE // 2 * doublings[r] + 3 for r, ss in steps.items())
    assert isinstance(st.load_named(DATA, "bench"), pd.DataFrame)


def test_the_bundled_sweeps_measured_themselves():
    """Each bundled sweep wrote its own record (docs/reproduce.md's compute column is read from these)."""
    records = {
        documented(st.read_meta(p)["provenance"]["command"]): p for p in (DATA / "bench").glob("sweep-*.parquet")
    }
    assert set(records) <= set(CRITERION_SWEEPS)
    at_6400 = "--task associative_recall --seeds 5 --lr grid --until solved --steps 6400"
    grid = next(c for c in CRITERION_SWEEPS if at_6400 in c)
    rec = pd.read_parquet(records[grid]).iloc[0]  # the bundled associative-recall grid, trained on a CPU
    assert (rec.runs, rec.steps) == (len(ATTENTION) * SEEDS * len(LR_GRID), 6400)
    assert 0 < rec.utilisation < 1 and abs(rec.utilisation - rec.gflops / rec.peak_gflops) < 1e-9
    assert 0 < rec.step_utilisation < 1


def test_a_recorded_command_with_its_flags_in_another_order_is_its_recipe_line():
    """argparse reads flags in any order, so the same flags in another order ran the same runs (d_head 8's mqa and
    gqa were run by hand on a lent GPU so); engine flags and the store still set aside, other values not."""
    line = CRITERION_SWEEPS[-1]
    head, *flags = line.split(" --")
    moved = " --".join([head, *reversed(flags)]).replace("--store data", "--store /tmp/x") + " --device cuda"
    assert moved != line and documented(moved) == line
    reseeded = re.sub(r"--seeds \d+", "--seeds 3", moved)  # no recipe line runs 3 seeds
    assert reseeded != moved and documented(reseeded) not in CRITERION_SWEEPS
