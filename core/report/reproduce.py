"""docs/reproduce.md: the commands behind a store, in order, each with the runs it stored and its compute."""

from pathlib import Path

import pandas as pd

from ..analysis import endpoints, markdown
from ..attention.registry import ATTENTION
from ..experiments import recipe
from ..results import packs
from ..results import size as sz
from ..results import store as st
from .common import HEADER


def _records(store: Path) -> pd.DataFrame:
    """Every sweep record of the store, one row each, with the documented command it ran."""
    rows = []
    for path in sorted((store / "bench").glob("sweep-*.parquet")):
        record = st.read_meta(path)["provenance"]
        rows.append(pd.read_parquet(path).iloc[0].to_dict() | {"command": recipe.documented(record["command"])})
    return pd.DataFrame(rows)


def _compute(records: pd.DataFrame) -> pd.DataFrame:
    """Per documented command, what its sweep records measured (summed over resumed parts)."""
    if records.empty:
        return records
    return records.groupby("command", sort=False).agg(
        runs=("runs", "sum"), gflop=("gflop", "sum"), seconds=("seconds", "sum"), parts=("runs", "size")
    )


def _raise_steps(point: pd.DataFrame, cap: int, steps: int, members: int) -> tuple[int, int]:
    """The member-steps a point's line at `steps` (its cap, or twice it) takes at most, for `members` members in
    all, counted from its runs: extended from their end states (only the members censored at the cap go on), and
    trained from step 0 (each member that stopped before the cap stops where it did, the others run to `steps`); a
    member the point lacks (a new lr or seed) trains from step 0 to `steps` in both."""
    at_cap = int((point.stop == "cap").sum())
    fresh = max(0, members - len(point)) * steps
    return at_cap * (steps - cap) + fresh, at_cap * steps + int(point.stop_step[point.stop != "cap"].sum()) + fresh


def _still_to_run(runs: pd.DataFrame, per_run: float | None = None) -> list[str]:
    """The lines that would close what is open (endpoints.open_cells: the point's cap raised) and widen each grid
    whose end holds a cell's best lr (endpoints.edge_cells: one lr further that way), one line per point, then the
    points not yet trained to the criterion."""
    every = endpoints.cells(runs)
    n_open, n_edge = int(every.open.sum()), int(every.at_an_end.sum())
    cells = every[every.open | every.at_an_end].sort_values("open", ascending=False, kind="stable")  # raises first
    rows = []
    keys = ["commands", "cap", "trained", "point_seeds", "point_lrs", "point_ids"]
    for (point, cap, trained, seeds, lrs, ids), g in cells.groupby(keys, sort=False):
        g = g.sort_values("attention", key=lambda a: a.map(list(ATTENTION).index))
        wider = recipe.beyond_edges(lrs, set(g.lr[g.at_an_end]))
        steps = 2 * int(cap) if g.open.any() else int(cap)
        line = recipe.rerun(point, steps, trained, seeds, wider if wider != lrs else ())
        members = len(trained) * seeds * len(wider)
        extended, from_zero = _raise_steps(runs[runs.run_id.isin(ids)], int(cap), steps, members)
        rows.append(
            {
                "command": f"`{line}`",
                "open cells (improving of censored at the cap)": ", ".join(
                    f"{r.attention} ({r.improving} of {r.censored})" for r in g[g.open].itertuples()
                ),
                "best lr at an end of the grid": ", ".join(
                    f"{r.attention} ({r.lr:g})" for r in g[g.at_an_end].itertuples()
                ),
                "member-steps: extended · from step 0": f"{extended:,} · {from_zero:,}",
                "runs added": f"{max(0, members - len(ids)):,}",  # a raise replaces its runs one for one
            }
        )
    return [
        "## Still to run",
        "",
        f"{n_open} cells are open: more than a tenth of their censored seeds were still improving at the cap "
        "(`core.analysis.endpoints.open_cells`), so the protocol raises their cap. "
        f"{n_edge} cells have their best lr at an end of their point's lrs (`core.analysis.endpoints.edge_cells`): "
        "their optimum may lie outside the grid, so the protocol widens the grid one lr that way (the 1-3-10 ladder) "
        "for the whole point. Each line is the one that made the point, for every parameterization there, at twice "
        "its cap where a cell is open (a point is read at one cap) and at its cap where the grid only widens (only "
        "the new lr trains; the stored runs are skipped and count towards the rule that stops a hopeless lr); in the "
        "scratch store that trained the point it extends each member from its saved end state (a member that "
        "stopped before the old cap is stored again as it was), elsewhere it trains them again from step 0 (the "
        "same runs: the schedule does not depend on the cap); a new lr trains from step 0. The line with `--dry-run` "
        "and your scratch store says which, and the member-steps at most, before anything trains; the table counts "
        "them from `data/`'s runs (core/report/reproduce.py: an extension steps only the members censored at the "
        "cap, a training from step 0 repeats each earlier stop, a new lr or seed runs to the new cap), and the runs "
        "each adds to `data/` once landed (its new lrs' and seeds': a raised run replaces the shorter one"
        + (f"; each about {per_run:.1f} kB of a pack" if per_run else "")
        + "). A finished "
        "line lands in `data/` in three steps: the line into `CRITERION_SWEEPS` (core/experiments/recipe.py) with "
        "a comment saying why it ran, "
        '`python -m core land "<line>" --from SCRATCH`, then the commands of "Then, once the sweeps are in" '
        "below, from `prune` on.",
        "",
        markdown.table(pd.DataFrame(rows)) if rows else "None.",
        "",
        "Not yet trained to the criterion (the key-value pairs axis stops at 16 until it is):",
        "",
        "```",
        *recipe.NOT_YET,
        "```",
        "",
    ]


