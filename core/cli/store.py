"""`python -m core summary`, `export`, `prune`, `index` and `report`: the commands that read or tidy a store.
Bad flags get one line naming the flag, exit code 2."""

import sys
from pathlib import Path

from ..attention import NAMES as ATTENTION_NAMES
from ..results import store as st
from ..results import superseded, weights
from ..training.task_specs import TASK_NAMES as TASKS
from .flags import add_store, bounded_int, choice, flag_error, read_store, store_dir


def add_summary(sub):
    p = sub.add_parser("summary", help="final eval accuracy, mean ± std over seeds, per task x parameterization")
    add_store(p, writes=False)
    p.add_argument("--markdown", action="store_true", help="markdown tables (as in docs/results.md)")
    p.add_argument("--findings", action="store_true", help="also the findings against standard, with their statistics")
    p.add_argument(
        "--scaling", action="store_true", help="also each scaling axis's thresholds (docs/results.md: Scaling)"
    )
    p.set_defaults(func=cmd_summary)


def print_endpoints(runs) -> None:
    """The criterion runs' two endpoints per cell, against standard, Holm-corrected over the table."""
    from ..analysis import endpoint_words, endpoints, stats

    table = endpoints.endpoints(runs, list(ATTENTION_NAMES), list(TASKS))
    if table.empty:
        return
    print(
        "\ntrained to the criterion (each cell at its best lr): solved by the cap, k/n [Wilson 95%]; steps to "
        "solve, Kaplan-Meier median [95%] (censored at the cap); against standard: Fisher / log-rank, Holm over "
        "the table"
    )
    for r in table.itertuples():
        med = endpoint_words.steps_text
        print(
            f"- {r.task} / {r.attention} (lr {r.lr:g}, cap {r.cap}): solved {r.solved}/{r.seeds} "
            f"[{r.solved_lo:.2f}, {r.solved_hi:.2f}]; steps to solve {med(r.median_steps)} [{med(r.median_lo)}, "
            f"{med(r.median_hi)}]"
            + (
                ""
                if r.attention == "standard"
                else f"; Holm p {stats.p_text(r.fisher_holm)} / {stats.p_text(r.logrank_holm)}: {endpoints.verdict(r)}"
            )
        )


def cmd_summary(args, parser):
    from ..experiments import sweep

    if not Path(args.store).is_dir():
        parser.error(f"--store: {args.store!r} is not a directory")
    runs = st.load_runs(args.store)
    if runs.empty:
        parser.error(f"--store: no runs in {args.store!r}")
    from ..analysis import findings, sensitivity, words

    runs = findings.at_main_size(runs)  # the operating point; the scaling scans are `summary --scaling`
    print(sweep.accuracy_table(runs, markdown=args.markdown))
    if args.findings:
        print()
        at = findings.at_longest(runs)
        for line in words.sentences(findings.fixed_budget(at), list(ATTENTION_NAMES), tasks=list(TASKS)):
            print(f"- {line}")
        rank = {n: i for i, n in enumerate([*TASKS, *ATTENTION_NAMES])}
        sens = sensitivity.lr_sensitivity(findings.at_longest(runs))
        sens = sens.sort_values(["task", "attention"], key=lambda c: c.map(rank))
        print("\nlrs of the grid solving >= 80% of seeds, per cell:")
        for r in sens.itertuples():
            print(f"- {r.task} / {r.attention}: {r.lrs_solving} of {r.lrs} ({r.per_lr})")
        print_endpoints(runs)
    if args.scaling:
        from ..analysis import axes, scaling, words

        everything = st.load_runs(args.store)
        for axis in axes.axes_present(everything):
            table = scaling.outcomes(everything, axis)
            print(
                f"\nscaling: {axes.AXES[axis].title} ({axes.AXES[axis].label}), each cell at its best lr, "
                f"{words.protocol_label(table)}"
            )
            grid = scaling.solved_grid(table, list(ATTENTION_NAMES))
            print(scaling.grid_markdown(grid, axis) if args.markdown else grid.to_string())
            print(scaling.thresholds(table, list(ATTENTION_NAMES)).to_string(index=False))
            for line in words.scan_sentences(table, axis, list(ATTENTION_NAMES)):
                print(f"- {line}")


def add_export(sub):
    from ..results.export import FORMATS

    p = sub.add_parser("export", help="runs and metrics as csv/parquet, or into TensorBoard, MLflow or W&B (offline)")
    add_store(p, writes=False)
    p.add_argument("--to", type=choice("to", FORMATS), required=True, help=f"one of {', '.join(FORMATS)}")
    p.add_argument("--out", type=store_dir, required=True, help="directory to write into (created if absent)")
    p.set_defaults(func=cmd_export)


