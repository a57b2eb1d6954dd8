"""`python -m core`: sweep, bench, pretrained. Bad flags get one line naming the flag, exit code 2."""

import argparse
import re
import sys
from functools import cache, partial

from .attention import ATTENTION
from .store import BUNDLED_SWEEP  # noqa: F401 - part of the CLI's interface
from .tasks import TASKS

DEFAULT_STORE = "store"


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, not argparse's usage block
        self.exit(2, f"error: {message}\n")


def names(flag: str, allowed: dict):
    def parse(text: str) -> list[str]:
        items = list(allowed) if text == "all" else [t.strip() for t in text.split(",") if t.strip()]
        bad = [t for t in items if t not in allowed]
        if bad or not items:
            raise argparse.ArgumentTypeError(
                f"unknown {', '.join(bad) or repr(text)}; allowed: all, {', '.join(allowed)}"
            )
        return items

    parse.__name__ = flag  # argparse names the flag in its message
    return parse


def flag_error(parser: Parser, err: ValueError):
    """Config errors say 'd_model: ...'; the user typed --d-model."""
    msg = re.sub(r"^(\w+):", lambda m: f"--{m.group(1).replace('_', '-')}:", str(err))
    parser.error(msg)


def add_sweep(sub):
    p = sub.add_parser("sweep", help="train every attention x task x seed that the store lacks (resumes)")
    p.add_argument(
        "--attention",
        type=names("attention", ATTENTION),
        default=list(ATTENTION),
        help=f"comma list or 'all' (default all): {', '.join(ATTENTION)}",
    )
    p.add_argument(
        "--task",
        type=names("task", TASKS),
        default=list(TASKS),
        help=f"comma list or 'all' (default all): {', '.join(TASKS)}",
    )
    p.add_argument("--seeds", type=int, default=3, help="seeds 0..N-1, trained together as one ensemble (default 3)")
    p.add_argument("--store", default=DEFAULT_STORE, help=f"store directory (default {DEFAULT_STORE}/)")
    p.add_argument("--steps", type=int, default=None, help="optimizer steps (default: TrainConfig's)")
    p.add_argument("--batch-size", type=int, default=None)
    p.add_argument("--lr", type=float, default=None)
    p.add_argument("--eval-every", type=int, default=None)
    p.add_argument("--n-layers", type=int, default=None)
    p.add_argument("--d-model", type=int, default=None)
    p.add_argument("--n-heads", type=int, default=None)
    p.add_argument("--d-head", type=int, default=None)
    p.add_argument("--n-kv-heads", type=int, default=None)
    p.add_argument("--no-mlp", action="store_true", help="attention-only models")
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda when present)")
    p.add_argument(
        "--workers",
        type=int,
        default=None,
        help="jobs trained at once, each in its own process (default: one per CPU core; 1 on CUDA)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_sweep)


def cmd_sweep(args, parser):
    from . import store as st
    from . import sweep
    from .config import TrainConfig

    train_kw = {
        k: getattr(args, k) for k in ("steps", "batch_size", "lr", "eval_every") if getattr(args, k) is not None
    }
    model_kw = {k: getattr(args, k) for k in ("n_layers", "d_model", "n_heads", "d_head", "n_kv_heads")}
    model_kw = {k: v for k, v in model_kw.items() if v is not None}
    if args.no_mlp:
        model_kw["mlp"] = False
    if args.device not in (None, "cpu", "cuda"):
        parser.error(f"--device: unknown {args.device!r}; allowed: cpu, cuda")
    if args.workers is not None and args.workers <= 0:
        parser.error(f"--workers: must be a positive integer, got {args.workers}")
    try:
        jobs = sweep.plan(args.attention, args.task, args.seeds, TrainConfig(**train_kw), model_kw)
    except ValueError as err:
        flag_error(parser, err)

    from tqdm import tqdm

    from .flops import measured_sweep
    from .train import default_device
    from .workers import default_workers, keep_freed_memory, threads_per_worker

    keep_freed_memory()  # this process trains too when workers == 1
    device = args.device or str(default_device())
    workers = args.workers or default_workers(device)
    steps = jobs[0].train.steps if jobs else 0
    bar = tqdm(total=len(jobs) * steps, unit="step", disable=args.quiet, desc="sweep", smoothing=0.05)
    if workers > 1:  # jobs run out of order: name the pool, not the last job handed out
        bar.set_postfix_str(f"{workers} workers")

    missing = {}  # job -> seeds the store lacks: what the sweep trains, for its FLOP count

    def on_job(job, n_missing):
        missing[job] = n_missing
        if workers == 1:
            bar.set_postfix_str(f"{job.task.name}/{job.model.attention}")
        if not n_missing:
            bar.update(steps)

    run = partial(sweep.run, args.store, jobs, device, on_job=on_job, on_step=lambda _: bar.update(1), workers=workers)
    threads = workers * threads_per_worker(workers)  # all the sweep uses (1 worker: this process's)
    load_runs = cache(lambda: st.load_runs(args.store))  # read once, after the sweep: for its report and its table
    counts, report = measured_sweep(run, missing, device, threads, runs=load_runs)
    bar.close()
    runs = load_runs()
    wanted = {rid for j in jobs for rid in j.run_ids().values()}
    table = sweep.summary_table(runs[runs.run_id.isin(wanted)])
    cols = [
        "task",
        "attention",
        "seeds",
        "eval_acc",
        "eval_acc_std",
        "eval_loss",
        "params_attention",
        "seconds_per_step",
    ]
    print(
        table[cols].to_string(index=False, float_format=lambda v: f"{v:.4g}") if not table.empty else "no finished runs"
    )
    print(
        f"trained {counts['trained']} runs ({counts['diverged']} diverged), skipped {counts['skipped']} already stored"
    )
    if report is not None:  # the Runtime page shows it; a later sweep that trains nothing keeps it
        st.write_named(args.store, "bench", "sweep", report, {"device": device, "workers": workers})
        r = report.iloc[0]
        minutes, seconds = divmod(round(r.seconds), 60)
        print(
            f"{minutes} min {seconds} s wall, {r.gflops:.1f} GFLOP/s = {r.utilisation:.0%} "
            f"of the float32 matmul peak measured here ({r.peak_gflops:.0f} GFLOP/s at {threads} threads); "
            f"training steps alone: {r.step_utilisation:.0%} of it"
        )


def add_summary(sub):
    p = sub.add_parser("summary", help="final eval accuracy, mean ± std over seeds, per task x parameterization")
    p.add_argument("--store", default=DEFAULT_STORE, help=f"store directory (default {DEFAULT_STORE}/)")
    p.add_argument("--markdown", action="store_true", help="a markdown table (as in README.md)")
    p.set_defaults(func=cmd_summary)


def cmd_summary(args, parser):
    from . import store as st
    from . import sweep

    runs = st.load_runs(args.store)
    if runs.empty:
        parser.error(f"--store: no runs in {args.store!r}")
    print(sweep.accuracy_table(runs, markdown=args.markdown))


def main(argv=None) -> int:
    parser = Parser(prog="python -m core", description="Train and compare attention parameterizations.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    add_sweep(sub)
    add_summary(sub)
    from .bench import add_bench  # torch-heavy modules load only for the CLI
    from .pretrained import add_pretrained

    add_bench(sub)
    add_pretrained(sub)
    args = parser.parse_args(argv)
    args.func(args, sub.choices[args.command])
    return 0


if __name__ == "__main__":
    sys.exit(main())
