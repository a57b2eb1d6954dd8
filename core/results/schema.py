"""What every stored table must hold, checked in one place as it is read: a file that parses but has the wrong
columns or types is refused with one reason that names the field, never a crash further on.

- runs: the metadata fields load_runs reads (`check_run_meta`), and the metrics table's columns and types;
- named tables (analysis/, bench/ by kind, pretrained/): their required columns and the type of each
  (`check_table`). Optional columns (added in later formats) are not required: pages check for them.
"""

import numbers

import pandas as pd
import pyarrow as pa

NUMBER, INTEGER, TEXT, FLAG = "number", "integer", "text", "flag"

_RUN_META = {
    ("run_id",): TEXT,
    ("seed",): INTEGER,
    ("status",): TEXT,
    ("train_seconds",): NUMBER,
    ("steps_done",): INTEGER,
    ("n_ensemble",): INTEGER,
    ("tokens_per_s",): NUMBER,
    ("model", "attention"): TEXT,
    ("model", "n_layers"): INTEGER,
    ("model", "d_model"): INTEGER,
    ("model", "n_heads"): INTEGER,
    ("model", "d_head"): INTEGER,
    ("model", "n_kv_heads"): INTEGER,
    ("model", "vocab_size"): INTEGER,
    ("model", "max_len"): INTEGER,
    ("model", "mlp"): FLAG,
    ("task", "name"): TEXT,
    ("task", "n_symbols"): INTEGER,
    ("task", "length"): INTEGER,
    ("train", "steps"): INTEGER,
    ("train", "batch_size"): INTEGER,
    ("train", "lr"): NUMBER,
    ("provenance", "date"): TEXT,
    ("provenance", "command"): TEXT,
}

METRICS = {"run_id": TEXT, "step": INTEGER, "metric": TEXT, "value": NUMBER}

# one row of load_runs (core.results.runfile.run_row), its columns in order, and their kinds (besides these:
# params_<part>, one per part of the model)
RUN_ROW = {
    "run_id": TEXT,
    "attention": TEXT,
    "task": TEXT,
    "n_symbols": INTEGER,
    "length": INTEGER,
    "seed": INTEGER,
    "n_layers": INTEGER,
    "d_model": INTEGER,
    "n_heads": INTEGER,
    "d_head": INTEGER,
    "n_kv_heads": INTEGER,
    "mlp": FLAG,
    "vocab_size": INTEGER,
    "max_len": INTEGER,
    "steps": INTEGER,
    "batch_size": INTEGER,
    "lr": NUMBER,
    "precision": TEXT,
    "schedule": TEXT,
    "until": TEXT,
    "status": TEXT,
    "stop": TEXT,
    "solve_step": NUMBER,
    "stop_step": NUMBER,
    "val_loss": NUMBER,
    "val_acc": NUMBER,
    "test_loss": NUMBER,
    "test_acc": NUMBER,
    "eval_loss": NUMBER,
    "eval_acc": NUMBER,
    "train_loss": NUMBER,
    "val_loss_drop": NUMBER,
    "val_acc_gain": NUMBER,
    "params_attention": NUMBER,
    "params_total": NUMBER,
    "train_seconds": NUMBER,
    "step_seconds": NUMBER,
    "n_ensemble": INTEGER,
    "threads": NUMBER,
    "device": TEXT,
    "steps_done": INTEGER,
    "steps_from": INTEGER,
    "seconds_per_member_step": NUMBER,
    "tokens_per_s": NUMBER,
    "date": TEXT,
    "command": TEXT,
}
# columns an older index may hold that a run's row no longer has (train_seconds / steps_done: not a step time
# under the criterion, where members stop at different steps; seconds_per_member_step replaced it)
DROPPED = ("seconds_per_step",)
# the runs index caches those rows, with the stat of the file each came from
INDEX = {**RUN_ROW, "file_size": INTEGER, "file_mtime_ns": INTEGER}

# (kind, name) of a table under STORE/<kind>/; name None: every table there. bench tables: per their `kind` column.
TABLES = {
    ("analysis", "init"): {"run_id": TEXT, "layer": INTEGER, "head": INTEGER, "metric": TEXT, "value": NUMBER},
    ("analysis", "random"): {
        "attention": TEXT,
        "d_model": INTEGER,
        "n_heads": INTEGER,
        "d_head": INTEGER,
        "metric": TEXT,
        "mean": NUMBER,
        "std": NUMBER,
        "by_construction": FLAG,
    },
    ("analysis", "random_shapes"): {
        "d_model": INTEGER,
        "d_head": INTEGER,
        "metric": TEXT,
        "mean": NUMBER,
        "std": NUMBER,
    },
    ("analysis", "chance"): {"task": TEXT, "guesser": TEXT, "accuracy": NUMBER},
    ("analysis", "trained"): {"run_id": TEXT, "layer": INTEGER, "head": INTEGER, "metric": TEXT, "value": NUMBER},
    ("analysis", "trained_spectra"): {"run_id": TEXT, "matrix": TEXT, "index": INTEGER, "value": NUMBER},
    ("analysis", "heads"): {"run_id": TEXT, "layer": INTEGER, "head": INTEGER, "metric": TEXT, "value": NUMBER},
    ("analysis", "solve_steps"): {"run_id": TEXT, "solve_step": NUMBER},  # NaN: never solved
    ("pretrained", None): {
        "model": TEXT,
        "kind": TEXT,
        "layer": INTEGER,
        "head": INTEGER,
        "metric": TEXT,
        "value": NUMBER,
        "d_model": INTEGER,
        "d_head": INTEGER,
    },
}
BENCH = {
    "sweep": {
        "jobs": INTEGER,
        "runs": INTEGER,
        "steps": INTEGER,
        "threads": INTEGER,
        "seconds": NUMBER,
        "gflop": NUMBER,
        "peak_gflops": NUMBER,
    },
    "attention": {
        "attention": TEXT,
        "d_model": INTEGER,
        "seq_len": INTEGER,
        "n_heads": INTEGER,
        "batch": INTEGER,
        "ms": NUMBER,
        "ratio": NUMBER,
        "peak_mb": NUMBER,
    },
    "store": {"what": TEXT, "runs": INTEGER, "seconds": NUMBER, "target_seconds": NUMBER, "met": FLAG},
    "criterion": {
        "protocol": TEXT,
        "runs": INTEGER,
        "member_steps": INTEGER,
        "seconds": NUMBER,
        "stopped_early": NUMBER,
    },
    "training": {
        "engine": TEXT,
        "workers": INTEGER,
        "threads": INTEGER,
        "runs": INTEGER,
        "steps": INTEGER,
        "seconds": NUMBER,
    },
}


