"""`python -m core sweep`: its flags, the jobs they plan, and the run with its progress bar and report."""

import sys
import time
from dataclasses import replace
from functools import partial

from ..attention import NAMES as ATTENTION_NAMES
from ..experiments import sweep
from ..experiments.cluster import INSTALL, available
from ..results import store as st
from ..training.config import LR_GRID, PRECISIONS, TrainConfig
from ..training.criterion import PATIENCE, SCHEDULES, SOLVED, UNTIL
from ..training.device import bf16_matmul_native, default_device
from ..training.task_specs import TASK_NAMES as TASKS
from .flags import (
    add_device,
    add_store,
    add_workers,
    bounded_int,
    choice,
    flag_error,
    lr_list,
    names,
    part,
    positive_float,
    ray_address,
    read_store,
)
from .sweep_output import criterion_postfix, print_outcome, print_outlook, print_utilisation


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
    add_store(p)
    p.add_argument(
        "--steps",
        type=bounded_int("steps", 10**7),
        default=None,
        help="optimizer steps (default 800); with --until solved, the cap",
    )
    p.add_argument(
        "--until",
        type=choice("until", UNTIL),
        default="steps",
        help=f"steps: train every run for --steps; solved: a run stops once its validation accuracy is "
        f">= {SOLVED} at {PATIENCE} evaluations in a row, or at the cap, an lr that can no longer be "
        "chosen stops too, and a rerun with a larger --steps extends the stored runs (default steps)",
    )
    p.add_argument(
        "--schedule",
        type=choice("schedule", SCHEDULES),
        default=None,
        help="after the warmup: cosine (decays to the last step) or constant (default: constant with "
        "--until solved, else cosine)",
    )
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
    p.add_argument(
        "--length",
        type=bounded_int("length", 1024),
        default=None,
        help="task size: items per sequence, or key-value pairs for associative_recall (default: the task's own)",
    )
    p.add_argument(
        "--n-symbols",
        type=bounded_int("n-symbols", 4096),
        default=None,
        help="task alphabet size (default: the task's own)",
    )
    p.add_argument(
        "--precision",
        type=choice("precision", PRECISIONS),
        default="fp32",
        help="fp32 (the reference) or bf16 (autocast; docs/cli.md: Precision)",
    )
    add_device(p)
    add_workers(p, "jobs trained at once, each in its own process (default: one per CPU core; 1 on CUDA)")
    p.add_argument(
        "--ray",
        type=ray_address,
        default=None,
        help="train each job as a task on Ray: 'local' (an in-process instance) or HOST:PORT of a running "
        f"cluster; the store stays on this machine (needs {INSTALL})",
    )
    p.add_argument(
        "--carry-from",
        type=read_store,
        default=None,
        metavar="STORE",
        help="under --until solved, also carry over each member another store (data, say) holds at a shorter cap, "
        "stopped before it, or at this cap (more seeds): the same run, stored here again, not trained (its end "
        "state is not needed)",
    )
    p.add_argument(
        "--part",
        type=part,
        default=None,
        metavar="K/N",
        help="train only the K-th of N parts of each job: its lrs K, K+N, ... of --lr, every seed (a job longer "
        "than a session, parked part by part: docs/cli.md); its record counts as the line's",
    )
    p.add_argument(
        "--hours",
        type=positive_float("hours"),
        default=None,
        help="start no job that could run past this many hours from now (a machine lent for a session): each job, "
        "as it starts, times a few of its steps here and, if its members to the cap would end later, is left for a "
        "later sweep, named on stderr (exit status 75); the jobs that started end and are stored",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print what the sweep would train, per job: stored, held at a higher cap (not trained again), claimed "
        "by a sweep training them now, carried over from a shorter cap, taken up from its saved end states, from a "
        "checkpoint, from step 0, and the member-steps at most; then exit, nothing trained or written",
    )
    p.set_defaults(func=cmd_sweep)


def plan_jobs(args, parser) -> list:
    """The sweep's jobs from its flags; a config the flags make invalid is one line naming the flag (exit 2)."""
    train_kw = {k: getattr(args, k) for k in ("steps", "batch_size", "eval_every") if getattr(args, k) is not None}
    lrs = args.lr or [TrainConfig().lr]
    train_kw.update(lr=lrs[0], precision=args.precision, until=args.until)
    train_kw["schedule"] = args.schedule or ("constant" if args.until == "solved" else "cosine")
    task_kw = {k: getattr(args, k) for k in ("length", "n_symbols") if getattr(args, k) is not None}
    model_kw = {k: getattr(args, k) for k in ("n_layers", "d_model", "n_heads", "d_head", "n_kv_heads")}
    model_kw = {k: v for k, v in model_kw.items() if v is not None}
    if args.no_mlp:
        model_kw["mlp"] = False
    if args.ray and args.hours:
        parser.error("--hours: not with --ray (each node would time its own pace; a cluster outlives a session)")
    if args.ray and not available():
        parser.error(f"--ray: Ray is not installed; install it with: {INSTALL}")
    try:
        return sweep.plan(args.attention, args.task, args.seeds, TrainConfig(**train_kw), model_kw, lrs, task_kw)
    except ValueError as err:
        flag_error(parser, err)


