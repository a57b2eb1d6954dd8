"""The bundled data/ loads, covers the full default grid made by the documented command, and is small."""

from pathlib import Path

import pandas as pd

from core import store as st
from core import sweep
from core.attention import ATTENTION
from core.config import TrainConfig
from core.store import BUNDLED_SWEEP
from core.tasks import TASKS

DATA = Path(__file__).resolve().parents[1] / "data"


def test_bundled_runs_cover_the_default_grid_of_todays_configs():
    runs = st.load_runs(DATA)
    assert set(runs.status) <= {"ok", "diverged"}
    jobs = sweep.plan(list(ATTENTION), list(TASKS), 3, TrainConfig())
    expected = {rid for j in jobs for rid in j.run_ids().values()}
    assert set(runs.run_id) == expected, "data/ is stale: regenerate it with the README's command"
    grid = runs.groupby(["attention", "task"]).seed.apply(sorted)
    assert len(grid) == len(ATTENTION) * len(TASKS) and all(s == [0, 1, 2] for s in grid)


def test_bundled_provenance_names_the_documented_command():
    for p in st.provenance_of(DATA):
        assert p["command"] == BUNDLED_SWEEP and p["versions"]["torch"].startswith("2.13")
    readme = (DATA.parent / "README.md").read_text()
    assert BUNDLED_SWEEP in readme


def test_bundled_metrics_and_weights_load():
    runs = st.load_runs(DATA)
    m = st.load_metrics(DATA, runs.run_id[:5])
    assert set(m.metric) >= {"train_loss", "eval_loss", "eval_acc", "wall_time", "tokens_per_s"}
    layers = st.load_head_weights(DATA, runs.run_id.iloc[0])
    assert layers[0]["W_QK"].shape == (4, 64, 64)


def test_standard_solves_every_task_as_the_readme_says():
    runs = st.load_runs(DATA)
    acc = runs[runs.attention == "standard"].groupby("task").eval_acc.min()
    assert (acc >= 0.95).all(), acc


def test_bundled_data_is_small_enough_for_community_cloud():
    size = sum(p.stat().st_size for p in DATA.rglob("*") if p.is_file())
    assert size < 20 * 2**20
    bench = st.load_named(DATA, "bench")
    assert isinstance(bench, pd.DataFrame)


def test_the_bundled_sweep_measured_itself():
    """README's sweep wall time and utilisation come from data/bench/sweep.parquet, written by that sweep."""
    rec = st.load_named(DATA, "bench").query("kind == 'sweep'")
    assert len(rec) == 1
    rec = rec.iloc[0]
    assert (rec.jobs, rec.runs, rec.steps) == (len(ATTENTION) * len(TASKS), 3 * len(ATTENTION) * len(TASKS), 800)
    assert 0 < rec.utilisation < 1 and abs(rec.utilisation - rec.gflops / rec.peak_gflops) < 1e-9
    assert rec.utilisation < rec.step_utilisation < 1  # the steps alone: no evaluation, start-up or waiting
    assert st.read_meta(DATA / "bench" / "sweep.parquet")["provenance"]["command"] == BUNDLED_SWEEP
    readme = (DATA.parent / "README.md").read_text()
    minutes, seconds = divmod(round(rec.seconds), 60)
    assert f"{minutes} min {seconds} s" in readme and f"{rec.utilisation:.0%}" in readme
    assert f"{rec.step_utilisation:.0%}" in readme
