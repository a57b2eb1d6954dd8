"""The store at scale (part of `python -m core bench`): a synthetic store of real-format runs in a temp directory,
read the ways the CLI and the app read it. No timed test asserts these: the bench prints them.

- load_runs: the runs table of the whole store (what every page and `summary` start from);
- load_metrics: the tidy metrics of a 100-run selection, four metrics (what a page draws);
- the same three reads once its run files are packed (core.results.packs), and the disk each way;
- the app's first page: app.py's whole Overview on that store (its seeds strip opened) in a warm process
  (imports done, caches empty).
"""

import itertools
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

import numpy as np
import pandas as pd

from ..attention import NAMES
from ..results import index, packs, provenance
from ..results import size as sz
from ..results import store as st
from ..training.config import LR_GRID, ModelConfig, TaskConfig, TrainConfig, run_id
from ..training.model import count_model_params
from ..training.tasks import TASKS, make_task

EVALS, N_LAYERS = 17, 2  # as the bundled runs: 800 steps, an evaluation every 50
SELECTION_METRICS = ("val_loss", "val_acc", "test_loss", "test_acc")


def _metrics(rng) -> pd.DataFrame:
    """A bundled run's tidy metrics: 181 rows of 11 metrics, shaped like a real run's."""
    steps = np.arange(EVALS) * 50
    rows = []
    for name in ("val_loss", "val_acc", "test_loss", "test_acc", "wall_time"):
        rows += [(s, name, v) for s, v in zip(steps, rng.random(EVALS))]
    for name in ("train_loss", "tokens_per_s", *(f"update_{k}.{i}" for i in range(N_LAYERS) for k in ("qk", "ov"))):
        rows += [(s, name, v) for s, v in zip(steps[1:], rng.random(EVALS - 1))]
    return pd.DataFrame(rows, columns=["step", "metric", "value"])


def _configs(n_runs: int):
    """n_runs distinct (model, task, train, seed): every size x task x parameterization x lr, seed after seed
    (10,000 runs: three model sizes at about 21 seeds each)."""
    sizes = [{"d_model": 64, "n_heads": 4}, {"d_model": 32, "n_heads": 2}, {"d_model": 128, "n_heads": 8}]
    tasks = {name: make_task(TaskConfig(name)) for name in TASKS}
    grid = itertools.product(range(n_runs), sizes, tasks.items(), NAMES, LR_GRID)
    for seed, size, (name, task), attention, lr in itertools.islice(grid, n_runs):
        model = ModelConfig(attention=attention, vocab_size=task.vocab_size, max_len=task.seq_len, **size)
        yield model, TaskConfig(name), TrainConfig(lr=lr), seed


def build(store: Path, n_runs: int, seed: int = 0) -> None:
    """Write n_runs runs in the store's real format (metrics and metadata; no weights: nothing timed reads them)."""
    rng = np.random.default_rng(seed)
    prov = provenance.provenance("python -m core bench (synthetic store)")
    for model, task, train, s in _configs(n_runs):
        rid = run_id(model, task, train, s)
        acc = float(rng.random())
        final = {
            "val_loss": 1 - acc,
            "val_acc": acc,
            "test_loss": 1 - acc,
            "test_acc": acc,
            "train_loss": 1 - acc,
            "val_loss_drop": 0.0,
            "val_acc_gain": 0.0,
        }
        meta = {
            "format": st.FORMAT,
            "run_id": rid,
            "seed": s,
            "model": model.to_dict(),
            "task": task.to_dict(),
            "train": train.to_dict(),
            "status": "ok",
            "final": final,
            "params": count_model_params(model),
            "train_seconds": 60.0,
            "step_seconds": 50.0,
            "steps_done": train.steps,
            "tokens_per_s": 1e5,
            "n_ensemble": 20,
            "threads": 1,
            "command": prov["command"],
            "provenance": prov,
        }
        metrics = _metrics(rng).assign(run_id=rid)[["run_id", "step", "metric", "value"]]
        st.write_run_table(st.run_path(store, rid), metrics, meta)


def _timed(fn, rounds: int, setup=None) -> float:
    times = []
    for _ in range(rounds):
        if setup:
            setup()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return median(times)


