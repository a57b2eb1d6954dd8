"""`python -m core todo`: the sweep lines the criterion protocol still asks of a store (docs/reproduce.md's Still to
run, core.report.pending), one runnable line each, for a shell loop.
`--at-most N` keeps the lines a time-boxed machine can finish: its measured member-steps a minute times its minutes;
`--hours H` keeps those this machine can finish in H hours, timing each job's steps here (with `--into`, the steps
left in that scratch store). A line with runs parked in the store (core.experiments.parking) counts them as done, and
with `--into` is preceded by the `park --into` line that writes them back there."""

import math
import re
import shlex
import sys

from ..results import store as st
from .flags import MAX_WORKERS, bounded_int, choice, positive_float, read_store


def add_todo(sub):
    p = sub.add_parser(
        "todo",
        help="print the sweep lines still to run (docs/reproduce.md: Still to run), raises first, one per line",
    )
    p.add_argument("--store", type=read_store, default="data", help="store to read (default data/)")
    p.add_argument("--into", type=read_store, default=None, help="scratch store the lines train into (default: theirs)")
    p.add_argument("--device", type=choice("device", ("cpu", "cuda")), default=None, help="cpu or cuda")
    p.add_argument("--workers", type=bounded_int("workers", MAX_WORKERS), default=None, help="jobs trained at once")
    p.add_argument(
        "--at-most",
        type=bounded_int("at-most", 10**12),
        default=None,
        metavar="MEMBER_STEPS",
        help="only the lines of at most this many member-steps trained from step 0",
    )
    p.add_argument(
        "--hours",
        type=positive_float("hours"),
        default=None,
        help="only the lines that finish within this many hours here: each job's member-steps at the pace a few of "
        "its steps run on this machine, taken longest first by --cores one-thread workers (times every job first: "
        "a few seconds each; each line's estimate goes to stderr)",
    )
    p.add_argument("--cores", type=bounded_int("cores", MAX_WORKERS), default=2, help="CPU workers (default 2)")
    p.set_defaults(func=cmd_todo)


def for_store(
    line: str, into: str | None = None, device: str | None = None, workers: int | None = None, carry: str | None = None
) -> str:
    """A recipe line retargeted: its store, its workers, a device, a store to carry stopped members from (sweep
    --carry-from); the runs it plans stay the same."""
    for flag, value in (("--store", _quoted(into)), ("--workers", workers), ("--carry-from", _quoted(carry))):
        if value is not None:  # replaced where the line names it, else added
            named = f"{flag} {value}"
            line, n = re.subn(rf"{flag} \S+", lambda _, named=named: named, line)
            line += "" if n else f" {named}"
    return line + (f" --device {device}" if device else "")


def _quoted(path: str | None) -> str | None:
    return path and shlex.quote(path)  # a path for the shell


def cmd_todo(args, parser):
    from ..report.pending import pending

    runs = st.load_runs(args.store)
    if runs.empty:
        parser.error(f"--store: no runs in {args.store!r}")
    if args.hours is not None:
        from ..experiments.pace import busy

        if note := busy(args.cores):
            print(note, file=sys.stderr)
    for row in pending(runs).itertuples():
        if args.at_most is not None and row.from_zero > args.at_most:
            continue
        held = parked_share(args.store, row.line)
        job_steps = {name: round(n * (1 - held.get(name, 0))) for name, n in zip(row.trained, row.job_steps)}
        carry = args.store if args.into else None  # the stopped members its store holds
        if args.hours is not None and args.into:
            job_steps = left_in(args.into, row.line, job_steps, carry)
        if args.hours is not None and hours_here(row.line, job_steps, args.cores, args.hours) > args.hours:
            continue
        if held and args.into:  # first write the parked runs back, so the sweep skips them
            print(f"python -m core park {shlex.quote(row.line)} --into {_quoted(args.into)}{_store(args.store)}")
        elif held:
            print(
                f"# runs of {len(held)} jobs of this line are parked in {args.store}: park --into SCRATCH",
                file=sys.stderr,
            )
        print(for_store(row.line, args.into, args.device, args.workers, carry), flush=True)


def parked_share(store: str, line: str) -> dict[str, float]:
    """{parameterization: the share of its job's members of the line that `store` has parked}, where any
    (core.experiments.parking): a job's member-steps here are the rest's, members of a job costing alike."""
    from ..experiments import parking
    from .land import line_jobs

    if not parking.folder(store, line).is_dir():
        return {}
    return parking.parked_share(store, line, line_jobs(line))


def _store(store: str) -> str:
    return "" if store == "data" else f" --store {_quoted(store)}"


def left_in(into: str, line: str, job_steps: dict, carry: str) -> dict:
    """Each job's member-steps where the line trains into `into`: a member that store holds (a checkpoint, a shorter
    cap's end state) goes on from there (the sweep's dry run counts each to the cap from where it starts), so a job
    takes the fewer of that and pending's count from step 0. A job a sweep is training there now (its members
    claimed) keeps pending's count: the dry run counts claimed members as none, which would call it done."""
    from dataclasses import replace

    from ..experiments.outlook import outlook
    from .land import line_jobs

    table = outlook(into, [replace(job, carry_from=carry) for job in line_jobs(line)])
    busy = set(table.attention[table.claimed > 0])
    if busy:
        print(
            f"# a sweep running into {into} holds the members of {', '.join(sorted(busy))} now: timed from step 0",
            file=sys.stderr,
        )
    there = dict(zip(table.attention, table["member-steps"]))
    return {name: steps if name in busy else min(steps, there.get(name, steps)) for name, steps in job_steps.items()}


def hours_here(line: str, job_steps: dict, cores: int, limit: float) -> float:
    """The line's wall hours on this machine (core.experiments.pace): each job's member-steps (pending's count from step
    0, or left_in's) at its pace here, timed longest job first; past `limit`, the first job alone over it (the rest
    untimed). Says which on stderr."""
    from ..experiments.pace import member_step_seconds, wall_hours
    from .land import line_jobs

    jobs = [(job, job_steps[job.model.attention]) for job in line_jobs(line)]
    hours = []
    for job, steps in sorted(jobs, key=lambda pair: pair[1], reverse=True):
        hours.append(steps and steps * member_step_seconds(job, "cpu") / 3600)  # a job all carried: none to time
        if hours[-1] > limit:
            alone = f"{job.model.attention}'s job alone {hours[-1]:.1f} h{_parts(job, hours[-1], limit)}"
            print(f"# over {limit:g} h: {alone}: {line}", file=sys.stderr)
            return hours[-1]
    took = wall_hours(hours, cores)
    print(f"# {took:.1f} h on {cores} cores (longest job {max(hours):.1f} h): {line}", file=sys.stderr, flush=True)
    return took


def _parts(job, hours: float, limit: float) -> str:
    """How a job over `limit` hours fits: in parts of its lrs (sweep --part K/N), each parked when it is done."""
    n, lrs = math.ceil(hours / limit), len(job.lrs or (job.train.lr,))
    if n > lrs:
        return f" (over {limit:g} h even one lr at a time: {hours / lrs:.1f} h)"
    return f" (in parts, sweep --part K/{n}: {hours / n:.1f} h each where its lrs cost alike; park each when done)"
