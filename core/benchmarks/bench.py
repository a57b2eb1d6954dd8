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
from ..experiments.workers import default_workers, keep_freed_memory, threads_per_worker
from ..flags import DEFAULT_STORE, MAX_STORE_RUNS, MAX_WORKERS, bounded_int, store_dir
from ..flags import device as device_flag
from ..results import store as st
from ..training.config import LR_GRID, TrainConfig
from ..training.device import default_device
from ..training.reference import train_plain
from .layer_bench import FULL_GRID, QUICK_GRID, REFERENCE, attention_bench
from .profile import ablate_step, compile_check, ensemble_scaling, profile_training


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
    sweep.warm_up(jobs[0], device)
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


def add_bench(sub):
    p = sub.add_parser("bench", help="benchmark attention layers, the training engine and utilisation")
    p.add_argument("--store", type=store_dir, default=DEFAULT_STORE, help=f"store directory (default {DEFAULT_STORE}/)")
    p.add_argument("--quick", action="store_true", help="a tiny grid (seconds): for tests and a smoke check")
    p.add_argument("--skip-training", action="store_true", help="only the attention micro-benchmark")
    p.add_argument("--skip-attention", action="store_true", help="only the training engines (keeps a stored table)")
    p.add_argument("--skip-precision", action="store_true", help="no fp32 vs bf16 engine comparison")
    p.add_argument("--skip-store", action="store_true", help="no store-at-scale figures (core.benchmarks.store_bench)")
    p.add_argument("--skip-blas", action="store_true", help="no BLAS-threads comparison (core.benchmarks.blas_bench)")
    p.add_argument(
        "--store-runs",
        type=bounded_int("store-runs", MAX_STORE_RUNS, least=100),
        default=None,
        help="runs in the synthetic store (default 10000)",
    )
    p.add_argument("--profile", action="store_true", help="also print where a training step's time goes")
    p.add_argument(
        "--criterion",
        action="store_true",
        help="also a sweep to the criterion (cap 6400) against the fixed 1600-step cosine sweep, on the "
        "bundled associative-recall grid (every parameterization x the 4 lrs x 5 seeds; about an hour on "
        "2 cores; --quick: a tiny grid)",
    )
    p.add_argument("--device", type=device_flag, default=None, help="cpu or cuda (default: cuda when present)")
    p.add_argument(
        "--workers",
        type=bounded_int("workers", MAX_WORKERS),
        default=None,
        help="the sweep's worker processes (default: as sweep)",
    )
    p.add_argument(
        "--training-rounds",
        type=bounded_int("training-rounds", 100),
        default=None,
        help="paired rounds, plain loop vs sweep (default 3)",
    )
    p.set_defaults(func=cmd_bench)