def _pack_bytes(store: Path) -> int:
    """Bytes of the store's packs (core.results.packs)."""
    return sum(p.stat().st_size for p in packs.pack_paths(store))


def _per_run(store: Path) -> float:
    """kB of pack a packed run takes today, 0 where nothing is packed."""
    ids = packs.packed(store)
    return _pack_bytes(store) / 1e3 / len(ids) if ids else 0.0


def _size_sentence(store: Path) -> str:
    """What the store takes against its limit (core.results.size), as the rest of a sentence."""
    files, disk = sz.size(store)
    within = "within" if max(files, disk) < sz.LIMIT else "over the limit of"
    packed = _pack_bytes(store)
    return (
        f", {files / 1e6:.2f} MB of files and {disk / 1e6:.2f} MB on disk in {sz.BLOCK // 1024} KiB blocks, {within} "
        f"{sz.LIMIT / 1e6:.0f} MB on both (tests/test_bundled.py). Its runs are packed ({packed / 1e6:.2f} MB in "
        f"`data/packs/`, core.results.packs): a run's own file, however slim, would fill a whole block. That leaves "
        f"{max(0, sz.LIMIT - disk) / 1e6:.2f} MB on disk, less the runs index (a cache a clone rebuilds, left out of "
        "these numbers; the limit counts it), and `land` refuses a line past it."
    )


def reproduce(store: Path, command: str) -> str:
    """docs/reproduce.md: the commands behind the store, in order, each with the runs it stored and its compute."""
    runs = st.load_runs(store)
    made = runs.command.map(recipe.documented).value_counts()
    on_gpu = runs.command[runs.device == "cuda"].map(recipe.documented).value_counts()
    records = _records(store)
    compute = _compute(records)
    # older records: written before runs recorded where a sweep took them up (no `carried`)
    old = int(records.carried.isna().sum()) if "carried" in records else len(records)
    rows = []
    for c in recipe.CRITERION_SWEEPS:
        m = compute.loc[c] if c in compute.index else None
        rows.append(
            {
                "command": f"`{c}`",
                "runs in the store": f"{made.get(c, 0)}" + (f" ({on_gpu[c]} on a GPU)" if c in on_gpu else ""),
                "GFLOP": "" if m is None else f"{m.gflop:,.0f}",
                "wall": ""
                if m is None
                else f"{m.seconds / 60:,.0f} min" + (f" ({int(m.parts)} parts)" if m.parts > 1 else ""),
            }
        )
    table = pd.DataFrame(rows)
    total = compute.gflop.sum() if not compute.empty else 0.0
    hours = compute.seconds.sum() / 3600 if not compute.empty else 0.0
    lines = [
        "# Reproducing `data/`",
        "",
        HEADER.format(command=command),
        "",
        f"`data/` holds {len(runs):,} runs{_size_sentence(store)} Run these from the repository root, in order; "
        "each resumes (a rerun "
        "trains only what the store lacks). Every run file records its command, package versions, date and git "
        "commit (the sidebar shows them). Compute is what each sweep measured itself (`data/bench/sweep-*.parquet`) "
        "on the 2-core CPU machine it ran on; a sweep resumed across sessions has one record per part it finished, and "
        "so do two sweeps of one line run at once on a core each, whose wall times add up (a "
        "part killed at a session's end leaves none, so its wall time is a floor; a sweep paused while tests ran on "
        "the same cores counts the pause; a line with runs and no compute was cut short before it wrote one). Runs "
        'marked "on a GPU" trained on CUDA, as each run records (the runs stored before a run recorded its device: '
        "their command's `--device cuda`); `--device`, `--workers` and `--ray` change where and how many jobs train "
        "at once, not which runs; a GPU's float sums differ from a CPU's in the last digits. The sweeps ran in a "
        'scratch store, and each finished line\'s files were copied here: `python -m core land "<line>" --from '
        "SCRATCH` copies every member's run (as one pack) and the line's sweep records (`--weights` adds the runs' "
        "weights and "
        "models, for a point whose weights the pages read; a scan point's pages read none). A run id is the hash of "
        "its configs, so the files are the ones `--store data` writes; a file `data/` holds already stays as it is. "
        "A point is read at the highest cap its lines reached, so `prune --superseded` (below) deletes each run whose "
        "member the "
        "store also holds at a higher cap (the shorter run's steps are the longer one's first): a line a raised cap "
        "replaced keeps its compute here, and its runs left the store (rerun, it trains nothing: a sweep skips a "
        "member the store holds at a higher cap).",
        "",
        "## Sweeps",
        "",
        markdown.table(table),
        "",
        f"In all {total:,.0f} GFLOP over {hours:,.1f} hours of sweeps. A record with a `carried` column counts "
        "the steps its sweep took: from where it took a run up (a checkpoint, a shorter cap's end state) to where "
        "the run stopped; runs carried over from a shorter cap count none. "
        f"{old} of the {len(records)} records are older: they counted every step of the runs they stored, so an "
        "extension to a higher cap (the `--steps 12800` sweeps beside a 6,400 one) or a resumed part overcounts "
        "what it trained (a utilisation above the matmul peak in its record shows it); wall time is what each took.",
        "",
        *_still_to_run(runs, _per_run(store)),
        "## Then, once the sweeps are in",
        "",
        "```",
        *recipe.AFTER_SWEEPS,
        "```",
        "",
    ]
    return "\n".join(lines)
