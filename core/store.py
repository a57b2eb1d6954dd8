"""The results store: plain files under one directory, readable without torch and without pickle.

    STORE/runs/<run_id>.parquet          tidy metrics (run_id, step, metric, value); the run's summary,
                                         configs and provenance in the parquet schema metadata
    STORE/weights/<run_id>.safetensors   final per-head weights of every layer (float16) and the
                                         attention patterns of a few eval examples
    STORE/bench/*.parquet, STORE/pretrained/*.parquet   tables written by `bench` and `pretrained`;
                                         bench/sweep-*.parquet: each sweep's wall time and FLOP/s
    STORE/claims/<run_id>.claim          runs being trained right now, each holding its sweep's pid

Every file is written to a temporary name and renamed into place, and a run's parquet is written
after its weights: a run exists once its parquet does, so a kill loses at most the runs in flight.
"""

import json
import os
import platform
import subprocess
import sys
import warnings
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from safetensors.numpy import load_file, save_file

from .claims import alive, stale_claims

# the command that made data/
BUNDLED_SWEEP = "python -m core sweep --attention all --task all --seeds 5 --lr grid --eval-every 50 --store data"
META_KEY = b"attention_lab"
FORMAT = 1
RUN_COLUMNS = [
    "run_id",
    "attention",
    "task",
    "seed",
    "n_layers",
    "d_model",
    "n_heads",
    "d_head",
    "n_kv_heads",
    "mlp",
    "vocab_size",
    "max_len",
    "steps",
    "batch_size",
    "lr",
    "status",
    "val_loss",
    "val_acc",
    "test_loss",
    "test_acc",
    "eval_loss",
    "eval_acc",
    "train_loss",
    "val_loss_drop",
    "val_acc_gain",
    "params_attention",
    "params_total",
    "train_seconds",
    "step_seconds",
    "n_ensemble",
    "threads",
    "steps_done",
    "seconds_per_step",
    "tokens_per_s",
]


def provenance(command: str | None = None) -> dict:
    """What made a file: the command, package versions, date (UTC)."""
    versions = {"python": platform.python_version()}
    for pkg in ("torch", "numpy", "pandas", "pyarrow", "safetensors", "attention-lab"):
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    return {
        "command": command or "python -m core " + " ".join(sys.argv[1:]),
        "versions": versions,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "git": _GIT,
    }


_ROOT = Path(__file__).resolve().parents[1]


def _git_commit(root: Path = _ROOT) -> str | None:
    """The code's commit, with '+dirty' for uncommitted changes to it; None outside a git checkout.

    Only core/ and requirements.txt count: they are what produces results, while a sweep that
    regenerates data/ changes the checkout's files itself. Read once, at import: that is the code
    this process runs, whatever changes on disk later.
    """
    try:
        run = lambda *a: subprocess.run(["git", *a], cwd=root, capture_output=True, text=True, timeout=5)  # noqa: E731
        head = run("rev-parse", "--short", "HEAD")
        if head.returncode:
            return None
        dirty = run("status", "--porcelain", "--", "core", "requirements.txt").stdout.strip()
        return head.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None


def _atomic(path: Path, write) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.{os.getpid()}.tmp"  # dot-prefixed: never globbed by readers
    try:
        write(tmp)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def remove_stale_tmp(store) -> int:
    """Delete the temporary files of writers that were killed mid-write (their pid is gone), and the
    claims of sweeps that died; a live writer's are left alone. Returns how many were removed."""
    tmps = [(p, p.name.rsplit(".", 2)[1]) for p in Path(store).glob("*/.*.tmp")]  # .<name>.<pid>.tmp
    stale = [p for p, pid in tmps if pid.isdigit() and not alive(int(pid))]
    stale += stale_claims(store)
    for p in stale:
        p.unlink(missing_ok=True)
    return len(stale)


