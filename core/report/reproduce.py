"""docs/reproduce.md: the commands behind a store, in order, each with the runs it stored and its compute."""

from pathlib import Path

import pandas as pd

from ..analysis import markdown
from ..experiments import recipe
from ..experiments.lines import documented
from ..results import packs
from ..results import size as sz
from ..results import store as st
from .common import HEADER
from .pending import section as still_to_run


def _records(store: Path) -> pd.DataFrame:
    """Every sweep record of the store, one row each, with the documented command it ran."""
    rows = []
    for path in sorted((store / "bench").glob("sweep-*.parquet")):
        record = st.read_meta(path)["provenance"]
        rows.append(pd.read_parquet(path).iloc[0].to_dict() | {"command": documented(record["command"])})
    return pd.DataFrame(rows)


def _compute(records: pd.DataFrame) -> pd.DataFrame:
    """Per documented command, what its sweep records measured (summed over resumed parts)."""
    if records.empty:
        return records
    return records.groupby("command", sort=False).agg(
        runs=("runs", "sum"), gflop=("gflop", "sum"), seconds=("seconds", "sum"), parts=("runs", "size")
    )


def _pack_bytes(store: Path) -> int:
    """Bytes of the store's packs (core.results.packs)."""
    return sum(p.stat().st_size for p in packs.pack_paths(store))


def _per_run(store: Path) -> float:
    """kB of pack a packed run takes today, 0 where nothing is packed."""
    ids = packs.packed(store)
    return _pack_bytes(store) / 1e3 / len(ids) if ids else 0.0


def _parked(store: Path) -> str:
    """' ' plus what the lines parked between sessions take (core.experiments.parking), or '' where none is."""
    folder = Path(store, st.PARKED)
    if not folder.is_dir():
        return ""
    disk = sz.size(folder)[1]
    lines = sum(1 for p in folder.iterdir() if p.is_dir())
    return (
        f" Of that, {disk / 1e6:.2f} MB are the stored runs of {lines} unfinished line(s) parked in `data/parked/` "
        "between sessions (`python -m core park`; no page reads them, and `land` deletes them with the line)."
    )


def _size_sentence(store: Path) -> str:
    """What the store takes against its limit (core.results.size), as the rest of a sentence."""
    files, disk = sz.size(store)
    within = "within" if max(files, disk) < sz.LIMIT else "over the limit of"
    packed = _pack_bytes(store)
    return (
        f", {files / 1e6:.2f} MB of files and {disk / 1e6:.2f} MB on disk in {sz.BLOCK // 1024} KiB blocks, {within} "
        f"{sz.LIMIT / 1e6:.0f} MB on both (tests/test_bundled.py). Its runs are packed ({packed / 1e6:.2f} MB in "
        f"`data/packs/`, core.results.packs): a run's own file, however slim, would fill a whole block."
        f"{_parked(store)} That leaves "
        f"{max(0, sz.LIMIT - disk) / 1e6:.2f} MB on disk, less the runs index (a cache a clone rebuilds, left out of "
        "these numbers; the limit counts it), and `land` refuses a line past it."
    )


def reproduce(store: Path, command: str) -> str:
    """docs/reproduce.md: the commands behind the store, in order, each with the runs it stored and its compute."""
    runs = st.load_runs(store)
    made = runs.command.map(documented).value_counts()
    on_gpu = runs.command[runs.device == "cuda"].map(documented).value_counts()
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
        "on the 2-core CPU machine it ran on; a sweep resumed across sessions has one record per part, and "
        "so do two sweeps of one line run at once on a core each, whose wall times add up (a part stopped by Ctrl-C "
        "or SIGTERM records its wall time and the FLOPs of the runs it stored (before 2026-11-29, with workers, "
        "none of them); one killed outright, or stopped before 2026-11-28, when SIGTERM became a cancel, leaves "
        "none, so the total is a floor; a sweep paused "
        "while tests ran on the same cores counts the pause; a line with runs and no compute was cut short before "
        "it wrote one). Runs "
        'marked "on a GPU" trained on CUDA, as each run records (the runs stored before a run recorded its device: '
        "their command's `--device cuda`); `--device`, `--workers` and `--ray` change where and how many jobs train "
        "at once, not which runs; a GPU's float sums differ from a CPU's in the last digits, and so do those of an "
        "ensemble of another size or of another machine: a run trained again follows its stored curve to rounding at "
        "first, but at a high lr rounding can grow over thousands of steps into another outcome (docs/answers.md has "
        "one, under 004), so a run trained again from step 0 is a fresh draw of its seed, as a rerun anywhere else "
        "would be. The sweeps ran in a "
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
        *still_to_run(runs, _per_run(store)),
        "## Then, once the sweeps are in",
        "",
        "```",
        *recipe.AFTER_SWEEPS,
        "```",
        "",
    ]
    return "\n".join(lines)
