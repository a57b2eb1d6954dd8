"""The results store: plain files under one directory, readable without torch and without pickle.

    STORE/runs/<run_id>.parquet          tidy metrics (run_id, step, metric, value); the run's summary,
                                         configs and provenance in the parquet schema metadata
    STORE/packs/<hash>.parquet           many runs' files in one, a row each (core.results.packs): how data/
                                         keeps its runs; a run with a loose file is read from that
    STORE/weights/<run_id>.safetensors   final per-head weights of every layer (float16) and the
                                         attention patterns of a few eval examples
    STORE/bench/*.parquet, STORE/pretrained/*.parquet   tables written by `bench` and `pretrained`;
                                         bench/sweep-*.parquet: each sweep's wall time and FLOP/s
    STORE/claims/<run_id>.claim          runs being trained right now, each holding its sweep's pid
    STORE/index/runs-*.parquet           the runs table, cached (core.results.index): each file's row, checked
                                         against the file's size and mtime before it is trusted

Every file is written to a temporary name and renamed into place, and a run's parquet is written
after its weights: a run exists once its parquet does, so a kill loses at most the runs in flight.
"""

import json
import os
import warnings
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from safetensors.numpy import save

from . import index, packs, schema
from .claims import alive, drop_stale
from .packs import run_meta  # noqa: F401 - the store's interface
from .provenance import provenance
from .runfile import (  # noqa: F401 - the store's interface
    FORMAT,
    META_KEY,
    OLD_METRICS,
    RUN_COLUMNS,
    atomic_write,
    model_path,
    read_meta,
    read_run_meta,
    reason,
    run_path,
    run_row,
    thin_curve,
    weights_path,
    write_run_table,
    write_table,
)


def remove_stale_tmp(store) -> int:
    """Delete the temporary files of writers that were killed mid-write (their pid is gone), and the
    claims of sweeps that died; a live writer's are left alone. Returns how many were removed."""
    found = [*Path(store).glob("*/.*.tmp"), *Path(store).glob("scratch/*/.*.tmp")]  # scratch: checkpoints, lineage
    tmps = [(p, p.name.rsplit(".", 2)[1]) for p in found]  # .<name>.<pid>.tmp
    stale = [p for p, pid in tmps if pid.isdigit() and not alive(int(pid))]
    for p in stale:
        p.unlink(missing_ok=True)
    return len(stale) + drop_stale(store)


# ---- runs --------------------------------------------------------------------------------
def has_run(store, run_id: str) -> bool:
    return run_path(store, run_id).exists() or run_id in packs.packed(store)


def run_problem(store, run_id: str) -> str | None:
    """None when the run (runs/<id>.parquet, else its pack's row) is a whole run (its metadata and metrics columns
    as core.results.schema says), else why not."""
    try:
        run_row(run_meta(store, run_id))
    except Exception as err:  # noqa: BLE001 - truncated, empty, garbled, crafted: each one named reason
        return reason(err)[:200]
    return None


UNREADABLE = "unreadable"  # STORE/unreadable/: run files a resumed sweep could not read, kept, never deleted
PARKED = "parked"  # a long line's finished jobs between sessions (core.experiments.parking); no reader opens it


def stored_whole(store, run_id: str) -> bool:
    """Whether the run is stored and readable. A run file that cannot be read is moved aside to
    STORE/unreadable/<id>.<time>.parquet (a warning names both), so a resumed sweep trains the run again."""
    path = run_path(store, run_id)
    if not path.exists():  # a packed run that cannot be read is trained again, its new loose file read instead
        return run_id in packs.packed(store) and run_problem(store, run_id) is None
    why = run_problem(store, run_id)
    if why is None:
        return True
    aside = Path(store) / UNREADABLE / f"{run_id}.{datetime.now(UTC):%Y%m%dT%H%M%S%f}.parquet"
    aside.parent.mkdir(exist_ok=True)
    os.replace(path, aside)
    warnings.warn(f"moved runs/{run_id}.parquet to {UNREADABLE}/{aside.name} ({why}); training it again", stacklevel=2)
    return False


# Stored per layer: the factors where they exist; W_QK and W_OV are rebuilt from them on load.
def _compact(hw: dict) -> dict:
    keep = dict(hw)
    if "W_Q" in hw and "W_K" in hw:
        keep.pop("W_QK", None)
    if "W_V" in hw and "W_O" in hw:
        keep.pop("W_OV", None)
    return keep


