"""`python -m core bench`: its flags, and the benchmarks (core.benchmarks) run and printed in order."""

import pandas as pd
import torch

from ..benchmarks.bench import num_threads, training_bench
from ..benchmarks.layer_bench import FULL_GRID, QUICK_GRID, REFERENCE, attention_bench
from ..benchmarks.profile import ablate_step, compile_check, ensemble_scaling, profile_training
from ..experiments.workers import default_workers, keep_freed_memory, threads_per_worker
from ..results import store as st
from ..training.config import LR_GRID, TrainConfig
from ..training.device import default_device, device_name
from .flags import MAX_STORE_RUNS, add_device, add_store, add_workers, bounded_int


def add_bench(sub):
    p = sub.add_parser("bench", help="benchmark attention layers, the training engine and utilisation")
    add_store(p)
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
    p.add_argument(
        "--schedule",
        action="store_true",
        help="also replay the store's criterion sweeps: their jobs' measured seconds in the FLOPs order, in the "
        "sweep's order and in the best one (seconds; reads the store, trains nothing)",
    )
    add_device(p)
    add_workers(p, "the sweep's worker processes (default: as sweep)")
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
        # longest and a short task, four parameterizations, two seeds and an eighth of its steps; --quick: ten
        # steps and one evaluation after them, as evaluation is most of a tiny run's time
        train = TrainConfig(steps=10, eval_every=10) if args.quick else TrainConfig(steps=100, eval_every=50)
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
        from ..benchmarks.precision import precision_bench

        with num_threads(threads_per_worker(workers)):  # one ensemble, as one of the sweep's workers trains it
            pr = precision_bench(
                device,
                steps=5 if args.quick else 10,
                rounds=2 if args.quick else 3,
                seeds=1 if args.quick else 5,
                compile=not args.quick,
                eval_size=32 if args.quick else None,
            )
        st.write_named(args.store, "bench", "precision", pr, {**meta, **pr[["cpu", "cpu_flags"]].iloc[0].to_dict()})
        print(
            f"fp32 vs bf16 on {device_name(device)} (CPU flags: {pr.cpu_flags.iloc[0]}); matmul peak fp32 "
            f"{pr.peak_gflops.iloc[0]:.0f}, bf16 {pr.peak_gflops.iloc[1]:.0f} GFLOP/s:"
        )
        cols = ["engine", "runs_per_min", "speedup_vs_fp32", "speedup_min", "speedup_max", "utilisation"]
        print(pr[cols].to_string(index=False, float_format="{:.3f}".format))
    if not args.skip_store:
        from ..benchmarks.store_bench import store_bench

        n_runs = args.store_runs or (200 if args.quick else 10_000)
        sb = store_bench(n_runs, rounds=2 if args.quick else 5)
        st.write_named(args.store, "bench", "store", sb, meta)
        print(f"the store at {n_runs:,} runs (median seconds; a synthetic store in a temp directory):")
        print(sb[["what", "seconds", "target_seconds", "met"]].to_string(index=False, float_format="{:.3f}".format))
    if not args.skip_blas:
        from ..benchmarks.blas_bench import SHAPES, blas_bench

        bb = blas_bench(rounds=1 if args.quick else 5, shapes=SHAPES[-1:] if args.quick else SHAPES, log=lambda _: 0)
        st.write_named(args.store, "bench", "blas", bb, meta)
        print(
            "numpy's SVD of (H, D, D) batches, its BLAS at its default threads and at one (ms; one process, then "
            "one per core at once):"
        )
        print(bb.drop(columns="kind").to_string(index=False, float_format="{:.2f}".format))
    if args.criterion:
        from ..attention import NAMES
        from ..benchmarks.criterion_bench import criterion_bench

        grid = (
            (["standard", "identity"], "reverse", 2, LR_GRID[2:], 60, 200, 10)
            if args.quick
            else (list(NAMES), "associative_recall", 5, LR_GRID, 1600, 6400, 50)
        )
        cb = criterion_bench(*grid, device, workers)
        st.write_named(args.store, "bench", "criterion", cb, meta)
        print("the criterion protocol against the fixed budget on one grid (member-steps from each run's own steps):")
        print(cb.drop(columns="kind").to_string(index=False, float_format="{:.3f}".format))
    if args.schedule:
        from ..benchmarks.schedule import replay

        table = replay(st.load_runs(args.store))
        print("criterion sweeps replayed: each job's measured seconds on the sweep's workers, in three orders:")
        print(table.to_string(index=False, float_format="{:.2f}".format) if len(table) else "(none replayable)")
    if args.profile:
        with num_threads(threads_per_worker(workers)):  # the bundled jobs' two sizes, as the sweep's workers run them
            for n_seeds in (5, 10):
                print(compile_check(device, n_seeds=n_seeds))
        print(profile_training(device))
        with num_threads(threads_per_worker(workers)):  # a step as the sweep's workers run it
            print(ablate_step(device))
            print(ensemble_scaling(device))
