"""`python -m core bench`: everything compared is measured side by side in one run, so ratios hold.

1. attention: forward+backward of one layer per parameterization, nn.MultiheadAttention and bare SDPA.
2. training: seeds x lrs ensembles, seed-only ensembles and the plain per-run loop on one lr x seed grid.
3. utilisation: achieved FLOP/s of training steps against this machine's measured matmul peak.
4. the store at scale: reading a synthetic 10,000-run store as the CLI and the app do (core.benchmarks.store_bench).
5. numpy's BLAS threads against one, alone and on every core at once (core.benchmarks.blas_bench).
6. with --criterion: a sweep to the criterion against the old fixed-budget sweep (core.benchmarks.criterion_bench).
"""

import tempfile
import time
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from statistics import median

import pandas as pd
import torch

from ..experiments import sweep
from ..experiments.flops import matmul_peak, run_flops
from ..experiments.pace import warm_up
from ..experiments.workers import threads_per_worker
from ..results import store as st
from ..training.config import TrainConfig
from ..training.reference import train_plain


@contextmanager
def num_threads(n: int):
    old = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)


def _stored_eval_losses(store) -> dict:
    """{(task, attention, lr, seed): {step: test loss}} of every run in a store."""
    runs = st.load_runs(store).set_index("run_id")
    ev = st.load_metrics(store).query("metric == 'test_loss'")
    return {
        (runs.task[r], runs.attention[r], runs.lr[r], runs.seed[r]): dict(zip(g.step, g.value))
        for r, g in ev.groupby("run_id")
    }


def per_lr(jobs: list) -> list:
    """The same grid as one job per (configuration, lr): the seed-only ensembles a sweep used to train."""
    return [replace(j, train=j.train_at(lr), lrs=(lr,)) for j in jobs for lr in (j.lrs or (j.train.lr,))]


def training_bench(
    attentions, tasks, seeds: int, lrs, train: TrainConfig, device, workers: int, rounds: int = 3, log=print
) -> pd.DataFrame:
    """One lr x seed grid (attentions x tasks x lrs x seeds) three ways, timed wall-clock in one run: the plain
    per-run loop, seed-only ensembles (one job per lr, as sweeps trained before), and seeds x lrs ensembles
    (one job per configuration, what `python -m core sweep --lr` trains), both on the sweep's `workers`
    processes (their start-up included).

    Every engine runs `rounds` times, the order rotating from round to round, and `speedup` is the median of
    the per-round ratios to the plain loop of the same round: within a round every engine sees the same
    machine (between runs the shared machine still moves the median). Every run's test losses are compared
    with the plain loop's first round at every evaluation; utilisation is against the matmul peak at the
    threads an engine uses in all, measured around each run."""
    jobs = sweep.plan(attentions, tasks, seeds, train, lrs=lrs)
    n_runs = sum(len(j.members) for j in jobs)
    flops = sum(run_flops(j) * len(j.members) for j in jobs)
    threads = torch.get_num_threads()
    pool = (workers, threads_per_worker(workers)) if workers > 1 else (1, threads)
    engines = {"plain loop": (1, threads), "seed ensembles, one per lr": pool, "seeds x lrs ensembles": pool}
    grids = {"seed ensembles, one per lr": per_lr(jobs), "seeds x lrs ensembles": jobs}
    train_plain(jobs[0].model, jobs[0].task, replace(train, steps=3), 0, device)  # one-time set-up, untimed
    warm_up(jobs[0], device)
    secs, losses, peaks = ({label: [] for label in engines} for _ in range(3))

    def plain_loop() -> tuple[float, dict]:
        t0 = time.perf_counter()
        out = {
            (j.task.name, j.model.attention, lr, s): train_plain(j.model, j.task, j.train_at(lr), s, device)[1]
            for j in jobs
            for lr, s in j.members
        }
        return time.perf_counter() - t0, {k: dict(evals["test"]) for k, evals in out.items()}

    def engine(label: str) -> tuple[float, dict]:  # timed: the sweep; not: reading its losses back
        n, t = engines[label]
        with tempfile.TemporaryDirectory() as tmp, num_threads(t if n == 1 else threads):  # a pool sets its own
            t0 = time.perf_counter()
            sweep.run(Path(tmp), grids[label], device, workers=n)
            return time.perf_counter() - t0, _stored_eval_losses(Path(tmp))

    labels = list(engines)
    for r in range(rounds):
        for label in labels[r % 3 :] + labels[: r % 3]:
            n, t = engines[label]
            before = matmul_peak(device=device, threads=n * t)
            seconds, evals = plain_loop() if label == "plain loop" else engine(label)
            secs[label].append(seconds)
            losses[label].append(evals)
            peaks[label].append((before + matmul_peak(device=device, threads=n * t)) / 2)
            log(f"training, round {r + 1}/{rounds}, {label}: {60 * n_runs / seconds:.1f} runs/min")
    plain, ref = secs["plain loop"], losses["plain loop"][0]
    rows = []
    for label, (n, t) in engines.items():
        s, peak = secs[label], sum(peaks[label]) / len(peaks[label])
        ratio = [p / x for p, x in zip(plain, s)]
        sec = median(s)
        rows.append(
            {
                "kind": "training",
                "engine": label,
                "workers": n,
                "threads": t,
                "tasks": len(tasks),
                "attentions": len(attentions),
                "lrs": len(lrs),
                "seeds": seeds,
                "jobs": len(grids.get(label, jobs)),
                "runs": n_runs,
                "steps": train.steps,
                "eval_every": train.eval_every,
                "rounds": len(s),
                "seconds": sec,
                "runs_per_min": 60 * n_runs / sec,
                "speedup": median(ratio),
                "speedup_min": min(ratio),
                "speedup_max": max(ratio),
                "max_loss_diff": max(
                    abs(got[k][i] - v) for got in losses[label] for k in ref for i, v in ref[k].items()
                ),
                "gflops": flops / sec / 1e9,
                "peak_gflops": peak / 1e9,
                "utilisation": flops / sec / peak,
            }
        )
        row = rows[-1]
        log(
            f"training, {label}: {row['runs_per_min']:.1f} runs/min, {row['speedup']:.2f}x the plain loop "
            f"({row['speedup_min']:.2f}-{row['speedup_max']:.2f} over {len(plain)} rounds)"
        )
    return pd.DataFrame(rows)