NAME_LENGTH = 64  # a name (parameterization, task, status, run id) longer than this is crafted, not made here
_NAMES = {("run_id",), ("status",), ("model", "attention"), ("task", "name")}


def _is(value, kind: str) -> bool:
    kind_of = type(value)  # JSON's own types first: the ABC checks below cost ten times as much
    if kind_of is bool or kind == FLAG:
        return kind_of is bool and kind == FLAG
    if kind == TEXT:
        return kind_of is str or isinstance(value, str)
    if kind == INTEGER:  # what numpy, Arrow and parquet hold: a larger one cannot be read back as a column
        return (kind_of is int or isinstance(value, numbers.Integral)) and -(2**63) <= value < 2**63
    return kind_of is float or kind_of is int or isinstance(value, numbers.Real)


def check_run_meta(meta: dict) -> None:
    """Raise ValueError naming the first metadata field that is absent or of the wrong type."""
    for path, kind in _RUN_META.items():
        value = meta
        for key in path:
            if not isinstance(value, dict) or key not in value:
                raise ValueError(f"{'.'.join(path)}: missing")
            value = value[key]
        if not _is(value, kind):
            raise ValueError(f"{'.'.join(path)}: must be {kind}{' (64-bit)' * (kind == INTEGER)}, got {value!r:.40}")
        if path in _NAMES and len(value) > NAME_LENGTH:
            raise ValueError(f"{'.'.join(path)}: at most {NAME_LENGTH} characters, got {len(value)}")
    if not isinstance(meta.get("stop", ""), str):
        raise ValueError(f"stop: must be text, got {meta['stop']!r:.40}")
    for key, value in (meta.get("final") or {}).items():
        if value is not None and not _is(value, NUMBER):
            raise ValueError(f"final.{key}: must be a number, got {value!r:.40}")


def _arrow_is(t: pa.DataType, kind: str) -> bool:
    if kind == TEXT:
        return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_dictionary(t)
    if kind == FLAG:
        return pa.types.is_boolean(t)
    if kind == INTEGER:
        return pa.types.is_integer(t)
    return pa.types.is_integer(t) or pa.types.is_floating(t)


def check_arrow(schema: pa.Schema, columns: dict) -> None:
    """Raise ValueError naming the first required column that is absent or of the wrong type."""
    for name, kind in columns.items():
        if name not in schema.names:
            raise ValueError(f"column {name}: missing")
        if not _arrow_is(schema.field(name).type, kind):
            raise ValueError(f"column {name}: must be {kind}, got {schema.field(name).type}")


def _pandas_is(series: pd.Series, kind: str) -> bool:
    """Missing values pass (a bench row without a target has met = None); present ones must be of the kind."""
    if series.isna().all():
        return True  # a column no row has a value for (a field absent from every run): pandas reads it as object
    if kind == TEXT and (
        pd.api.types.is_string_dtype(series.dtype)
        and series.dtype != object
        or isinstance(series.dtype, pd.CategoricalDtype)
    ):
        return True  # a string column: no need to look at each of its (up to 100k) values
    if kind in (TEXT, FLAG):
        return series.dropna().map(lambda v: _is(v.item() if hasattr(v, "item") else v, kind)).all()
    numeric = pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)
    if kind == INTEGER and numeric and not pd.api.types.is_integer_dtype(series):
        s = series.dropna()  # bench tables of several kinds share columns: pandas reads their ints as floats
        return bool((s == s.round()).all())
    return numeric


def check_index(df: pd.DataFrame) -> None:
    """Raise ValueError naming the first column of an index segment of the wrong type. A column it lacks is
    not an error: the segment predates it, and load_runs reads those runs from their files instead."""
    check_table(df, "index", "runs", {c: kind for c, kind in INDEX.items() if c in df})


def check_table(df: pd.DataFrame, kind: str, name: str, columns: dict | None = None) -> None:
    """Raise ValueError naming the first required column of STORE/<kind>/<name> that is absent or mistyped."""
    if kind == "bench":
        if "kind" not in df:
            raise ValueError("column kind: missing")
        groups = [(k, df[df.kind == k], BENCH.get(k, {})) for k in df.kind.unique()]
    else:
        groups = [(name, df, columns or TABLES.get((kind, name), TABLES.get((kind, None), {})))]
    for _, part, columns in groups:
        for column, want in columns.items():
            if column not in part:
                raise ValueError(f"column {column}: missing")
            if not _pandas_is(part[column], want):
                raise ValueError(f"column {column}: must be {want}")
