"""`python -m core baselines`: what the Similarity page measures trained weights against, matched to each run.

- STORE/analysis/init.parquet: every run's similarity metrics at step 0, its own initial weights rebuilt
  deterministically from its seed (core.training.train.init_model), so a page can ask "how far did training move
  this from where it started?" without storing a second set of weights.
- STORE/analysis/random.parquet: each metric's mean and std over freshly initialised layers of each
  parameterization (its own shapes and init: products of random factors for `stacked`, a shared W for
  `tied_qkv`). A metric whose std there is 0 holds by construction (tied variants' cos = 1, symmetric
  W_QK), and `by_construction` says so.
- STORE/analysis/random_shapes.parquet: similarity.random_baseline (Gaussian matrices, no init rule) at every
  (d_model, d_head) of the store's runs and pretrained models: at D=576 it takes tens of seconds, which a page's
  first draw should not.
- STORE/analysis/trained.parquet, trained_spectra.parquet: similarity.analyse_run of every run's final weights
  (where kept), so the Similarity page's first draw reads numbers instead of taking SVDs of every run; a page
  analyses a run missing there (trained since) itself, with the same function.
- STORE/analysis/solve_steps.parquet: curves.time_to_solve of every run (NaN where it never solves), so the
  Learning rate page reads one small table instead of every run's validation curve; a run missing there is
  computed by the page from its curve, with the same function.
- STORE/analysis/heads.parquet: heads.head_scores (previous-token and induction scores per layer and head) of
  every run whose whole model is kept, so the Attention maps page reads a table instead of running models.
- STORE/analysis/chance.parquet: core.training.tasks.chance_levels of every task at its default size (task,
  guesser, accuracy), so the pages draw chance lines without loading torch.
"""

from pathlib import Path

import pandas as pd
import torch

from ..results import packs, weights
from ..results import store as st
from ..training.config import ModelConfig
from ..training.tasks import TASKS, chance_levels
from ..training.train import init_model
from . import curves, heads, similarity

SAMPLES = 8  # fresh initialisations per parameterization and size for the random baseline
BASE_SEED = 10_000  # apart from the seeds sweeps use


def _metrics(cfg: ModelConfig, seed: int, **labels) -> pd.DataFrame:
    with torch.no_grad():
        layers = [{k: v.double().numpy() for k, v in hw.items()} for hw in init_model(cfg, seed).head_weights()]
    return similarity.metrics_frame(layers, **labels)


def init_metrics(runs: pd.DataFrame, configs: dict) -> pd.DataFrame:
    """Per run: the metrics of its step-0 weights (run_id, layer, head, metric, value). The weights depend on the
    model config and the seed alone, so the runs of one ensemble's lrs share them: each is initialised once."""
    at_init: dict[tuple, pd.DataFrame] = {}
    frames = []
    for r in runs.itertuples():
        key = (configs[r.run_id], int(r.seed))
        if key not in at_init:
            at_init[key] = _metrics(*key, run_id="")
        frames.append(at_init[key].assign(run_id=r.run_id))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def random_metrics(configs: list[ModelConfig]) -> pd.DataFrame:
    """Per (attention, d_model, n_heads, d_head, metric): mean and std over SAMPLES fresh initialisations."""
    out = []
    for cfg in {(c.attention, c.d_model, c.n_heads, c.d_head): c for c in configs}.values():
        frame = pd.concat([_metrics(cfg, BASE_SEED + i) for i in range(SAMPLES)], ignore_index=True)
        agg = frame.groupby("metric").value.agg(["mean", "std"]).reset_index()
        keys = {"attention": cfg.attention, "d_model": cfg.d_model, "n_heads": cfg.n_heads, "d_head": cfg.d_head}
        out.append(
            agg.assign(**keys, by_construction=agg["mean"].notna() & (agg["std"] < 1e-9), defined=agg["mean"].notna())
        )
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame()