def write_table(path: Path, df: pd.DataFrame, meta: dict) -> None:
    table = pa.Table.from_pandas(df, preserve_index=False)
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), META_KEY: json.dumps(meta)})
    _atomic(Path(path), lambda tmp: pq.write_table(table, tmp, compression="zstd"))


def read_meta(path: Path) -> dict:
    meta = pq.read_schema(path).metadata or {}
    if META_KEY not in meta:
        raise ValueError("no attention_lab metadata")
    return json.loads(meta[META_KEY])


_GIT = _git_commit()


# ---- runs --------------------------------------------------------------------------------
def run_path(store, run_id: str) -> Path:
    return Path(store) / "runs" / f"{run_id}.parquet"


def weights_path(store, run_id: str) -> Path:
    return Path(store) / "weights" / f"{run_id}.safetensors"


def has_run(store, run_id: str) -> bool:
    return run_path(store, run_id).exists()


# Stored per layer: the factors where they exist; W_QK and W_OV are rebuilt from them on load.
def _compact(hw: dict) -> dict:
    keep = dict(hw)
    if "W_Q" in hw and "W_K" in hw:
        keep.pop("W_QK", None)
    if "W_V" in hw and "W_O" in hw:
        keep.pop("W_OV", None)
    return keep


def write_run(store, summary: dict, metrics: pd.DataFrame, head_weights: list, patterns=None, examples=None):
    """Store one finished run. summary holds run_id, the configs, status and final numbers."""
    run_id = summary["run_id"]
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
    _atomic(weights_path(store, run_id), lambda tmp: save_file(tensors, str(tmp), metadata=st_meta))
    df = metrics.assign(run_id=run_id)[["run_id", "step", "metric", "value"]]
    write_table(run_path(store, run_id), df, meta)


def _files(store, sub: str):
    folder = Path(store) / sub
    return sorted(folder.glob("*.parquet")) if folder.is_dir() else []


OLD_METRICS = {"eval_loss": "test_loss", "eval_acc": "test_acc"}  # stores made before the val/test split


def _row(meta: dict) -> dict:
    m, t, tr = meta["model"], meta["task"], meta["train"]
    params = meta.get("params", {})
    final = {OLD_METRICS.get(k, k): v for k, v in meta["final"].items()}
    return {
        "run_id": meta["run_id"],
        "attention": m["attention"],
        "task": t["name"],
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
        "status": meta["status"],
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
        "steps_done": meta["steps_done"],
        "seconds_per_step": meta["train_seconds"] / max(1, meta["steps_done"]),
        "tokens_per_s": meta["tokens_per_s"],
        **{f"params_{k}": v for k, v in params.items()},
        "date": meta["provenance"]["date"],
        "command": meta["provenance"]["command"],
    }


def load_runs(store) -> pd.DataFrame:
    """One row per stored run; unreadable or foreign files are skipped with a warning naming them."""
    rows = []
    for path in _files(store, "runs"):
        try:
            rows.append(_row(read_meta(path)))
        except Exception as err:  # noqa: BLE001 - any unreadable file is skipped, never fatal
            warnings.warn(f"skipping {path}: not a readable attention-lab run ({err})", stacklevel=2)
    return pd.DataFrame(rows, columns=None if rows else RUN_COLUMNS)


def load_metrics(store, run_ids=None, metrics=None) -> pd.DataFrame:
    """Tidy rows run_id, step, metric, value (for the given runs, or all; the given metrics, or all).
    Stores made before the val/test split name their test metrics eval_*: they come back as test_*."""
    wanted = None if run_ids is None else set(run_ids)
    names = None
    if metrics is not None:
        old = {o for o, new in OLD_METRICS.items() if new in metrics}
        names = sorted(set(metrics) | old)
    frames = []
    for path in _files(store, "runs"):
        if wanted is not None and path.stem not in wanted:
            continue
        try:
            read_meta(path)
            rows = pq.read_table(path, columns=["run_id", "step", "metric", "value"],
                                 filters=None if names is None else [("metric", "in", names)])  # fmt: skip
            frames.append(rows.to_pandas())
        except Exception as err:  # noqa: BLE001
            warnings.warn(f"skipping {path}: not a readable attention-lab run ({err})", stacklevel=2)
    if not frames:
        return pd.DataFrame({"run_id": [], "step": [], "metric": [], "value": []})
    out = pd.concat(frames, ignore_index=True)
    return out.assign(metric=out.metric.replace(OLD_METRICS))


