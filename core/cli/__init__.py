"""The command line, `python -m core` (or `attention-lab`): one module per command group, on top of every package.

flags (the flag types: one-line errors naming the field and its allowed values), sweep (`sweep`: its flags, the
jobs they plan and the run), sweep_output (what a sweep prints: its dry run, progress and report), store
(`summary`, `export`, `prune`, `index`, `pack`, `report`), bench (`bench`), analysis (`baselines`, `pretrained`),
land (`land`, `park`), todo (`todo`). The packages below expose functions only; this package may import any of them, and
none of them imports it.
"""

import signal
import sys
import threading
from pathlib import Path

from ..analysis.blas import one_blas_thread
from ..results import store as st
from .flags import Parser
from .store import add_export, add_index, add_pack, add_prune, add_report, add_summary


def _one_line_warning(message, category, filename, lineno, file=None, line=None):
    print(f"warning: {message}", file=sys.stderr)


def _terminate_as_cancel() -> None:
    """SIGTERM (kill, timeout, a scheduler's stop) cancels as Ctrl-C does: claims and temp files are released and
    a sweep records the part it ran. A background job (`cmd &`) starts with SIGINT ignored, so SIGTERM is the
    signal that reaches it. Left alone where SIGTERM was ignored on purpose."""
    main_thread = threading.current_thread() is threading.main_thread()  # the only one that may set a handler
    if main_thread and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, signal.default_int_handler)


def build_parser() -> Parser:
    parser = Parser(prog="python -m core", description="Train and compare attention parameterizations.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    from .sweep import add_sweep  # loads torch: only for the CLI

    add_sweep(sub)
    add_summary(sub)
    add_prune(sub)
    add_export(sub)
    add_index(sub)
    add_pack(sub)
    add_report(sub)
    from .land import add_land, add_park

    add_land(sub)
    add_park(sub)
    from .todo import add_todo

    add_todo(sub)
    from .analysis import add_baselines, add_pretrained
    from .bench import add_bench  # torch-heavy modules load only for the CLI

    add_bench(sub)
    add_pretrained(sub)
    add_baselines(sub)
    return parser


def main(argv=None) -> int:
    import warnings

    warnings.showwarning = _one_line_warning  # a skipped file is one line, not Python's two-line format
    one_blas_thread()
    _terminate_as_cancel()
    parser = build_parser()
    args = parser.parse_args(argv)
    sub = next(a for a in parser._actions if a.dest == "command")
    try:
        if args.command in WRITERS and Path(args.store).is_dir():
            st.remove_stale_tmp(args.store)  # a writer killed mid-write (a worker, baselines) left its temp file
        args.func(args, sub.choices[args.command])
    except KeyboardInterrupt:  # Ctrl-C: a clean cancel (claims and temp files are released on the way out)
        print(f"python -m core {args.command}: cancelled; what finished before it is stored", file=sys.stderr)
        return 130
    except OSError as err:  # unreadable or unwritable store, disk full: one line, never a traceback
        what = f"{err.strerror or type(err).__name__}" + (f": {err.filename}" if err.filename else "")
        print(f"python -m core {args.command}: {what}", file=sys.stderr)
        return 1
    return 0


# commands that write into --store (a sweep removes its store's leftovers itself: sweep.run does it first)
WRITERS = {"baselines", "pretrained", "bench", "prune", "index", "pack", "land", "park"}


if __name__ == "__main__":
    sys.exit(main())
