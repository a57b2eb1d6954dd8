"""`python -m core export`: every format read back and compared with the store it came from."""

import pandas as pd
import pytest

from core.cli import main
from core.experiments import sweep
from core.results import store as st
from core.training.config import TrainConfig


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("export") / "store"
    jobs = sweep.plan(
        ["standard", "tied_qk"],
        ["reverse"],
        2,
        TrainConfig(steps=10, eval_every=5, batch_size=8),
        {"d_model": 16, "n_heads": 2},
        [1e-3, 3e-3],
    )
    assert sweep.run(path, jobs, "cpu")["trained"] == 8
    return path


def _export(store, to, out, capsys):
    assert main(["export", "--store", str(store), "--to", to, "--out", str(out)]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("to", ["csv", "parquet"])
def test_tables_hold_a_column_per_config_field_and_the_metrics_long(store, tmp_path, capsys, to):
    _export(store, to, tmp_path, capsys)
    read = pd.read_csv if to == "csv" else pd.read_parquet
    runs, metrics = read(tmp_path / f"runs.{to}"), read(tmp_path / f"metrics.{to}")
    stored = st.load_runs(store).set_index("run_id")
    assert sorted(runs.run_id) == sorted(stored.index) and len(runs) == 8
    assert {"model.d_model", "train.lr", "train.warmup", "task.length", "final.test_loss", "cell"} <= set(runs.columns)
    for rid, loss in zip(runs.run_id, runs["final.test_loss"]):
        assert loss == pytest.approx(stored.test_loss[rid])
    assert runs.groupby("cell").seed.nunique().eq(2).all() and runs.cell.nunique() == 4  # seeds grouped by cell
    assert list(metrics.columns) == ["run_id", "step", "metric", "value"]
    pd.testing.assert_frame_equal(
        metrics.sort_values(["run_id", "step", "metric"], ignore_index=True),
        st.load_metrics(store).sort_values(["run_id", "step", "metric"], ignore_index=True),
        check_dtype=False,
    )


def test_tensorboard_event_files_hold_each_runs_curves(store, tmp_path, capsys):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    _export(store, "tensorboard", tmp_path, capsys)
    dirs = sorted(p.parent for p in tmp_path.rglob("events.out.tfevents.*"))
    assert len(dirs) == 8 and len({d.parent for d in dirs}) == 4  # a directory per cell, one per seed inside
    metrics = st.load_metrics(store)
    acc = EventAccumulator(str(dirs[0])).Reload()
    got = [(e.step, e.value) for e in acc.Scalars("test_loss")]
    runs = st.load_runs(store)
    want = [sorted(zip(g.step, g.value)) for _, g in metrics[metrics.metric == "test_loss"].groupby("run_id")]
    assert any(got == pytest.approx(w) for w in want) and len(runs) == 8


def test_mlflow_file_store_holds_params_metrics_and_the_cell_tag(store, tmp_path, capsys):
    pytest.importorskip("mlflow")
    from mlflow.tracking import MlflowClient

    _export(store, "mlflow", tmp_path, capsys)
    client = MlflowClient(tracking_uri=tmp_path.resolve().as_uri())
    runs = client.search_runs([client.get_experiment_by_name("attention-lab").experiment_id])
    assert len(runs) == 8 and len({r.data.tags["cell"] for r in runs}) == 4
    stored = st.load_runs(store).set_index("run_id")
    for r in runs:
        rid = r.data.tags["run_id"]
        assert float(r.data.params["train/lr"]) == stored.lr[rid]
        history = client.get_metric_history(r.info.run_id, "test_loss")
        assert history[-1].value == pytest.approx(stored.test_loss[rid], rel=1e-6)


def test_a_missing_tracker_is_one_line_naming_the_extra(store, tmp_path, capsys, monkeypatch):
    import builtins

    real = builtins.__import__
    monkeypatch.setattr(
        builtins,
        "__import__",
        lambda name, *a, **k: (
            (_ for _ in ()).throw(ImportError(name)) if name.split(".")[0] == "wandb" else real(name, *a, **k)
        ),
    )
    with pytest.raises(SystemExit) as err:
        main(["export", "--store", str(store), "--to", "wandb", "--out", str(tmp_path)])
    assert err.value.code == 2
    line = capsys.readouterr().err.strip()
    assert len(line.splitlines()) == 1 and 'pip install ".[export]"' in line


def test_a_bad_format_is_one_line(store, tmp_path, capsys):
    with pytest.raises(SystemExit) as err:
        main(["export", "--store", str(store), "--to", "excel", "--out", str(tmp_path)])
    assert err.value.code == 2 and "allowed: csv, parquet" in capsys.readouterr().err


def _wandb_records(path):
    """The protobuf records of an offline run's .wandb file: W&B's 7-byte header, then LevelDB-log blocks of
    32 KiB holding (crc32, length, type) chunks; types 1 (whole) and 2-4 (first, middle, last)."""
    from wandb.proto import wandb_internal_pb2

    data, pos, block, part = path.read_bytes(), 7, 32768, b""
    assert data[:4] == b":W&B"
    while pos + 7 <= len(data):
        if block - pos % block < 7:  # a block's zero-filled trailer
            pos += block - pos % block
            continue
        length, kind = int.from_bytes(data[pos + 4 : pos + 6], "little"), data[pos + 6]
        part += data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(part)
            yield record
            part = b""


def test_wandb_offline_runs_hold_the_config_group_and_curves(tmp_path, capsys):
    """On a store of one cell and two seeds: each W&B run costs seconds to set up."""
    pytest.importorskip("wandb")
    import json

    store = tmp_path / "store"
    jobs = sweep.plan(
        ["standard"], ["reverse"], 2, TrainConfig(steps=10, eval_every=5, batch_size=8), {"d_model": 16, "n_heads": 2}
    )
    sweep.run(store, jobs, "cpu")
    _export(store, "wandb", tmp_path / "out", capsys)
    files = sorted((tmp_path / "out").glob("wandb/offline-run-*/run-*.wandb"))
    assert len(files) == 2
    stored, metrics = st.load_runs(store).set_index("run_id"), st.load_metrics(store)
    groups = set()
    for path in files:
        records = list(_wandb_records(path))
        run = next(r.run for r in records if r.WhichOneof("record_type") == "run")
        config = {i.key: json.loads(i.value_json) for i in run.config.update}
        groups.add(run.run_group)
        history = [
            {i.key or "/".join(i.nested_key): json.loads(i.value_json) for i in r.history.item}
            for r in records
            if r.WhichOneof("record_type") == "history"
        ]
        losses = [h["test_loss"] for h in history if "test_loss" in h]
        match = stored[stored.seed == int(run.display_name.rsplit("seed", 1)[1])]
        assert losses[-1] == pytest.approx(match.test_loss.iloc[0]) and config["train.lr"] == match.lr.iloc[0]
        assert len(losses) == len(metrics[(metrics.run_id == match.index[0]) & (metrics.metric == "test_loss")])
    assert len(groups) == 1  # the two seeds of one cell: one group


def test_an_unreadable_run_is_left_out_with_a_warning_and_counted(store, tmp_path, capsys):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(store, copy)
    bad = sorted((copy / "runs").glob("*.parquet"))[0]
    bad.write_bytes(b"garbled")
    assert main(["export", "--store", str(copy), "--to", "csv", "--out", str(tmp_path / "out")]) == 0
    said = capsys.readouterr()
    assert "wrote 7 runs (1 unreadable left out)" in said.out and f"skipping {bad}" in said.err
