"""A stored curve keeps every early evaluation and a log-spaced few later ones (runfile.thin_curve); the numbers
stored beside it (solve step, final metrics) are those of every evaluation, and `index --slim` thins old files."""

import json

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from tiny import tiny_run

from core.analysis import curves
from core.experiments.run_job import record
from core.results import runfile
from core.results import store as st


def _curve(steps, solve_at: int) -> pd.DataFrame:
    rows = [(s, "val_acc", 0.99 if s >= solve_at else 0.5) for s in steps]
    return pd.DataFrame(rows + [(s, "val_loss", 1.0 / (1 + s)) for s in steps], columns=["step", "metric", "value"])


def test_every_early_evaluation_is_kept_then_eight_per_doubling_whatever_the_cap():
    kept = lambda cap: [s for s in range(0, cap + 1, 50) if runfile.kept_step(s, 50)]  # noqa: E731
    assert kept(800) == list(range(0, 801, 50))  # the first DENSE evaluations: all of them
    assert len(kept(6400)) == 17 + 3 * 8 and len(kept(12800)) == 17 + 4 * 8
    assert kept(12800)[: len(kept(6400))] == kept(6400)  # one config at two caps keeps the same steps
    assert kept(12800)[-3:] == [11200, 12000, 12800]
    long = _curve(range(0, 12801, 50), solve_at=99999)
    once = runfile.thin_curve(long, 50)
    pd.testing.assert_frame_equal(runfile.thin_curve(once, 50), once)  # thinning a thinned curve: no change


def test_the_solve_step_and_the_last_step_survive_so_time_to_solve_reads_the_same():
    full = _curve(list(range(0, 5001, 50)) + [5030], solve_at=1650)  # solved between kept steps; stopped off-grid
    blip = full.assign(value=full.value.where(~((full.metric == "val_acc") & (full.step == 1250)), 0.97))
    thin = runfile.thin_curve(blip, 50, keep=[1700])  # a stored solve step off the kept grid
    assert set(thin.step) >= {1250, 1700, 5030} and 1600 in set(thin.step) and {1550, 1650} & set(thin.step) == set()
    for curve in (full, blip):  # time_to_solve reads the first evaluation at SOLVED, kept whatever the grid
        got = curves.time_to_solve(runfile.thin_curve(curve, 50).assign(run_id="r")).item()
        assert got == curves.time_to_solve(curve.assign(run_id="r")).item() in (1250, 1650)
    assert runfile.thin_curve(full.iloc[:0], 50).empty
    assert len(runfile.thin_curve(full, 50, keep=[None, float("nan")])) == len(runfile.thin_curve(full, 50))


@pytest.fixture(scope="module")
def long_run():
    """A run of 80 steps evaluated at every one: 81 evaluations, past the DENSE ones."""
    return tiny_run("standard", steps=80, eval_every=1)


def test_a_stored_run_keeps_the_thinned_curve_and_the_numbers_of_every_evaluation(tmp_path, long_run):
    job, result = long_run
    rid = job.run_ids()[(job.train.lr, 0)]
    metrics = pd.DataFrame(result.metrics, columns=["step", "metric", "value"])
    assert metrics.step.nunique() == 81
    st.write_run(tmp_path, record(job, result, rid, "pytest"), metrics, result.head_weights)
    stored = st.load_metrics(tmp_path)
    want = [s for s in range(81) if runfile.kept_step(s, 1)]
    assert sorted(stored.step.unique()) == want and want[-1] == 80 and len(want) == 17 + 8 + 8 + 2
    got = stored.set_index(["step", "metric"]).value.sort_index()
    full = metrics[metrics.step.isin(want)].set_index(["step", "metric"]).value.sort_index()
    assert got.dtype == np.float64  # float32 on disk, one dtype for every reader
    evaluated = ~full.index.get_level_values("metric").isin(["wall_time", "tokens_per_s", "train_loss"])
    np.testing.assert_array_equal(got[evaluated].to_numpy(), full[evaluated].to_numpy())  # the trained numbers
    np.testing.assert_allclose(got.to_numpy(), full.to_numpy(), rtol=1e-7)  # timings: float32's seven digits
    row = st.load_runs(tmp_path).iloc[0]
    assert row.val_loss == pytest.approx(result.final["val_loss"]) and row.val_loss_drop == pytest.approx(
        result.final["val_loss_drop"]
    )
    assert st.run_path(tmp_path, rid).stat().st_size <= 4096


def test_index_slim_thins_a_run_file_stored_with_every_evaluation(tmp_path, long_run):
    job, result = long_run
    rid = job.run_ids()[(job.train.lr, 0)]
    metrics = pd.DataFrame(result.metrics, columns=["step", "metric", "value"]).assign(run_id=rid)
    path = st.run_path(tmp_path, rid)
    path.parent.mkdir(parents=True)
    meta = {"format": st.FORMAT, **record(job, result, rid, "pytest"), "provenance": {"command": "pytest"}}
    runfile.write_table(path, metrics[["run_id", "step", "metric", "value"]], meta)  # as stored before: float64
    assert pq.read_schema(path).field("value").type == "double"
    assert runfile.slim(path, run=True)
    assert st.load_metrics(tmp_path).step.nunique() == 17 + 8 + 8 + 2
    assert pq.read_schema(path).field("value").type == "float"
    assert "BYTE_STREAM_SPLIT" in pq.ParquetFile(path).metadata.row_group(0).column(3).encodings
    assert json.dumps(runfile.read_meta(path)) == json.dumps(meta)  # the metadata as it was (NaN != NaN in ==)
    assert not runfile.slim(path, run=True)  # nothing left to do
