"""`python -m core`: sweep, bench, pretrained. Bad flags get one line naming the flag, exit code 2."""

import sys
from functools import cache, partial
from pathlib import Path

from .attention import NAMES as ATTENTION_NAMES
from .experiments.cluster import INSTALL, available
from .flags import (
    DEFAULT_STORE,
    MAX_WORKERS,
    Parser,
    bounded_int,
    choice,
    flag_error,
    lr_list,
    names,
    ray_address,
    store_dir,
)
from .flags import device as device_flag
from .results import store as st
from .results.store import BUNDLED_SWEEP  # noqa: F401 - part of the CLI's interface
from .training.config import LR_GRID, PRECISIONS
from .training.task_specs import TASK_NAMES as TASKS


def add_sweep(sub):
    p = sub.add_parser("sweep", help="train every attention x task x seed that the store lacks (resumes)")
    p.add_argument(
        "--attention",
        type=names("attention", ATTENTION_NAMES),
        default=list(ATTENTION_NAMES),
        help=f"comma list or 'all' (default all): {', '.join(ATTENTION_NAMES)}",
    )
    p.add_argument(
        "--task",
        type=names("task", TASKS),
        default=list(TASKS),
        help=f"comma list or 'all' (default all): {', '.join(TASKS)}",
    )
    p.add_argument(
        "--seeds",
        type=bounded_int("seeds", 1000),
        default=3,
        help="seeds 0..N-1; every seed x lr trains together as one ensemble (default 3)",
    )
    p.add_argument("--store", type=store_dir, default=DEFAULT_STORE, help=f"store directory (default {DEFAULT_STORE}/)")
    p.add_argument("--steps", type=bounded_int("steps", 10**7), default=None, help="optimizer steps (default 800)")
    p.add_argument("--batch-size", type=bounded_int("batch-size", 65536), default=None)
    p.add_argument(
        "--lr",
        type=lr_list,
        default=None,
        help=f"learning rates: a comma list, or 'grid' ({','.join(f'{v:g}' for v in LR_GRID)}); default 3e-3",
    )
    p.add_argument("--eval-every", type=bounded_int("eval-every", 10**7), default=None)
    p.add_argument("--n-layers", type=bounded_int("n-layers", 256), default=None)
    p.add_argument("--d-model", type=bounded_int("d-model", 65536), default=None)
    p.add_argument("--n-heads", type=bounded_int("n-heads", 65536), default=None)
    p.add_argument("--d-head", type=bounded_int("d-head", 65536), default=None)
    p.add_argument("--n-kv-heads", type=bounded_int("n-kv-heads", 65536), default=None)
    p.add_argument("--no-mlp", action="store_true", help="attention-only models")
    p.add_argument("--length", type=bounded_int("length", 1024), default=None,
                   help="task size: items per sequence, or key-value pairs for associative_recall (default: the "
                   "task's own)")  # fmt: skip
    p.add_argument("--n-symbols", type=bounded_int("n-symbols", 4096), default=None,
                   help="task alphabet size (default: the task's own)")
    p.add_argument("--precision", type=choice("precision", PRECISIONS), default="fp32",
                   help="fp32 (the reference) or bf16 (autocast; see README's precision section)")
    p.add_argument("--device", type=device_flag, default=None, help="cpu or cuda (default: cuda when present)")
    p.add_argument(
        "--workers",
        type=bounded_int("workers", MAX_WORKERS),
        default=None,
        help="jobs trained at once, each in its own process (default: one per CPU core; 1 on CUDA)",
    )
    p.add_argument(
        "--ray",
        type=ray_address,
        default=None,
        help="train each job as a task on Ray: 'local' (an in-process instance) or HOST:PORT of a running "
        f"cluster; the store stays on this machine (needs {INSTALL})",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_sweep)


