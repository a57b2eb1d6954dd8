"""`python -m core export`: a store's runs for the tools people already use.

- csv / parquet: `runs` (one row per run: a column per config field, `model.d_model`, `train.lr`, ..., per final
  metric `final.test_loss`, ..., per parameter count, and `cell`, every config field but the seed, hashed) and
  `metrics` (run_id, step, metric, value: long form, as DuckDB, Polars and pandas like it);
- tensorboard: one event-file directory per run, `<cell label>/seed<N>`, so TensorBoard's run regex groups a
  cell's seeds; mlflow: a local file store, one MLflow run per run with its config as params, its curves as
  metrics with steps and `cell` as a tag (group by it for seed bands); wandb: offline runs (nothing leaves the
  machine), `group` = the cell, `job_type` = the task.
The three trackers are optional (`pip install ".[export]"`); without one, the command says so in one line.
"""

import json
import os
import warnings
from pathlib import Path

import pandas as pd

from ..training.config import stable_hash
from . import packs
from . import runfile as rf
from .store import load_metrics

FORMATS = ("csv", "parquet", "tensorboard", "mlflow", "wandb")
EXTRA = 'pip install ".[export]"'


class MissingExtra(RuntimeError):
    """The exporter's package is not installed: one line naming the extra."""


def _flat(prefix: str, d: dict) -> dict:
    return {f"{prefix}.{k}": v for k, v in d.items()}


def runs_table(store) -> pd.DataFrame:
    """One row per readable run: run_id, cell, cell_label, seed, status, every config field, final metric and
    parameter count, and when and by what command it was made. attrs["skipped"]: the unreadable ones left out."""
    rows, skipped = [], 0
    for rid, meta, where in sorted(packs.all_metas(store), key=lambda r: r[0]):
        if isinstance(meta, Exception):  # left out, with a warning, as every reader does
            warnings.warn(f"skipping {where}: not a readable attention-lab run ({rf.reason(meta)})", stacklevel=2)
            skipped += 1
            continue
        configs = {"model": meta["model"], "task": meta["task"], "train": meta["train"]}
        m, task, lr = meta["model"], meta["task"]["name"], meta["train"]["lr"]
        label = f"{task}-{m['attention']}-D{m['d_model']}-H{m['n_heads']}-r{m['d_head']}-lr{lr:g}"
        rows.append(
            {
                "run_id": rid,
                "cell": stable_hash(configs),
                "cell_label": label,
                "seed": meta["seed"],
                "status": meta["status"],
                **_flat("model", meta["model"]),
                **_flat("task", meta["task"]),
                **_flat("train", meta["train"]),
                **_flat("final", meta["final"]),
                **_flat("params", meta.get("params", {})),
                "date": meta["provenance"]["date"],
                "command": meta["provenance"]["command"],
            }
        )
    table = pd.DataFrame(rows)
    table.attrs["skipped"] = skipped
    return table


def export(store, to: str, out) -> str:
    """Write the store's runs in format `to` under `out`; returns a one-line account of what was written."""
    if to not in FORMATS:
        raise ValueError(f"to: unknown {to!r}; allowed: {', '.join(FORMATS)}")
    runs = runs_table(store)
    skipped = runs.attrs["skipped"]
    if runs.empty:
        raise ValueError(f"store: no readable runs in {str(store)!r}")
    metrics = load_metrics(store, runs.run_id)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if to in ("csv", "parquet"):
        for name, df in (("runs", runs), ("metrics", metrics)):
            (df.to_csv if to == "csv" else df.to_parquet)(out / f"{name}.{to}", index=False)
        left_out = f" ({skipped} unreadable left out)" if skipped else ""
        return f"wrote {len(runs)} runs{left_out} and {len(metrics)} metric rows to {out}/runs.{to} and metrics.{to}"
    return {"tensorboard": _tensorboard, "mlflow": _mlflow, "wandb": _wandb}[to](runs, metrics, out)


def _require(module: str, to: str):
    try:
        return __import__(module, fromlist=["_"])
    except ImportError:
        raise MissingExtra(f"--to {to}: needs {module.split('.')[0]}; install the export extra: {EXTRA}") from None


def _curves(metrics: pd.DataFrame):
    for rid, g in metrics.groupby("run_id", sort=True):
        yield rid, g.sort_values(["step", "metric"])


def _tensorboard(runs, metrics, out: Path) -> str:
    writer_cls = _require("torch.utils.tensorboard", "tensorboard").SummaryWriter
    by_id = runs.set_index("run_id")
    for rid, g in _curves(metrics):
        r = by_id.loc[rid]
        with writer_cls(log_dir=str(out / f"{r.cell_label}-{r.cell[:6]}" / f"seed{r.seed}")) as writer:
            for row in g.itertuples():
                writer.add_scalar(row.metric, row.value, int(row.step))
    return f"wrote {len(by_id)} TensorBoard runs under {out} (one directory per cell, a sub-directory per seed)"


def _mlflow(runs, metrics, out: Path) -> str:
    os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")  # a local file store: MLflow 3 steers to databases,
    _require("mlflow", "mlflow")  # which mlflow-skinny leaves out
    from mlflow.entities import Metric, Param, RunTag
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=out.resolve().as_uri())
    name = "attention-lab"
    found = client.get_experiment_by_name(name)
    experiment = found.experiment_id if found else client.create_experiment(name)
    curves = dict(_curves(metrics))
    for row in runs.to_dict("records"):  # not itertuples: it renames the dotted columns
        run = client.create_run(
            experiment,
            run_name=f"{row['cell_label']}-seed{row['seed']}",
            tags={"cell": row["cell"], "run_id": row["run_id"]},
        )
        params = [
            Param(k.replace(".", "/"), json.dumps(v) if not isinstance(v, str) else v)
            for k, v in row.items()
            if k.startswith(("model.", "task.", "train.")) and v is not None and v == v
        ]
        g = curves.get(row["run_id"], pd.DataFrame(columns=["step", "metric", "value"]))
        points = [Metric(m, float(v), 0, int(s)) for s, m, v in zip(g.step, g.metric, g.value)]
        for i in range(0, max(len(points), 1), 1000):  # MLflow takes at most 1000 metrics per batch
            client.log_batch(
                run.info.run_id,
                metrics=points[i : i + 1000],
                params=params if i == 0 else [],
                tags=[RunTag("seed", str(row["seed"]))] if i == 0 else [],
            )
        client.set_terminated(run.info.run_id)
    return f"wrote {len(runs)} MLflow runs to the file store {out} (experiment {name!r}; tag `cell` groups seeds)"


def _wandb(runs, metrics, out: Path) -> str:
    wandb = _require("wandb", "wandb")
    curves = dict(_curves(metrics))
    for row in runs.to_dict("records"):
        config = {k: v for k, v in row.items() if k.startswith(("model.", "task.", "train.", "params."))}
        run = wandb.init(
            mode="offline",
            dir=str(out),
            project="attention-lab",
            group=row["cell_label"],
            job_type=row["task.name"],
            name=f"{row['cell_label']}-seed{row['seed']}",
            config=config,
            reinit=True,
        )
        g = curves.get(row["run_id"])
        if g is not None:
            for step, frame in g.groupby("step"):
                run.log(dict(zip(frame.metric, frame.value)), step=int(step))
        run.finish()
    return f"wrote {len(runs)} offline W&B runs under {out}/wandb (`wandb sync` uploads them; group = cell)"
