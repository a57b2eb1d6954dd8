"""`python -m core todo`: the sweep lines the criterion protocol still asks of a store (docs/reproduce.md's Still to
run, core.report.pending), then the points not yet trained to it, one runnable line each, for a shell loop."""

import re
import shlex

from ..experiments import recipe
from ..results import store as st
from .flags import MAX_WORKERS, bounded_int, choice, read_store


def add_todo(sub):
    p = sub.add_parser(
        "todo",
        help="print the sweep lines still to run (docs/reproduce.md: Still to run), raises first, one per line",
    )
    p.add_argument("--store", type=read_store, default="data", help="store to read (default data/)")
    p.add_argument("--into", type=read_store, default=None, help="scratch store the lines train into (default: theirs)")
    p.add_argument("--device", type=choice("device", ("cpu", "cuda")), default=None, help="cpu or cuda")
    p.add_argument("--workers", type=bounded_int("workers", MAX_WORKERS), default=None, help="jobs trained at once")
    p.set_defaults(func=cmd_todo)


def for_store(line: str, into: str | None = None, device: str | None = None, workers: int | None = None) -> str:
    """A recipe line retargeted: its store, its workers, a device; the runs it plans stay the same."""
    for flag, value in (("--store", into and shlex.quote(into)), ("--workers", workers)):
        if value is not None:  # replaced where the line names it, else added
            named = f"{flag} {value}"
            line, n = re.subn(rf"{flag} \S+", lambda _, named=named: named, line)
            line += "" if n else f" {named}"
    return line + (f" --device {device}" if device else "")


def cmd_todo(args, parser):
    from ..report.pending import pending

    runs = st.load_runs(args.store)
    if runs.empty:
        parser.error(f"--store: no runs in {args.store!r}")
    for line in [*pending(runs).line, *recipe.NOT_YET]:
        print(for_store(line, args.into, args.device, args.workers))