def cmd_sweep(args, parser):
    from .analysis import findings
    from .experiments import sweep
    from .training.config import TrainConfig

    train_kw = {k: getattr(args, k) for k in ("steps", "batch_size", "eval_every") if getattr(args, k) is not None}
    lrs = args.lr or [TrainConfig().lr]
    train_kw["lr"] = lrs[0]
    train_kw["precision"] = args.precision
    task_kw = {k: getattr(args, k) for k in ("length", "n_symbols") if getattr(args, k) is not None}
    model_kw = {k: getattr(args, k) for k in ("n_layers", "d_model", "n_heads", "d_head", "n_kv_heads")}
    model_kw = {k: v for k, v in model_kw.items() if v is not None}
    if args.no_mlp:
        model_kw["mlp"] = False
    if args.ray and not available():
        parser.error(f"--ray: Ray is not installed; install it with: {INSTALL}")
    try:
        jobs = sweep.plan(args.attention, args.task, args.seeds, TrainConfig(**train_kw), model_kw, lrs, task_kw)
    except ValueError as err:
        flag_error(parser, err)

    from tqdm import tqdm

    from .experiments.flops import measured_sweep
    from .experiments.workers import default_workers, keep_freed_memory, threads_per_worker
    from .training.train import bf16_matmul_native, default_device

    keep_freed_memory()  # this process trains too when workers == 1
    device = args.device or str(default_device())
    if args.precision == "bf16" and not bf16_matmul_native(device):
        print(f"warning: no bf16 matrix units on this {device} (no AVX512-BF16 or AMX): bf16 will be slower than "
              "fp32 here", file=sys.stderr)  # fmt: skip
    workers = args.workers or default_workers(device)
    steps = jobs[0].train.steps if jobs else 0
    total = sum(len(j.members) for j in jobs) * steps
    bar = tqdm(total=total, unit="member-step", unit_scale=True, disable=args.quiet, desc="sweep", smoothing=0.05)
    if workers > 1 or args.ray:  # jobs run out of order: name the engine, not the last job handed out
        bar.set_postfix_str(f"Ray {args.ray}" if args.ray else f"{workers} workers")

    missing = {}  # job -> seeds the store lacks: what the sweep trains, for its FLOP count

    def on_job(job, n_missing):
        missing[job] = n_missing
        if workers == 1 and not args.ray:
            bar.set_postfix_str(f"{job.task.name}/{job.model.attention}")
        bar.update((len(job.members) - n_missing) * steps)  # stored already, or another sweep's

    run = partial(sweep.run, args.store, jobs, args.device if args.ray else device, on_job=on_job,
                  on_step=bar.update, workers=workers, ray=args.ray)  # fmt: skip
    threads = workers * threads_per_worker(workers)  # all the sweep uses (1 worker: this process's)
    load_runs = cache(lambda: st.load_runs(args.store))  # read once, after the sweep: for its report and its table
    try:
        if args.ray:  # a cluster's cores are not this machine's: no utilisation record against its peak
            counts, report = run(), None
        else:
            counts, report = measured_sweep(run, missing, device, threads, runs=load_runs)
    except sweep.SweepError as err:
        bar.close()
        print(f"error: {err}", file=sys.stderr)
        sys.exit(1)
    bar.close()
    runs = load_runs()
    wanted = {rid for j in jobs for rid in j.run_ids().values()}
    table = sweep.summary_table(findings.at_best_lr(runs[runs.run_id.isin(wanted)]))
    cols = ["task", "attention", "lr", "seeds", "solved", "test_acc", "test_acc_std", "test_loss", "params_attention",
            "seconds_per_step"]  # fmt: skip
    print(
        table[cols].to_string(index=False, float_format=lambda v: f"{v:.4g}") if not table.empty else "no finished runs"
    )
    print(
        f"trained {counts['trained']} runs ({counts['diverged']} diverged), skipped {counts['skipped']} already stored"
        + (f", {counts['claimed']} being trained by another sweep" if counts["claimed"] else "")
    )
    if report is not None:  # the Runtime page shows the newest; each sweep keeps its own record
        st.write_named(args.store, "bench", st.sweep_record_name(), report, {"device": device, "workers": workers})
        r = report.iloc[0]
        minutes, seconds = divmod(round(r.seconds), 60)
        print(
            f"{minutes} min {seconds} s wall ({args.precision}), {r.gflops:.1f} GFLOP/s = {r.utilisation:.0%} "
            f"of the {args.precision} matmul peak measured here ({r.peak_gflops:.0f} GFLOP/s at {threads} threads); "
            f"training steps alone: {r.step_utilisation:.0%} of it; at that peak its FLOPs would still take "
            f"{r.gflop / r.peak_gflops / 60:.1f} min"
        )
    if counts["failed"]:
        print(
            f"error: failed twice (a worker died or the job raised): {', '.join(counts['failed'])}; those runs "
            f"are not stored, every other run is. Rerun to resume.",
            file=sys.stderr,
        )
        sys.exit(1)