def load_head_weights(store, run_id: str) -> list[dict[str, np.ndarray]]:
    """Per layer: W_Q, W_K, W_V (H, D, r), W_O (H, r, D) where defined, and always W_QK, W_OV (H, D, D)."""
    path = weights_path(store, run_id)
    tensors = {k: v.astype(np.float32) for k, v in load_file(str(path)).items()}
    from safetensors import safe_open

    with safe_open(str(path), "np") as f:
        scale = int(f.metadata()["d_head"]) ** -0.5
    layers = []
    for layer in range(1 + max(int(k.split(".")[1]) for k in tensors if k.startswith("blocks."))):
        hw = {k.split(".", 2)[2]: v for k, v in tensors.items() if k.startswith(f"blocks.{layer}.")}
        if "W_QK" not in hw:
            hw["W_QK"] = scale * hw["W_Q"] @ hw["W_K"].transpose(0, 2, 1)
        if "W_OV" not in hw:
            hw["W_OV"] = hw["W_V"] @ hw["W_O"]
        layers.append(hw)
    return layers


def weights_readable(store, run_id: str) -> bool:
    """True when the run's weights file exists and its header is whole: safetensors checks that the header's
    tensors cover the file exactly, so a truncated or foreign file fails here without reading the tensors."""
    from safetensors import safe_open

    try:
        with safe_open(str(weights_path(store, run_id)), "np") as f:
            return bool(list(f.keys()))
    except Exception:  # noqa: BLE001 - missing, truncated, not safetensors: all mean "skip it"
        return False


def drop_weights(store, run_ids) -> int:
    """Delete these runs' weights files (their metrics stay); returns how many were removed."""
    removed = 0
    for rid in run_ids:
        path = weights_path(store, rid)
        if path.exists():
            path.unlink()
            removed += 1
    return removed


def sweep_record_name() -> str:
    """bench/sweep-<UTC time>-<pid>: one record per sweep, so concurrent sweeps never overwrite each other's."""
    return f"sweep-{datetime.now(UTC):%Y%m%dT%H%M%S}-{os.getpid()}"


def load_patterns(store, run_id: str):
    """(patterns (L, N, H, T, T), example tokens (N, T)), or (None, None) when not stored."""
    tensors = load_file(str(weights_path(store, run_id)))
    if "patterns" not in tensors:
        return None, None
    return tensors["patterns"].astype(np.float32), tensors["examples"]


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
            frames.append(pd.read_parquet(path))
        except Exception as err:  # noqa: BLE001
            warnings.warn(f"skipping {path}: not a readable attention-lab table ({err})", stacklevel=2)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def load_table(store, kind: str, name: str) -> pd.DataFrame:
    """STORE/<kind>/<name>.parquet, or an empty frame (with a warning naming it) when absent or unreadable."""
    path = Path(store) / kind / f"{name}.parquet"
    if not path.exists():
        return pd.DataFrame()
    try:
        read_meta(path)
        return pd.read_parquet(path)
    except Exception as err:  # noqa: BLE001
        warnings.warn(f"skipping {path}: not a readable attention-lab table ({err})", stacklevel=2)
        return pd.DataFrame()


def provenance_of(store) -> list[dict]:
    """The distinct (command, versions, date) that made the runs in a store, newest first."""
    seen = {}
    for path in _files(store, "runs"):
        try:
            p = read_meta(path)["provenance"]
        except Exception:  # noqa: BLE001 - load_runs already warns
            continue
        seen.setdefault(p["command"], p)
    return sorted(seen.values(), key=lambda p: p["date"], reverse=True)