def first_page_seconds(root: Path, name: str) -> float:
    """app.py's first page on the store `name` under `root`, in a process whose imports are warm and caches empty."""
    import logging

    from streamlit.testing.v1 import AppTest

    logging.getLogger("streamlit").setLevel(logging.ERROR)  # AppTest's bare-mode notices

    before = os.environ.get("ATTENTION_LAB_STORES")
    os.environ["ATTENTION_LAB_STORES"] = str(root)
    main = sys.modules["__main__"]  # AppTest installs its script there: later spawned processes would run the app
    try:
        app = Path(__file__).resolve().parents[2] / "app.py"
        AppTest.from_file(str(app), default_timeout=120).run()  # warm: imports and the bundled store
        import streamlit as stl

        stl.cache_data.clear()
        at = AppTest.from_file(str(app), default_timeout=120)
        at.query_params["store"] = name
        at.query_params["ov_seeds"] = "true"  # the whole Overview: its seeds strip is drawn only when opened
        t0 = time.perf_counter()
        at.run()
        seconds = time.perf_counter() - t0
    finally:
        sys.modules["__main__"] = main
        if before is None:
            os.environ.pop("ATTENTION_LAB_STORES", None)
        else:
            os.environ["ATTENTION_LAB_STORES"] = before
    tables = [h.proto.body for h in at.get("html")]  # the verdict matrix is HTML; charts are components
    charts = [c for c in at.get("bidi_component") if c.proto.component_name == "attention_lab.chart"]
    if at.exception or not charts or not any("<table" in b for b in tables):
        raise RuntimeError(f"the app drew no verdict matrix or chart on the synthetic store: {at.exception}")
    return seconds


def _packed_rows(store: Path, picked: list[str], rounds: int) -> list[tuple]:
    """The same reads once the store's run files are packed (core.results.packs), side by side with the loose ones."""
    packs.pack(store)
    unindexed = _timed(lambda: st.load_runs(store), rounds, setup=lambda: shutil.rmtree(store / "index", True))
    index.compact(store, rebuild=True)
    return [
        ("load_runs (packed, no index: each pack's metadata column)", unindexed, 2.0),
        ("load_runs (packed)", _timed(lambda: st.load_runs(store), rounds), 1.0),
        (
            "load_metrics (packed, 100 runs, 4 metrics)",
            _timed(lambda: st.load_metrics(store, picked, SELECTION_METRICS), rounds),
            0.5,
        ),
    ]


def store_bench(n_runs: int = 10_000, rounds: int = 5) -> pd.DataFrame:
    """One row per measurement: what, runs in the store, seconds (median of rounds), the target."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        store = root / "big"
        t0 = time.perf_counter()
        build(store, n_runs)
        build_s = time.perf_counter() - t0
        unindexed = _timed(lambda: st.load_runs(store), rounds, setup=lambda: shutil.rmtree(store / "index", True))
        index.compact(store, rebuild=True)  # what a sweep's per-job segments compact to
        runs = st.load_runs(store)
        assert len(runs) == n_runs, len(runs)
        picked = list(runs.run_id.sample(100, random_state=0))
        rows = [
            ("load_runs (whole store, no index: every file's metadata)", unindexed, 2.0),
            ("load_runs (whole store)", _timed(lambda: st.load_runs(store), rounds), 1.0),
            (
                "load_metrics (100 runs, 4 metrics)",
                _timed(lambda: st.load_metrics(store, picked, SELECTION_METRICS), rounds),
                0.5,
            ),
            ("app: first page, the whole Overview (warm process, empty caches)", first_page_seconds(root, "big"), 3.0),
        ]
        disk = [sz.size(store)[1]] * len(rows)
        rows += _packed_rows(store, picked, rounds)
        disk += [sz.size(store)[1]] * (len(rows) - len(disk))
    df = pd.DataFrame(rows, columns=["what", "seconds", "target_seconds"]).assign(runs=n_runs, build_seconds=build_s)
    df = df.assign(disk_bytes=disk)  # the store on disk in whole blocks (core.results.size) as each row read it
    return df.assign(kind="store", met=(df.seconds <= df.target_seconds).where(df.target_seconds.notna()))


if __name__ == "__main__":  # a quick look without the rest of the bench
    print(json.dumps(store_bench(int(os.environ.get("RUNS", 1000)), 3).to_dict("records"), indent=1))