def cmd_export(args, parser):
    from ..results.export import MissingExtra, export

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
    add_store(p)
    p.add_argument(
        "--max-seeds",
        type=bounded_int("max-seeds", 1000),
        default=None,
        help="keep weights for at most this many seeds per cell, the lowest (default: every seed)",
    )
    p.add_argument(
        "--max-model-seeds",
        type=bounded_int("max-model-seeds", 1000),
        default=None,
        help="keep whole models (models/, for core.load_model and the head scores) for at most this many of those "
        "seeds per cell (default: as --max-seeds); a model is 5-10x a run's head weights",
    )
    p.add_argument(
        "--model-tasks",
        type=choice("model-tasks", TASKS),
        action="append",
        default=None,
        help="keep whole models only for this task (repeat for several; default: every task). data/ keeps "
        "induction's, which the head scores read",
    )
    p.add_argument(
        "--superseded",
        action="store_true",
        help="first delete the runs a higher cap replaced: each criterion run (--until solved) whose member (the "
        "same configs but --steps) the store also holds at a higher cap, whose first steps it holds",
    )
    p.set_defaults(func=cmd_prune)


def weights_to_keep(runs, max_seeds: int | None = None) -> set[str]:
    """The run ids whose weights prune keeps: each cell's best-lr runs at its task's longest training (what the
    pages show by default), the lowest `max_seeds` seeds of each."""
    from ..analysis import findings

    best = findings.at_best_lr(findings.at_longest(runs))
    if max_seeds is not None:
        cell = [c for c in findings.CELL if c in best.columns]
        best = best[best.groupby(cell).seed.rank(method="first") <= max_seeds]
    return set(best.run_id)


def cmd_prune(args, parser):

    runs = st.load_runs(args.store)
    if runs.empty:
        parser.error(f"--store: no runs in {args.store!r}")
    said = ""
    if args.superseded:
        gone = superseded.superseded(args.store)
        said = f"deleted {superseded.drop_runs(args.store, gone)} runs a higher cap replaced; "
        runs = runs[~runs.run_id.isin(gone)]
    keep = weights_to_keep(runs, args.max_seeds)
    removed = weights.drop_weights(args.store, [r for r in runs.run_id if r not in keep])
    said += f"kept the weights of {len(keep)} best-lr runs, removed {removed} others' (their metrics stay)"
    if args.max_model_seeds is not None:
        models = weights_to_keep(runs, min(args.max_model_seeds, args.max_seeds or args.max_model_seeds))
        if args.model_tasks:
            models &= set(runs.run_id[runs.task.isin(args.model_tasks)])
        dropped = weights.drop_models(args.store, [r for r in runs.run_id if r not in models])
        said += f"; kept the models of at most {args.max_model_seeds} seed(s) per cell, removed {dropped} others'"
    print(said)


def add_index(sub):
    p = sub.add_parser("index", help="rebuild a store's runs index from its run files (after copying a store)")
    add_store(p)
    p.add_argument(
        "--slim",
        action="store_true",
        help="first rewrite every table file in today's layout: a run file compact (float32 values), its curve thinned "
        "past its first 16 evaluations to 8 per doubling of the step; others without pandas' schema entry "
        "(metadata unchanged)",
    )
    p.set_defaults(func=cmd_index)


def add_pack(sub):
    p = sub.add_parser(
        "pack", help="move a store's loose run files into one pack (data/ keeps its runs so: core.results.packs)"
    )
    add_store(p)
    p.set_defaults(func=cmd_pack)


def cmd_pack(args, parser):
    from ..results import index, packs

    if not packs.holds_runs(args.store):
        parser.error(f"--store: no runs in {args.store!r}")
    n, path = packs.pack(args.store)
    where = f"into {Path(path).relative_to(args.store)}" if path else "(no loose run files)"
    print(f"packed {n} run files {where}; indexed {index.compact(args.store, rebuild=True)} runs")


def cmd_index(args, parser):
    from ..results import index
    from ..results.packs import holds_runs
    from ..results.runfile import slim

    if not holds_runs(args.store):
        parser.error(f"--store: no runs in {args.store!r}")
    if args.slim:
        kinds = ("runs", "analysis", "bench", "pretrained")
        files = [p for kind in kinds for p in Path(args.store, kind).glob("*.parquet")]
        print(f"slimmed {sum(slim(p, run=p.parent.name == 'runs') for p in files)} of {len(files)} table files")
    print(f"indexed {index.compact(args.store, rebuild=True)} runs in {args.store}/index/")


def add_report(sub):
    p = sub.add_parser("report", help="write docs/results.md and docs/reproduce.md from a store")
    p.add_argument("--store", type=read_store, default="data", help="store (default data/, the bundled results)")
    p.add_argument("--out", type=store_dir, default=None, help="folder to write into (default docs/)")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 if the documents are stale")
    p.set_defaults(func=cmd_report)


def cmd_report(args, parser):
    import tempfile

    from .. import report

    if st.load_runs(args.store).empty:
        parser.error(f"--store: no runs in {args.store!r}")
    out = Path(args.out) if args.out else report.DOCS
    if not args.check:
        for path in report.write(Path(args.store), out):
            print(f"wrote {path}")
        return
    with tempfile.TemporaryDirectory() as fresh:
        stale = [
            p.name
            for p in report.write(Path(args.store), Path(fresh))
            if not (out / p.name).is_file() or (out / p.name).read_text() != p.read_text()
        ]
    if stale:
        print(f"stale: {', '.join(stale)} (rerun python -m core report --store {args.store})", file=sys.stderr)
        raise SystemExit(1)
    print("up to date")
