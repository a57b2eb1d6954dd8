"""`python -m core land`: copy a finished recipe line's runs and sweep records from the scratch store that
trained it into the store the pages read (core.experiments.landing), the step between a line's sweep and the
after-sweeps commands (docs/reproduce.md). `python -m core park`: keep an unfinished line's stored runs in the
store between sessions, and write them back into a scratch store (core.experiments.parking)."""

import sys
from pathlib import Path

from ..experiments import parking, recipe
from ..experiments.landing import LandingError, land
from ..results import size as sz
from ..results.packs import holds_runs
from ..results.stores import BUNDLED
from .flags import Parser, read_store, store_dir
from .sweep import add_sweep, plan_jobs


def add_land(sub):
    p = sub.add_parser(
        "land",
        help="copy a finished recipe line's runs and sweep records from its scratch store (docs/reproduce.md)",
    )
    p.add_argument("line", help="the sweep command exactly as core/experiments/recipe.py's CRITERION_SWEEPS holds it")
    p.add_argument("--from", dest="scratch", type=read_store, required=True, help="the scratch store that ran it")
    p.add_argument("--store", type=store_dir, default="data", help="store to copy into (default data/)")
    p.add_argument(
        "--weights",
        action="store_true",
        help="copy the runs' weights and whole models too (a point whose weights the pages read; prune then "
        "keeps the ones they show)",
    )
    p.set_defaults(func=cmd_land)


def add_park(sub):
    p = sub.add_parser(
        "park",
        help="keep a line's stored runs in the store between sessions, or write them back into a scratch store",
    )
    p.add_argument("line", help="the sweep command of a line (todo's, with any --store)")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--from", dest="scratch", type=read_store, help="park the line's runs this scratch store holds")
    where.add_argument("--into", type=store_dir, help="write the line's parked runs and records into this store")
    p.add_argument("--store", type=store_dir, default="data", help="the store that parks them (default data/)")
    p.set_defaults(func=cmd_park)


def line_jobs(command: str) -> list:
    """The jobs a `python -m core sweep ...` command line plans (a recipe line's), as the CLI plans them."""
    parser = Parser(prog="python -m core")
    add_sweep(parser.add_subparsers(dest="command", parser_class=Parser))
    return plan_jobs(parser.parse_args(command.removeprefix("python -m core ").split()), parser)


def cmd_land(args, parser):
    if args.line not in recipe.CRITERION_SWEEPS:
        parser.error(
            f"line: not one of the {len(recipe.CRITERION_SWEEPS)} lines of CRITERION_SWEEPS in "
            "core/experiments/recipe.py; add it at the end of RAISES (core/experiments/raises.py) first, with a "
            "comment saying why it runs"
        )
    if not holds_runs(args.scratch):
        parser.error(f"--from: no runs in {args.scratch!r}")
    jobs = line_jobs(args.line)
    try:
        limit = sz.LIMIT if Path(args.store).resolve() == BUNDLED.resolve() else None  # what the app ships
        done = land(args.scratch, args.store, args.line, jobs, weights=args.weights, limit=limit)
    except LandingError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(1)
    kept = parking.clear(args.store, args.line)
    if kept is not None:
        print(
            f"deleted the line's parked runs, {parking.folder(args.store, args.line)}: they are in {args.store} now, "
            f"with {kept} parked sweep records the scratch store lacked"
        )
    print(
        f"copied {done.runs} runs into {args.store} as one pack ({done.held} held there already, left as they "
        "were), "
        f"{done.records} sweep records"
        + (f", {done.weights} weights and model files" if args.weights else "")
        + "; next: the after-sweeps commands of docs/reproduce.md, from prune --superseded on"
    )
    disk = sz.size(args.store, caches=True)[1] if limit is not None else 0
    if limit is not None and disk > limit:  # the weights copied for prune to choose from: not counted up front
        print(
            f"note: {args.store} is {disk / 1e6:.2f} MB on disk, over its {limit / 1e6:g} MB limit until prune drops "
            "the weights and models it does not keep"
        )


def cmd_park(args, parser):
    jobs = _jobs(args.line, parser)
    where = parking.folder(args.store, args.line)
    if args.into:
        if not where.is_dir():
            print(f"nothing of this line is parked in {args.store}")
            return
        runs, records = parking.unpark(args.store, args.into, args.line)
        print(f"wrote {runs} parked runs and {records} sweep records from {where} into {args.into}")
        return
    if not holds_runs(args.scratch):
        parser.error(f"--from: no runs in {args.scratch!r}")
    done = parking.park(args.scratch, args.store, args.line, jobs)
    print(
        f"parked {done.runs} runs and {done.records} sweep records in {where}: {done.members} of the line's "
        f"{done.planned} members, {done.jobs} of its {done.of} jobs whole; on a fresh machine, park --into SCRATCH, "
        "then the line (or its next --part) into SCRATCH; now `python -m core report --store "
        f"{args.store}`: its size line counts parked runs"
    )


def _jobs(line: str, parser) -> list:
    """The line's jobs; a line that is no sweep command is a one-line error naming the field."""
    try:
        return line_jobs(line)
    except SystemExit:
        parser.error("line: must be a sweep command, python -m core sweep ... (as todo prints it)")