def add_summary(sub):
    p = sub.add_parser("summary", help="final eval accuracy, mean ± std over seeds, per task x parameterization")
    p.add_argument("--store", default=DEFAULT_STORE, help=f"store directory (default {DEFAULT_STORE}/)")
    p.add_argument("--markdown", action="store_true", help="a markdown table (as in README.md)")
    p.add_argument("--findings", action="store_true", help="also the findings against standard, with their statistics")
    p.add_argument("--scaling", action="store_true", help="also each scaling axis's thresholds (README: Scaling)")
    p.set_defaults(func=cmd_summary)


def cmd_summary(args, parser):
    from .experiments import sweep

    if not Path(args.store).is_dir():
        parser.error(f"--store: {args.store!r} is not a directory")
    runs = st.load_runs(args.store)
    if runs.empty:
        parser.error(f"--store: no runs in {args.store!r}")
    from .analysis import findings

    runs = findings.at_main_size(runs)  # the operating point; the scaling scans are `summary --scaling`
    print(sweep.accuracy_table(runs, markdown=args.markdown))
    if args.findings:
        print()
        for line in findings.sentences(findings.at_longest(runs), list(ATTENTION_NAMES), tasks=list(TASKS)):
            print(f"- {line}")
        rank = {n: i for i, n in enumerate([*TASKS, *ATTENTION_NAMES])}
        sens = findings.lr_sensitivity(findings.at_longest(runs))
        sens = sens.sort_values(["task", "attention"], key=lambda c: c.map(rank))
        print("\nlrs of the grid solving >= 80% of seeds, per cell:")
        for r in sens.itertuples():
            print(f"- {r.task} / {r.attention}: {r.lrs_solving} of {r.lrs} ({r.per_lr})")
    if args.scaling:
        from .analysis import scaling

        everything = st.load_runs(args.store)
        for axis in scaling.axes_present(everything):
            table = scaling.outcomes(everything, axis)
            print(f"\nscaling: {axis} ({scaling.AXES[axis].label}), each cell at its best lr, "
                  f"{int(table.steps.iloc[0])} steps")  # fmt: skip
            grid = scaling.solved_grid(table, list(ATTENTION_NAMES))
            print(scaling.grid_markdown(grid, axis) if args.markdown else grid.to_string())
            print(scaling.thresholds(table, list(ATTENTION_NAMES)).to_string(index=False))
            for line in scaling.sentences(table, axis, list(ATTENTION_NAMES)):
                print(f"- {line}")


def add_export(sub):
    from .results.export import FORMATS

    p = sub.add_parser("export", help="runs and metrics as csv/parquet, or into TensorBoard, MLflow or W&B (offline)")
    p.add_argument("--store", default=DEFAULT_STORE, help=f"store directory (default {DEFAULT_STORE}/)")
    p.add_argument("--to", type=choice("to", FORMATS), required=True, help=f"one of {', '.join(FORMATS)}")
    p.add_argument("--out", type=store_dir, required=True, help="directory to write into (created if absent)")
    p.set_defaults(func=cmd_export)


def cmd_export(args, parser):
    from .results.export import MissingExtra, export

    if not Path(args.store).is_dir():
        parser.error(f"--store: {args.store!r} is not a directory")
    try:
        print(export(args.store, args.to, args.out))
    except ValueError as err:
        flag_error(parser, err)
    except MissingExtra as err:
        parser.exit(2, f"error: {err}\n")


