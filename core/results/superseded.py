"""Runs a longer cap replaced: a member trained to the criterion at cap N and again at a higher cap (the same
configs but `steps`, so the same lineage) holds its first N steps in the longer run, and every point is read at
the longest training the store holds (core.analysis.findings.at_longest). `python -m core prune --superseded`
deletes the shorter ones, so a store made by the documented lines holds what `data/` holds, and a sweep skips a
member whose lineage the store holds at a higher cap (`longest_caps`), so rerunning a replaced line trains nothing.

Only criterion runs (until="solved", whose constant schedule does not depend on the cap) have a lineage here: a
fixed-budget run's cosine decay ends at its cap, so a longer one is another experiment, not its continuation."""

from ..training.config import lineage_id
from . import packs
from . import runfile as rf
from .weights import drop_weights


def _criterion_runs(store):
    """(run id, lineage, cap) of each readable criterion run, loose or packed. A file that is not a readable run
    is no run of the store (load_runs skips it, named), so it replaces nothing and is left as it is."""
    for _, meta, _ in packs.all_metas(store):
        if isinstance(meta, Exception):
            continue
        train = meta["train"]
        if train.get("until") == "solved":
            yield meta["run_id"], lineage_id(meta["model"], meta["task"], train, meta["seed"]), train["steps"]


def _longest(runs) -> dict[str, int]:
    longest = {}
    for _, lineage, cap in runs:
        longest[lineage] = max(longest.get(lineage, 0), cap)
    return longest


def longest_caps(store) -> dict[str, int]:
    """{lineage: the highest cap the store holds a criterion run of it at}."""
    return _longest(_criterion_runs(store))


def superseded(store) -> list[str]:
    """The run ids (sorted) whose lineage the store also holds at a higher cap."""
    runs = list(_criterion_runs(store))
    longest = _longest(runs)
    return sorted(rid for rid, lineage, cap in runs if cap < longest[lineage])


def drop_runs(store, run_ids) -> int:
    """Delete these runs: their weights and models first, then their run files and pack rows (a run without
    either is not in the store; the index drops its row when it next reads). Returns how many runs were deleted."""
    drop_weights(store, run_ids)
    packed = set(packs.packed(store)) & set(run_ids)
    removed = 0
    for rid in run_ids:
        path = rf.run_path(store, rid)
        if path.exists():
            path.unlink()
            removed += rid not in packed
    return removed + packs.drop(store, packed)