def random_shapes(runs: pd.DataFrame, pretrained: pd.DataFrame) -> pd.DataFrame:
    """similarity.random_baseline at every (d_model, d_head) of the runs and the pretrained models."""
    shapes = {(int(r.d_model), int(r.d_head)) for r in runs[["d_model", "d_head"]].drop_duplicates().itertuples()}
    if not pretrained.empty:
        shapes |= {(int(D), int(r)) for D, r in pretrained[["d_model", "d_head"]].drop_duplicates().itertuples(False)}
    return pd.concat([similarity.random_baseline(D, r) for D, r in sorted(shapes)], ignore_index=True)


def trained_analyses(store, run_ids) -> tuple[pd.DataFrame, pd.DataFrame]:
    """similarity.analyse_run of each run whose weights are stored and whole (each file read once; one that does
    not load is left to the pages, which name its problem)."""
    parts = []
    for rid in run_ids:
        if not st.weights_path(store, rid).is_file():
            continue
        try:
            layers = weights.load_head_weights(store, rid)
        except Exception:  # noqa: BLE001 - truncated, foreign, crafted: weights.weights_problem says which
            continue
        parts.append(similarity.analyse_run(layers, rid))
    if not parts:
        return pd.DataFrame(), pd.DataFrame()
    return tuple(pd.concat([p[i] for p in parts], ignore_index=True) for i in (0, 1))


def solve_steps(store, run_ids) -> pd.DataFrame:
    """(run_id, solve_step) of each run: curves.time_to_solve of its validation accuracy, NaN if never."""
    steps = curves.time_to_solve(st.load_metrics(store, run_ids, ["val_acc"]))
    return pd.DataFrame({"run_id": list(run_ids), "solve_step": [float(steps.get(r, float("nan"))) for r in run_ids]})


def head_scores(store, run_ids) -> pd.DataFrame:
    """heads.head_scores of each run whose model is kept and loads (run_id, layer, head, metric, value)."""
    from ..results.models import load_model

    parts = []
    for rid in run_ids:
        if not st.model_path(store, rid).is_file():
            continue
        try:
            model, _ = load_model(store, rid)
        except Exception:  # noqa: BLE001 - truncated, foreign, crafted: left out, as trained_analyses does
            continue
        parts.append(heads.head_scores(model, run_id=rid))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def chance_frame() -> pd.DataFrame:
    """(task, guesser, accuracy) for every task at its default size."""
    rows = [(task, guesser, acc) for task in TASKS for guesser, acc in chance_levels(task).items()]
    return pd.DataFrame(rows, columns=["task", "guesser", "accuracy"])


def write_all(store) -> dict[str, int] | None:
    """Every analysis `python -m core baselines` stores under STORE/analysis/, from the store's runs; returns what
    it covered (counts), or None when the store holds no runs (nothing written)."""
    runs = st.load_runs(store)
    if runs.empty:
        return None
    wanted = set(runs.run_id)
    configs = {
        rid: ModelConfig.from_dict(meta["model"])
        for rid, meta, _ in sorted(packs.all_metas(store), key=lambda r: r[0])
        if rid in wanted and not isinstance(meta, Exception)
    }
    st.write_named(store, "analysis", "init", init_metrics(runs, configs))
    st.write_named(store, "analysis", "random", random_metrics(list(configs.values())))
    pretrained = st.load_named(store, "pretrained")
    st.write_named(store, "analysis", "random_shapes", random_shapes(runs, pretrained))
    st.write_named(store, "analysis", "chance", chance_frame())
    st.write_named(store, "analysis", "solve_steps", solve_steps(store, list(runs.run_id)))
    trained, spectra = trained_analyses(store, runs.run_id)
    scores = head_scores(store, runs.run_id)
    for name, table in (("trained", trained), ("trained_spectra", spectra), ("heads", scores)):
        if table.empty:  # no weights kept: a stale table from before must not outlive them
            (Path(store) / "analysis" / f"{name}.parquet").unlink(missing_ok=True)
        else:
            st.write_named(store, "analysis", name, table)
    return {
        "trained": trained.run_id.nunique() if len(trained) else 0,
        "heads": scores.run_id.nunique() if len(scores) else 0,
        "runs": len(runs),
        "attentions": len(set(runs.attention)),
        "tasks": len(TASKS),
    }