def add_prune(sub):
    p = sub.add_parser(
        "prune",
        help="keep weights and patterns only for the runs the pages read (data/ size): each cell's best lr "
        "at its task's longest training",
    )
    p.add_argument("--store", type=store_dir, default=DEFAULT_STORE, help=f"store directory (default {DEFAULT_STORE}/)")
    p.add_argument(
        "--max-seeds", type=bounded_int("max-seeds", 1000), default=None,
        help="keep weights for at most this many seeds per cell, the lowest (default: every seed)",
    )  # fmt: skip
    p.set_defaults(func=cmd_prune)


def weights_to_keep(runs, max_seeds: int | None = None) -> set[str]:
    """The run ids whose weights prune keeps: each cell's best-lr runs at its task's longest training (what the
    pages show by default), the lowest `max_seeds` seeds of each."""
    from .analysis import findings

    best = findings.at_best_lr(findings.at_longest(runs))
    if max_seeds is not None:
        cell = [c for c in findings.CELL if c in best.columns]
        best = best[best.groupby(cell).seed.rank(method="first") <= max_seeds]
    return set(best.run_id)


def cmd_prune(args, parser):

    runs = st.load_runs(args.store)
    if runs.empty:
        parser.error(f"--store: no runs in {args.store!r}")
    keep = weights_to_keep(runs, args.max_seeds)
    removed = st.drop_weights(args.store, [r for r in runs.run_id if r not in keep])
    print(f"kept the weights of {len(keep)} best-lr runs, removed {removed} others' (their metrics stay)")


def add_index(sub):
    p = sub.add_parser("index", help="rebuild a store's runs index from its run files (after copying a store)")
    p.add_argument("--store", type=store_dir, default=DEFAULT_STORE, help=f"store directory (default {DEFAULT_STORE}/)")
    p.add_argument("--slim", action="store_true",
                   help="first rewrite every table file in today's layout: a run file in one 4 KiB block, others "
                        "without pandas' schema entry (values and metadata unchanged)")  # fmt: skip
    p.set_defaults(func=cmd_index)


def cmd_index(args, parser):
    from .results import index
    from .results.runfile import slim

    if not Path(args.store, "runs").is_dir():
        parser.error(f"--store: no runs in {args.store!r}")
    if args.slim:
        kinds = ("runs", "analysis", "bench", "pretrained")
        files = [p for kind in kinds for p in Path(args.store, kind).glob("*.parquet")]
        print(f"slimmed {sum(slim(p, run=p.parent.name == 'runs') for p in files)} of {len(files)} table files")
    print(f"indexed {index.compact(args.store, rebuild=True)} runs in {args.store}/index/")


def _one_line_warning(message, category, filename, lineno, file=None, line=None):
    print(f"warning: {message}", file=sys.stderr)


def build_parser() -> Parser:
    parser = Parser(prog="python -m core", description="Train and compare attention parameterizations.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    add_sweep(sub)
    add_summary(sub)
    add_prune(sub)
    add_export(sub)
    add_index(sub)
    from .analysis.baselines import add_baselines
    from .analysis.pretrained import add_pretrained
    from .benchmarks.bench import add_bench  # torch-heavy modules load only for the CLI

    add_bench(sub)
    add_pretrained(sub)
    add_baselines(sub)
    return parser


def main(argv=None) -> int:
    import warnings

    warnings.showwarning = _one_line_warning  # a skipped file is one line, not Python's two-line format
    parser = build_parser()
    args = parser.parse_args(argv)
    sub = next(a for a in parser._actions if a.dest == "command")
    try:
        if args.command in WRITERS and Path(args.store).is_dir():
            st.remove_stale_tmp(args.store)  # a writer killed mid-write (a worker, baselines) left its temp file
        args.func(args, sub.choices[args.command])
    except OSError as err:  # unreadable or unwritable store, disk full: one line, never a traceback
        what = f"{err.strerror or type(err).__name__}" + (f": {err.filename}" if err.filename else "")
        print(f"python -m core {args.command}: {what}", file=sys.stderr)
        return 1
    return 0


# commands that write into --store (a sweep removes its store's leftovers itself: sweep.run does it first)
WRITERS = {"baselines", "pretrained", "bench", "prune", "index"}


if __name__ == "__main__":
    sys.exit(main())
