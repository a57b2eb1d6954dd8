"""Runs a longer cap replaced: a member trained to the criterion at cap N and again at a higher cap (the same
configs but `steps`, so the same lineage) holds its first N steps in the longer run, and every point is read at
the longest training the store holds (core.analysis.findings.at_longest). `python -m core prune --superseded`
deletes the shorter ones, so a store made by the documented lines holds what `data/` holds."""

from pathlib import Path

from ..training.config import lineage_id
from . import runfile as rf
from .weights import drop_weights


def superseded(store) -> list[str]:
    """The run ids (sorted) whose lineage the store also holds at a higher cap. A file that is not a readable run
    is no run of the store (load_runs skips it, named), so it replaces nothing and is left as it is."""
    longest, caps = {}, {}
    for path in sorted((Path(store) / "runs").glob("*.parquet")):
        try:
            meta = rf.read_run_meta(path)
        except (OSError, ValueError):
            continue
        lineage = lineage_id(meta["model"], meta["task"], meta["train"], meta["seed"])
        caps[meta["run_id"]] = (lineage, meta["train"]["steps"])
        longest[lineage] = max(longest.get(lineage, 0), meta["train"]["steps"])
    return sorted(rid for rid, (lineage, steps) in caps.items() if steps < longest[lineage])


def drop_runs(store, run_ids) -> int:
    """Delete these runs: their weights and models first, then their run files (a run without its file is not
    in the store; the index drops its row when it next reads). Returns how many run files were deleted."""
    drop_weights(store, run_ids)
    removed = 0
    for rid in run_ids:
        path = rf.run_path(store, rid)
        if path.exists():
            path.unlink()
            removed += 1
    return removed
