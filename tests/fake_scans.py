"""A made-up store of scaling scans: every axis, three parameterizations, known thresholds (test_scaling,
test_scaling_page)."""

import hashlib

import pandas as pd

from core.analysis import axes
from core.results import runfile as rf

# Settings per axis and the smallest at which each parameterization solves (None: never), made up.
# The bundled point is the last setting of every axis (one set of runs, shared by the four axes).
# Along d_head and d_model the task gets easier as the value grows, and the bundled point is the last setting; along
# n_heads (narrower heads) and length (more pairs) it gets harder, and the bundled point is the first.
SETTINGS = {
    "d_head": [4, 8, 16],
    "d_model": [16, 32, 64],
    "n_heads": [4, 8, 16],
    "length": [8, 16, 32],
    "n_heads_induction": [4, 8, 16],
}
SOLVES_FROM = {"standard": 1, "tied_qk": 2, "identity": None}  # steps from an axis's hardest setting


def _config(axis: str, value: int) -> dict:
    spec = axes.AXES[axis]
    cfg = {k: v for k, v in {**axes.BASE, **dict(spec.base)}.items() if k != "steps"}
    cfg[spec.var] = value
    if spec.var == "d_model":
        cfg["d_head"] = value // 4
    if spec.var == "n_heads":
        cfg["d_head"] = 64 // value
    return cfg


def fake_id(*parts) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]  # as a real run id: 16 hex digits


def fake_runs(seeds: int = 5) -> pd.DataFrame:
    rows = []
    for axis, values in SETTINGS.items():
        for i, value in enumerate(values):
            cfg = _config(axis, value)
            steps_in = i if axes.AXES[axis].grows else len(values) - 1 - i  # steps from the hardest setting
            for name, first in SOLVES_FROM.items():
                if axis == "d_head" and name == "identity":
                    continue
                for lr in (1e-3, 3e-3):
                    for seed in range(seeds):
                        solved = first is not None and steps_in >= first and lr == 1e-3
                        rows.append(
                            {
                                **cfg,
                                "run_id": fake_id(cfg, name, lr, seed),
                                "attention": name,
                                "seed": seed,
                                "lr": lr,
                                "steps": 800,
                                "n_kv_heads": cfg["n_heads"],
                                "status": "ok",
                                "precision": "fp32",
                                "test_acc": 1.0 if solved else 0.3,
                                "test_loss": 0.01 if solved else 2.0,
                                "val_loss": 0.01 if solved else 2.0,
                                "val_loss_drop": 0.0,
                                "val_acc_gain": 0.0,
                                "params_attention": 2 * cfg["d_model"] * cfg["n_heads"] * cfg["d_head"],
                                "params_total": 10_000,
                                "batch_size": 32,
                            }
                        )
    return pd.DataFrame(rows).drop_duplicates("run_id")


def write_store(root, runs: pd.DataFrame):
    for r in runs.itertuples():
        meta = {
            "format": rf.FORMAT,
            "run_id": r.run_id,
            "seed": r.seed,
            "status": "ok",
            "model": {
                "attention": r.attention,
                "n_layers": 2,
                "d_model": r.d_model,
                "n_heads": r.n_heads,
                "d_head": r.d_head,
                "n_kv_heads": r.n_kv_heads,
                "mlp": True,
                "vocab_size": 64,
                "max_len": 4 * r.length,
            },
            "task": {"name": r.task, "n_symbols": 32, "length": r.length},
            "train": {"steps": 800, "batch_size": 32, "lr": r.lr},
            "final": {k: getattr(r, k) for k in ("val_loss", "test_loss", "test_acc", "val_loss_drop", "val_acc_gain")}
            | {"val_acc": r.test_acc},
            "params": {"attention": int(r.params_attention), "mlp": 1000},
            "train_seconds": 1.0,
            "steps_done": 800,
            "tokens_per_s": 1.0,
            "n_ensemble": 10,
            "provenance": {"command": "test", "date": "2026-11-23", "versions": {}},
        }
        df = pd.DataFrame({"run_id": r.run_id, "step": [800], "metric": ["test_acc"], "value": [r.test_acc]})
        rf.write_table(rf.run_path(root, r.run_id), df, meta)