def cmd_sweep(args, parser):
    from tqdm import tqdm

    from ..experiments.flops import measured_sweep
    from ..experiments.landing import planned_left_behind
    from ..experiments.workers import default_workers, keep_freed_memory, threads_per_worker

    jobs = [replace(job, carry_from=args.carry_from) for job in plan_jobs(args, parser)]
    if args.part:
        k, n = args.part
        if n > len(args.lr or [None]):
            parser.error(f"--part: N must be at most the {len(args.lr or [None])} learning rates of --lr, got {n}")
        jobs = [job.part(k, n) for job in jobs]
    warning = planned_left_behind(args.store, jobs)
    if warning:
        print(f"warning: {warning}", file=sys.stderr)
    if args.dry_run:
        print_outlook(args.store, jobs)
        return
    if args.ray and args.ray != "local":  # an address nothing answers at is refused before the store is created
        from ..experiments.cluster import ClusterError, probe

        try:
            probe(args.ray)
        except ClusterError as err:
            print(f"error: {err}", file=sys.stderr)
            sys.exit(1)
    keep_freed_memory()  # this process trains too when workers == 1
    device = args.device or str(default_device())
    if args.precision == "bf16" and not bf16_matmul_native(device):
        print(
            f"warning: no bf16 matrix units on this {device} (no AVX512-BF16 or AMX): bf16 will be slower than "
            "fp32 here",
            file=sys.stderr,
        )
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
            bar.set_postfix_str(job.label)
        bar.update((len(job.members) - n_missing) * steps)  # stored already, or another sweep's

    members = {"training": 0, "solved": 0, "cap": 0, "pruned": 0, "diverged": 0}

    def on_stop(why: str, steps_left: int) -> None:  # the bar's total follows the members still learning
        members[why] = members.get(why, 0) + 1
        members["training"] -= 1
        bar.total -= steps_left
        if args.until == "solved":
            bar.set_postfix_str(criterion_postfix(members), refresh=False)
        bar.refresh()

    def on_job_counted(job, n_missing):
        members["training"] += n_missing
        on_job(job, n_missing)

    run = partial(
        sweep.run,
        args.store,
        jobs,
        args.device if args.ray else device,
        on_job=on_job_counted,
        on_step=bar.update,
        workers=workers,
        ray=args.ray,
        on_stop=on_stop,
        deadline=args.hours and time.time() + args.hours * 3600,
    )
    threads = workers * threads_per_worker(workers)  # all the sweep uses (1 worker: this process's)
    try:
        if args.ray:  # a cluster's cores are not this machine's: no utilisation record against its peak
            counts, report = run(), None
        else:  # it reads the runs before and after: what this sweep stored is what it counts
            counts, report = measured_sweep(
                run, missing, device, threads, args.precision, runs=lambda: st.load_runs(args.store)
            )
    except sweep.SweepError as err:
        bar.close()
        print(f"error: {err}", file=sys.stderr)
        sys.exit(1)
    bar.close()
    print_outcome(args, jobs, st.load_runs(args.store), counts)
    if report is not None:  # the Runtime page shows the newest; each sweep keeps its own record
        st.write_named(args.store, "bench", st.sweep_record_name(), report, {"device": device, "workers": workers})
        print_utilisation(report.iloc[0], args.precision, threads, device)
    if counts["cancelled"]:  # recorded above; main reports the cancel (one line, exit status 130)
        raise KeyboardInterrupt
    if counts["failed"]:
        print(
            f"error: failed twice (a worker died or the job raised): {', '.join(counts['failed'])}; those runs "
            f"are not stored, every other run is. Rerun to resume.",
            file=sys.stderr,
        )
        sys.exit(1)
    if counts["left"]:
        print(
            f"left for a later sweep (could end past --hours {args.hours:g}): {', '.join(counts['left'])}; "
            "rerun the line to train them",
            file=sys.stderr,
        )
        sys.exit(75)  # EX_TEMPFAIL: not done, try again later