def _write_tensors(path: Path, tensors: dict, metadata: dict) -> None:
    """Serialized in memory, then written as every store file is: safetensors' save_file would leave its own
    .tmpXXXXXX behind when killed, and raise its own error type for a full disk or a read-only folder."""
    data = save(tensors, metadata=metadata)
    atomic_write(path, lambda tmp: Path(tmp).write_bytes(data))


def write_run(
    store,
    summary: dict,
    metrics: pd.DataFrame,
    head_weights: list,
    patterns=None,
    examples=None,
    state_dict: dict | None = None,
):
    """Store one finished run. summary holds run_id, the configs, status and final numbers; state_dict (numpy
    arrays) is the whole model, kept in float32 so a reloaded run reproduces its numbers."""
    run_id = summary["run_id"]
    if state_dict is not None:
        tensors = {k: np.ascontiguousarray(np.asarray(v, dtype=np.float32)) for k, v in state_dict.items()}
        _write_tensors(model_path(store, run_id), tensors, {"run_id": run_id})
    meta = {"format": FORMAT, **summary, "provenance": provenance(summary.get("command"))}
    tensors = {}
    for layer, hw in enumerate(head_weights):
        for k, v in _compact(hw).items():
            tensors[f"blocks.{layer}.{k}"] = np.ascontiguousarray(np.asarray(v, dtype=np.float16))
    if patterns is not None:
        tensors["patterns"] = np.asarray(patterns, dtype=np.float16)  # (L, N, H, T, T)
        tensors["examples"] = np.asarray(examples, dtype=np.int32)  # (N, T)
    st_meta = {
        "run_id": run_id,
        "d_head": str(summary["model"]["d_head"]),
        "provenance": json.dumps(meta["provenance"]),
    }
    if tensors:  # a run carried from a store that kept none has none: no empty file to pass for its weights
        _write_tensors(weights_path(store, run_id), tensors, st_meta)
    df = metrics.assign(run_id=run_id)[["run_id", "step", "metric", "value"]]
    solve = (summary.get("final") or {}).get("solve_step", float("nan"))
    write_run_table(run_path(store, run_id), thin_curve(df, summary["train"]["eval_every"], [solve]), meta)


def _files(store, sub: str):
    folder = Path(store) / sub
    return sorted(folder.glob("*.parquet")) if folder.is_dir() else []


def load_runs(store) -> pd.DataFrame:
    """One row per stored run, read through the runs index (core.results.index) where it is current; a file that is
    not a readable run is skipped with a warning naming it."""
    return index.load_runs(store)


METRIC_COLUMNS = ["run_id", "step", "metric", "value"]


READERS = min(4, os.cpu_count() or 1)  # files read at once: decoding releases the GIL (1000 files: 0.56 s -> 0.40)


def load_metrics(store, run_ids=None, metrics=None) -> pd.DataFrame:
    """Tidy rows run_id, step, metric, value (for the given runs, or all; the given metrics, or all).
    Stores made before the val/test split name their test metrics eval_*: they come back as test_*.
    Each file is opened once; a given run without a file is left out, an unreadable one warned about."""
    ids = sorted(index.listing(store)) if run_ids is None else sorted(set(run_ids))
    names = None
    if metrics is not None:
        names = pa.array(sorted(set(metrics) | {o for o, new in OLD_METRICS.items() if new in metrics}))
    where, paths, by_pack = packs.packed(store), [], {}
    for rid in ids:  # a run with a loose file is read from it, else from its pack
        path = run_path(store, rid)
        if rid in where and not path.exists():
            by_pack.setdefault(where[rid][0], []).append(rid)
        else:
            paths.append(path)
    with ThreadPoolExecutor(max_workers=READERS) as pool:
        read = list(pool.map(lambda path: _metric_rows(path, names), paths))
        read += pool.map(lambda pack: _packed_metric_rows(pack, by_pack[pack], names), by_pack)
    tables = []
    for path, (table, err) in zip([*paths, *by_pack], read):
        if err is not None:  # warned here, in the caller's thread, in run order
            what = "pack" if path in by_pack else "run"
            warnings.warn(f"skipping {path}: not a readable attention-lab {what} ({reason(err)})", stacklevel=2)
        elif table is not None:
            tables.append(table)
    if not tables:
        return pd.DataFrame({c: [] for c in METRIC_COLUMNS})
    out = pa.concat_tables(tables, promote_options="permissive").to_pandas()
    if by_pack:  # run by run, as the loose files alone come back
        out = out.sort_values("run_id", kind="stable", ignore_index=True)
    return out.assign(metric=out.metric.replace(OLD_METRICS))


