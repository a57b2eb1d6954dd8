"""One file of the store: how a run's parquet and the store's tables are written and read back.

Every file is written to a temporary name and renamed into place (atomic_write); the attention-lab
metadata lives in the parquet schema, so a reader can tell a run from a foreign or broken file
before reading any rows. core.results.store and core.results.index build on this; it imports nothing of theirs.
"""

import json
import os
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..training.criterion import SOLVED
from . import schema

META_KEY = b"attention_lab"
FORMAT = 1
RUN_COLUMNS = list(schema.RUN_ROW)
DENSE = 16  # evaluations kept at every eval_every from step 0; then 8 per doubling of the step


def kept_step(step: int, eval_every: int) -> bool:
    """Whether a curve keeps this evaluation: every one up to DENSE x eval_every, then every 2^k-th one in the k-th
    doubling past it, so a curve holds the same density on a log axis whatever its length and a 12,800-step
    run's file stays in one 4 KiB disk block. Depends on the step alone: runs of one config at any cap keep the same
    steps, and thinning a thinned curve changes nothing."""
    base = DENSE * eval_every
    if step <= base:
        return True
    doubling = ((step - 1) // base).bit_length()  # k for a step in (2^(k-1) base, 2^k base]
    return step % (eval_every << doubling) == 0


def thin_curve(df: pd.DataFrame, eval_every: int, keep=()) -> pd.DataFrame:
    """df's rows (step, metric, value) at the kept steps (kept_step), its last step, its first at validation
    accuracy SOLVED (what time_to_solve reads) and the steps in `keep` (a criterion run's solve step): the
    numbers stored beside them (solve step, stop, final metrics and the last fifth's improvement) are computed
    from every evaluation before this."""
    if df.empty:
        return df
    steps = df.step.drop_duplicates()
    last, keep = steps.max(), {int(k) for k in keep if k is not None and k == k}  # k == k: not NaN
    first = df.step[(df.metric == "val_acc") & (df.value >= SOLVED)]
    keep |= {int(first.min())} if len(first) else set()  # time to solve: the first evaluation at SOLVED
    ok = {s for s in steps if s == last or s in keep or kept_step(int(s), eval_every)}
    return df if len(ok) == len(steps) else df[df.step.isin(ok)].reset_index(drop=True)


def reason(err: BaseException) -> str:
    """An error as one line: its first (pyarrow's thrift errors run over several), or its type's name."""
    text = str(err).strip()
    return text.splitlines()[0].strip() if text else type(err).__name__


def atomic_write(path: Path, write) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.{os.getpid()}.tmp"  # dot-prefixed: never globbed by readers
    try:
        write(tmp)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_table(path: Path, df: pd.DataFrame, meta: dict) -> None:
    """df's columns with `meta` as the file's attention_lab metadata. pandas' own schema entry is not kept (about
    1.4 KB, a fifth of a run file): every column is a plain Arrow type that pandas reads back as it was."""
    table = pa.Table.from_pandas(df, preserve_index=False)
    _write(Path(path), table.replace_schema_metadata({META_KEY: json.dumps(meta)}))


def write_run_table(path: Path, df: pd.DataFrame, meta: dict) -> None:
    """A run's metrics in one 4 KiB disk block (write_table would take two or three): no Arrow schema copy (it
    repeats the metadata, base64), compact JSON, no column statistics (a run file is read whole),
    and dictionaries only for the repeated strings. Values are float32: the evaluated metrics are float32
    tensors' values, exact in it; only timings and the running train-loss mean lose digits past the seventh.
    Rows go metric by metric, each split into its bytes' streams (BYTE_STREAM_SPLIT): a metric's neighbouring
    values share their high bytes, which zstd then finds."""
    df = df.astype({"value": np.float32}).sort_values(["metric", "step"], kind="stable")
    table = pa.Table.from_pandas(df, preserve_index=False).replace_schema_metadata(None)
    text = json.dumps(meta, separators=(",", ":"))

    def write(tmp):
        with pq.ParquetWriter(
            tmp,
            table.schema,
            compression="zstd",
            compression_level=19,
            store_schema=False,
            write_statistics=False,
            use_dictionary=["run_id", "metric"],
            use_byte_stream_split=["value"],
        ) as writer:
            writer.write_table(table)
            writer.add_key_value_metadata({META_KEY: text})

    atomic_write(Path(path), write)


def _write(path: Path, table: pa.Table) -> None:
    atomic_write(path, lambda tmp: pq.write_table(table, tmp, compression="zstd"))


def slim(path: Path, run: bool = False) -> bool:
    """Rewrite a file in today's layout (write_run_table's for a run file: its curve thinned as thin_curve does,
    its values float32; else without pandas' schema entry), its attention_lab metadata unchanged (atomically: a
    kill mid-way leaves the old file); False where it is already in that layout, or cannot be read (readers set
    such a file aside with their own warning; it is left exactly as it is)."""
    try:
        f = pq.ParquetFile(path)
        table, stored = f.read(), set(f.metadata.metadata or {})
    except Exception:  # noqa: BLE001 - not a whole parquet file: not ours to rewrite
        return False
    meta = table.schema.metadata or {}
    if META_KEY not in meta:
        return False
    if not run:
        if set(meta) == {META_KEY}:
            return False
        _write(Path(path), table.replace_schema_metadata({META_KEY: meta[META_KEY]}))
        return True
    info = json.loads(meta[META_KEY])
    df, every = table.to_pandas(), (info.get("train") or {}).get("eval_every")
    thin = thin_curve(df, every, [(info.get("final") or {}).get("solve_step")]) if every else df
    if stored == {META_KEY} and len(thin) == len(df) and _split_values(f):
        return False
    write_run_table(Path(path), thin, info)
    return True


def _split_values(f: pq.ParquetFile) -> bool:
    """Whether a run file holds its values as write_run_table writes them (float32, BYTE_STREAM_SPLIT)."""
    if f.metadata.num_row_groups == 0 or "value" not in f.schema_arrow.names:
        return True  # nothing to rewrite
    column = f.metadata.row_group(0).column(f.schema_arrow.names.index("value"))
    return column.physical_type == "FLOAT" and "BYTE_STREAM_SPLIT" in column.encodings


def read_meta(path: Path) -> dict:
    meta = pq.read_schema(path).metadata or {}
    if META_KEY not in meta:
        raise ValueError("no attention_lab metadata")
    return json.loads(meta[META_KEY])


def _footer_schema(f) -> pa.Schema:
    """The Arrow schema in a parquet file's footer. pyarrow's reader directly: ParquetFile also indexes nested
    column paths, half the cost of a cold read of a store's run files."""
    try:
        reader = pq.core._parquet.ParquetReader()
    except AttributeError:  # a pyarrow that moved it: the public way
        return pq.read_schema(f)
    reader.open(f)
    return reader.schema_arrow


def read_run_meta(path: Path) -> dict:
    """A run file's metadata, once its metadata fields and its metrics columns are as core.results.schema says
    (ValueError naming the field otherwise); only the footer is read."""
    with pa.OSFile(str(path)) as f:  # a plain file handle: a third faster than letting Arrow resolve a filesystem
        arrow = _footer_schema(f)
    if META_KEY not in (arrow.metadata or {}):
        raise ValueError("no attention_lab metadata")
    schema.check_arrow(arrow, schema.METRICS)
    meta = json.loads(arrow.metadata[META_KEY])
    schema.check_run_meta(meta)
    name = os.path.basename(path)
    if f"{meta['run_id']}.parquet" != name:  # a reader looks a run up by its file name: the two must agree
        raise ValueError(f"run_id: {meta['run_id']!r} does not match the file name {name}")
    return meta


def run_path(store, run_id: str) -> Path:
    return Path(store) / "runs" / f"{run_id}.parquet"


def weights_path(store, run_id: str) -> Path:
    return Path(store) / "weights" / f"{run_id}.safetensors"


def model_path(store, run_id: str) -> Path:
    """The run's whole trained model: its state_dict in float32 (core.load_model reads it back)."""
    return Path(store) / "models" / f"{run_id}.safetensors"


def _named_device(command: str | None) -> str | None:
    """Where a run stored before its record held a device trained: the --device its command named, else unknown
    (None: a sweep without the flag took a GPU where there was one)."""
    found = re.search(r"--device (\S+)", command or "")
    return found.group(1) if found else None


OLD_METRICS = {"eval_loss": "test_loss", "eval_acc": "test_acc"}  # stores made before the val/test split


def member_step_seconds(meta: dict) -> float | None:
    """The seconds of one member's training step in its ensemble: the ensemble's training-step time over the
    member-steps it took. Both run on one clock, which a checkpoint carries and an extension starts afresh, so
    this holds for a run however it was trained, where train_seconds / steps_done would not (one start's wall
    time, evaluations included, over every step of the run; or the ensemble's, over an early stopper's own).
    Member-steps are the clock's tokens over one member's batch, batch_size × max_len: a sweep gives every model
    the task's sequence length as max_len (core.experiments.sweep)."""
    tokens = meta["tokens_per_s"] * meta["train_seconds"]
    if meta.get("step_seconds") is None or not tokens:
        return None
    return meta["step_seconds"] / (tokens / (meta["train"]["batch_size"] * meta["model"]["max_len"]))


def run_row(meta: dict) -> dict:
    """load_runs' row of one run's metadata, as read_run_meta returns it (checked there, once)."""
    m, t, tr = meta["model"], meta["task"], meta["train"]
    params = meta.get("params", {})
    final = {OLD_METRICS.get(k, k): v for k, v in meta["final"].items()}
    return {
        "run_id": meta["run_id"],
        "attention": m["attention"],
        "task": t["name"],
        "n_symbols": t["n_symbols"],
        "length": t["length"],
        "seed": meta["seed"],
        "n_layers": m["n_layers"],
        "d_model": m["d_model"],
        "n_heads": m["n_heads"],
        "d_head": m["d_head"],
        "n_kv_heads": m["n_kv_heads"],
        "mlp": m["mlp"],
        "vocab_size": m["vocab_size"],
        "max_len": m["max_len"],
        "steps": tr["steps"],
        "batch_size": tr["batch_size"],
        "lr": tr["lr"],
        "precision": tr.get("precision", "fp32"),  # absent: fp32, the default (left out of the run id)
        "schedule": tr.get("schedule", "cosine"),  # absent: the defaults (left out of the run id)
        "until": tr.get("until", "steps"),
        "status": meta["status"],
        # why it stopped (core.training.criterion.STOPS); absent: trained to its steps, or diverged
        "stop": meta.get("stop", "diverged" if meta["status"] == "diverged" else "cap"),
        "solve_step": final.get("solve_step"),  # first evaluation at validation accuracy >= SOLVED (criterion runs)
        "stop_step": final.get("stop_step", meta["steps_done"]),
        "val_loss": final.get("val_loss"),  # absent (None) in stores made before the split
        "val_acc": final.get("val_acc"),
        "test_loss": final.get("test_loss"),
        "test_acc": final.get("test_acc"),
        "eval_loss": final.get("test_loss"),  # aliases of the test metrics, for old readers
        "eval_acc": final.get("test_acc"),
        "train_loss": final.get("train_loss"),
        "val_loss_drop": final.get("val_loss_drop"),  # relative fall of val loss over the last fifth of steps
        "val_acc_gain": final.get("val_acc_gain"),
        "params_attention": params.get("attention"),
        "params_total": sum(params.values()) if params else None,
        "train_seconds": meta["train_seconds"],
        "step_seconds": meta.get("step_seconds"),  # absent from stores written before it was measured
        "n_ensemble": meta["n_ensemble"],
        "threads": meta.get("threads"),  # absent from stores written before workers existed
        "device": meta.get("device") or _named_device(meta["provenance"]["command"]),
        "steps_done": meta["steps_done"],
        "steps_from": meta.get("steps_from"),  # absent from runs stored before it was recorded: unknown
        "seconds_per_member_step": member_step_seconds(meta),
        "tokens_per_s": meta["tokens_per_s"],
        **{f"params_{k}": v for k, v in params.items()},
        "date": meta["provenance"]["date"],
        "command": meta["provenance"]["command"],
    }
