"""The bundled data/ loads, covers the lr x seed grid made by the documented commands, and is small."""

from pathlib import Path

import pandas as pd

from core import findings, sweep
from core import store as st
from core.attention import ATTENTION
from core.config import LR_GRID, TrainConfig
from core.store import BUNDLED_SWEEP
from core.tasks import TASKS

DATA = Path(__file__).resolve().parents[1] / "data"
SEEDS = 5


def test_bundled_runs_cover_the_lr_grid_of_todays_configs():
    runs = st.load_runs(DATA)
    assert set(runs.status) <= {"ok", "diverged"}
    jobs = sweep.plan(list(ATTENTION), list(TASKS), SEEDS, TrainConfig(eval_every=50), lrs=LR_GRID)
    expected = {rid for j in jobs for rid in j.run_ids().values()}
    assert set(runs.run_id) == expected, "data/ is stale: regenerate it with the README's command"
    grid = runs.groupby(["attention", "task", "lr"]).seed.apply(sorted)
    assert len(grid) == len(ATTENTION) * len(TASKS) * len(LR_GRID) and all(s == list(range(SEEDS)) for s in grid)
    assert (runs.n_ensemble == SEEDS * len(LR_GRID)).all()  # every member trained in its configuration's ensemble


def test_bundled_provenance_names_the_documented_command():
    for p in st.provenance_of(DATA):
        assert p["command"] == BUNDLED_SWEEP and p["versions"]["torch"].startswith("2.13")
    readme = (DATA.parent / "README.md").read_text()
    assert BUNDLED_SWEEP in readme


def test_bundled_metrics_load_and_weights_are_kept_for_the_best_lr_runs():
    runs = st.load_runs(DATA)
    m = st.load_metrics(DATA, runs.run_id[:5])
    assert set(m.metric) >= {"train_loss", "val_loss", "val_acc", "test_loss", "test_acc", "update_qk.0"}
    best = set(findings.at_best_lr(runs).run_id)
    kept = {p.stem for p in (DATA / "weights").glob("*.safetensors")}
    assert kept == best  # `python -m core prune --store data`
    layers = st.load_head_weights(DATA, next(iter(best)))
    assert layers[0]["W_QK"].shape == (4, 64, 64)


def test_the_matched_baselines_cover_every_run():
    init = st.load_table(DATA, "analysis", "init")
    rand = st.load_table(DATA, "analysis", "random")
    assert set(init.run_id) == set(st.load_runs(DATA).run_id)
    assert set(rand.attention) == set(ATTENTION)
    fixed = rand[rand.by_construction]
    assert {("tied_qk", "cos_QK"), ("tied_qkv", "cos_QV")} <= set(zip(fixed.attention, fixed.metric))
    assert not set(fixed.attention) & {"standard", "stacked", "bilinear"}


def test_standard_at_its_best_lr_solves_every_task_on_every_seed():
    best = findings.at_best_lr(st.load_runs(DATA))
    acc = best[best.attention == "standard"].groupby("task").test_acc.min()
    assert len(acc) == len(TASKS) and (acc >= findings.SOLVED).all(), acc


def test_bundled_data_is_small_enough_for_community_cloud():
    size = sum(p.stat().st_size for p in DATA.rglob("*") if p.is_file())
    assert size < 30 * 2**20
    assert isinstance(st.load_named(DATA, "bench"), pd.DataFrame)


def test_the_bundled_sweep_measured_itself():
    """README's sweep wall time and utilisation come from data/bench/sweep-*.parquet, written by that sweep."""
    rec = st.load_named(DATA, "bench").query("kind == 'sweep'")
    assert len(rec) == 1
    rec = rec.iloc[0]
    n_jobs = len(ATTENTION) * len(TASKS)
    assert (rec.jobs, rec.runs, rec.steps) == (n_jobs, n_jobs * SEEDS * len(LR_GRID), 800)
    assert 0 < rec.utilisation < 1 and abs(rec.utilisation - rec.gflops / rec.peak_gflops) < 1e-9
    assert rec.utilisation < rec.step_utilisation < 1  # the steps alone: no evaluation, start-up or waiting
    (path,) = (DATA / "bench").glob("sweep-*.parquet")
    assert st.read_meta(path)["provenance"]["command"] == BUNDLED_SWEEP
    readme = (DATA.parent / "README.md").read_text()
    minutes, seconds = divmod(round(rec.seconds), 60)
    assert f"{minutes} min {seconds} s" in readme and f"{rec.step_utilisation:.0%}" in readme