def _packed_metric_rows(pack: Path, run_ids: list[str], names) -> tuple:
    """_metric_rows of some runs of one pack."""
    try:
        t = packs.metric_rows(pack, run_ids)
        t = t.set_column(3, "value", t["value"].cast(pa.float64()))
        return (t if names is None else t.filter(pc.is_in(t["metric"], value_set=names))), None
    except FileNotFoundError:
        return None, None
    except Exception as err:  # noqa: BLE001
        return None, err


def _metric_rows(path: Path, names) -> tuple:
    """(the file's metric rows, None), (None, None) where it is absent, or (None, why it is unreadable)."""
    try:
        f = pq.ParquetFile(path)
        if META_KEY not in (f.schema_arrow.metadata or {}):
            raise ValueError("no attention_lab metadata")
        schema.check_arrow(f.schema_arrow, schema.METRICS)
        # without its schema metadata: the concatenated table takes the first file's, and a damaged pandas
        # entry there would break every file's rows in to_pandas, not just its own
        t = f.read(columns=METRIC_COLUMNS).replace_schema_metadata(None)
        value = METRIC_COLUMNS.index("value")
        t = t.set_column(value, "value", t["value"].cast(pa.float64()))  # float32 on disk; callers get one dtype
        return (t if names is None else t.filter(pc.is_in(t["metric"], value_set=names))), None
    except FileNotFoundError:
        return None, None
    except Exception as err:  # noqa: BLE001
        return None, err


def sweep_record_name() -> str:
    """bench/sweep-<UTC time>-<pid>: one record per sweep, so concurrent sweeps never overwrite each other's."""
    return f"sweep-{datetime.now(UTC):%Y%m%dT%H%M%S}-{os.getpid()}"


# ---- other tables -----------------------------------------------------------------------
def write_named(store, kind: str, name: str, df: pd.DataFrame, meta: dict | None = None) -> Path:
    path = Path(store) / kind / f"{name}.parquet"
    write_table(path, df, {"format": FORMAT, **(meta or {}), "provenance": provenance()})
    return path


def load_named(store, kind: str) -> pd.DataFrame:
    """Every table under STORE/<kind>/ concatenated; unreadable files skipped with a warning."""
    frames = []
    for path in _files(store, kind):
        try:
            read_meta(path)
            df = pd.read_parquet(path)
            schema.check_table(df, kind, path.stem)
            frames.append(df)
        except Exception as err:  # noqa: BLE001
            warnings.warn(f"skipping {path}: not a readable attention-lab table ({reason(err)})", stacklevel=2)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def load_table(store, kind: str, name: str, filters=None) -> pd.DataFrame:
    """STORE/<kind>/<name>.parquet, or an empty frame (with a warning naming it) when absent or unreadable;
    `filters` (pyarrow's, e.g. [("run_id", "in", ids)]) reads only the rows a caller needs."""
    path = Path(store) / kind / f"{name}.parquet"
    if not path.exists():
        return pd.DataFrame()
    try:
        read_meta(path)
        df = pd.read_parquet(path, filters=filters)
        schema.check_table(df, kind, name)
        return df
    except Exception as err:  # noqa: BLE001
        warnings.warn(f"skipping {path}: not a readable attention-lab table ({reason(err)})", stacklevel=2)
        return pd.DataFrame()


def provenance_of(store, runs: pd.DataFrame | None = None) -> list[dict]:
    """The distinct (command, versions, date) that made the runs in a store, newest first: one file read per
    command (its newest run), whatever the store's size. `runs`: the store's load_runs(), if at hand."""
    runs = load_runs(store) if runs is None else runs
    if runs.empty:
        return []
    out = []
    for rid in runs.sort_values("date").drop_duplicates("command", keep="last").run_id:
        try:
            out.append(run_meta(store, rid)["provenance"])
        except Exception:  # noqa: BLE001 - load_runs already warns
            continue
    return sorted(out, key=lambda p: p["date"], reverse=True)