def cmd_bench(args, parser):
    keep_freed_memory()  # as the sweep's workers do, so every engine below runs alike
    device = torch.device(args.device) if args.device else default_device()
    grid, rounds = (QUICK_GRID, 2) if args.quick else (FULL_GRID, 15)
    meta = {"device": str(device), "threads": torch.get_num_threads(), "quick": args.quick}
    workers = args.workers or default_workers(device)
    if not args.skip_attention:
        att = attention_bench(grid, device, rounds)
        st.write_named(args.store, "bench", "attention", att, meta)
        g = att[att.attention != REFERENCE].groupby("attention", sort=False)
        table = pd.DataFrame(
            {
                "median": g.ratio.median(),
                "worst": g.ratio.max(),
                "flops_vs_standard": g.gflop.sum() / att[att.attention == "standard"].gflop.sum(),
                "time_per_flop_vs_standard": g.ms_per_gflop_vs_standard.median(),
            }
        )
        print("forward+backward time relative to nn.MultiheadAttention (median and worst over the grid),")
        print("FLOPs relative to standard, and time per FLOP relative to standard (median):")
        print(table.round(2).to_string())
    if not args.skip_training:
        # a slice of the bundled sweep's lr x seed grid: its configurations, lrs and evaluation cadence, on the
        # longest and a short task, four parameterizations, two seeds and an eighth of its steps
        train = TrainConfig(steps=20, eval_every=10) if args.quick else TrainConfig(steps=100, eval_every=50)
        names = ["standard", "identity"] if args.quick else ["standard", "stacked", "bilinear", "mqa"]
        tasks = ["reverse"] if args.quick else ["associative_recall", "reverse"]
        lrs = LR_GRID[:2] if args.quick else LR_GRID
        train_rounds = args.training_rounds or (2 if args.quick else 3)
        tr = training_bench(names, tasks, 2, lrs, train, device, workers, train_rounds)
        st.write_named(args.store, "bench", "training", tr, meta)
        cols = [
            "engine",
            "rounds",
            "runs_per_min",
            "speedup",
            "speedup_min",
            "speedup_max",
            "max_loss_diff",
            "utilisation",
        ]
        fmt = {"max_loss_diff": "{:.1e}".format}  # rounding would print float noise as 0
        print(tr[cols].to_string(index=False, formatters=fmt, float_format="{:.3f}".format))
    if not args.skip_precision:
        from .precision import precision_bench

        with num_threads(threads_per_worker(workers)):  # one ensemble, as one of the sweep's workers trains it
            pr = precision_bench(
                device,
                steps=5 if args.quick else 10,
                rounds=2 if args.quick else 3,
                seeds=1 if args.quick else 5,
                compile=not args.quick,
            )
        st.write_named(args.store, "bench", "precision", pr, {**meta, **pr[["cpu", "cpu_flags"]].iloc[0].to_dict()})
        print(
            f"fp32 vs bf16 on {pr.cpu.iloc[0]} (flags: {pr.cpu_flags.iloc[0]}); matmul peak fp32 "
            f"{pr.peak_gflops.iloc[0]:.0f}, bf16 {pr.peak_gflops.iloc[1]:.0f} GFLOP/s:"
        )
        cols = ["engine", "runs_per_min", "speedup_vs_fp32", "speedup_min", "speedup_max", "utilisation"]
        print(pr[cols].to_string(index=False, float_format="{:.3f}".format))
    if not args.skip_store:
        from .store_bench import store_bench

        n_runs = args.store_runs or (200 if args.quick else 10_000)
        sb = store_bench(n_runs, rounds=2 if args.quick else 5)
        st.write_named(args.store, "bench", "store", sb, meta)
        print(f"the store at {n_runs:,} runs (median seconds; a synthetic store in a temp directory):")
        print(sb[["what", "seconds", "target_seconds", "met"]].to_string(index=False, float_format="{:.3f}".format))
    if not args.skip_blas:
        from .blas_bench import SHAPES, blas_bench

        bb = blas_bench(rounds=1 if args.quick else 5, shapes=SHAPES[-1:] if args.quick else SHAPES, log=lambda _: 0)
        st.write_named(args.store, "bench", "blas", bb, meta)
        print(
            "numpy's SVD of (H, D, D) batches, its BLAS at its default threads and at one (ms; one process, then "
            "one per core at once):"
        )
        print(bb.drop(columns="kind").to_string(index=False, float_format="{:.2f}".format))
    if args.criterion:
        from ..attention import NAMES
        from .criterion_bench import criterion_bench

        grid = (
            (["standard", "identity"], "reverse", 2, LR_GRID[2:], 60, 200, 10)
            if args.quick
            else (list(NAMES), "associative_recall", 5, LR_GRID, 1600, 6400, 50)
        )
        cb = criterion_bench(*grid, device, workers)
        st.write_named(args.store, "bench", "criterion", cb, meta)
        print("the criterion protocol against the fixed budget on one grid (member-steps from each run's own steps):")
        print(cb.drop(columns="kind").to_string(index=False, float_format="{:.3f}".format))
    if args.profile:
        with num_threads(threads_per_worker(workers)):  # the bundled jobs' two sizes, as the sweep's workers run them
            for n_seeds in (5, 10):
                print(compile_check(device, n_seeds=n_seeds))
        print(profile_training(device))
        with num_threads(threads_per_worker(workers)):  # a step as the sweep's workers run it
            print(ablate_step(device))
            print(ensemble_scaling(device))
