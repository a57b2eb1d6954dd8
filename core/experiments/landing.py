"""Landing a recipe line: a line trained in a scratch store (docs/reproduce.md) has its runs and its sweeps'
records copied into data/, the runs as one pack (core.results.packs). A run id is the hash of its configs, so
the copied runs are the ones the line would have written with `--store data`; a run data/ already holds is the
same run (or record) and stays as it is, so landing never overwrites, and landing a line twice copies nothing
the second time."""

import shutil
from dataclasses import dataclass
from pathlib import Path

from ..results import packs
from ..results import runfile as rf
from ..results import size as sz
from ..results import store as st
from ..results.superseded import longest_caps
from .lines import line_key
from .outlook import outlook
from .run_job import Job


class LandingError(ValueError):
    """The line cannot land: one line saying why."""


@dataclass(frozen=True)
class Landed:
    runs: int  # runs copied (into one new pack)
    held: int  # runs the store held already, left as they were
    records: int  # sweep records copied (bench/sweep-*.parquet)
    weights: int  # weights and whole-model files copied (with weights=True)


def unfinished(scratch, jobs: list[Job]) -> str | None:
    """None when the scratch store holds every member of the jobs, else what is left (as `sweep --dry-run` says)."""
    table = outlook(scratch, jobs)
    left = int((table.members - table.stored).sum())
    if not left:
        return None
    return f"{left} of {int(table.members.sum())} members are not stored in {scratch} yet (the line's --dry-run there)"


def land(scratch, store, line: str, jobs: list[Job], weights: bool = False, limit: int | None = None) -> Landed:
    """Copy each member's run of the finished line from `scratch` into `store` as one new pack, and the records of
    the sweeps that ran the line (matched by their command, as core.experiments.lines compares commands). With
    `weights`, each copied run's weights and whole model go too (a point whose weights the pages read:
    `prune` then keeps only the ones they show). With `limit` (bytes on disk, core.results.size), a line whose
    pack and records would take the store past it is refused before anything is copied, and so is a line that
    would leave a parameterization of a point it raises behind at a lower cap (cells_left_behind)."""
    ids = [rid for job in jobs for rid in job.run_ids().values()]
    why = unfinished(scratch, jobs) or (weights and tensors_left_behind(scratch, store, jobs))
    if why:
        raise LandingError(why)
    new = [rid for rid in ids if not st.has_run(store, rid)]
    want = line_key(line)
    records = [p for p in sorted(Path(scratch, "bench").glob("sweep-*.parquet")) if record_command(p) == want]
    table = packs.build([rf.run_path(scratch, rid) for rid in new]) if new else None
    data = packs.encode(table) if new else b""
    if limit is not None:
        _check_room(store, len(data), records, limit)
    why = cells_left_behind(scratch, store, ids)
    if why:
        raise LandingError(why)
    n_weights = 0
    tensors = (rf.weights_path, rf.model_path) if weights else ()
    for rid in new:  # weights first: a run exists once its pack does, so a kill leaves no run without them
        n_weights += sum(copy_new(path(scratch, rid), path(store, rid)) for path in tensors)
    if new:
        packs.write(store, table, data)
    n_records = sum(copy_new(p, Path(store, "bench", p.name)) for p in records)
    return Landed(len(new), len(ids) - len(new), n_records, n_weights)


def cells_left_behind(scratch, store, ids: list[str]) -> str | None:
    """None unless the runs `ids` would raise a point's cap past every run `store` holds of some parameterization
    there: a point is read at its longest training (core.analysis.findings.at_longest), so that parameterization
    would drop out of every comparison at the point until it is trained to the new cap as well."""
    if not packs.holds_runs(store):
        return None
    new = st.load_runs(scratch)
    lost = left_behind(st.load_runs(store), new[new.run_id.isin(ids)])
    if not lost:
        return None
    return (
        f"its runs raise a point's cap past every run {store} holds there of {lost}; a point is read at its longest "
        "training (core.analysis.findings.at_longest): put every parameterization of the point in the line "
        "(--carry-from carries those that stopped before their cap); nothing copied"
    )


def planned_left_behind(store, jobs: list[Job]) -> str | None:
    """cells_left_behind before a sweep trains: the jobs' planned runs in place of stored ones. None, or a warning
    naming what the sweep would leave behind in `store` (a scratch store trained piecemeal may mean to)."""
    if not jobs or not packs.holds_runs(store):
        return None
    lost = left_behind(st.load_runs(store), planned_runs(jobs))
    if not lost:
        return None
    return (
        f"this sweep raises a point's cap past every run {store} holds there of {lost}: until they are trained to "
        "the new cap too, the point's comparisons leave them out (core.analysis.findings.at_longest) and `land` "
        "refuses the line; put every parameterization of the point in it"
    )


def planned_runs(jobs: list[Job]):
    """One row per planned member: its run id and the columns a point and its cap are read from."""
    import pandas as pd

    from ..analysis.findings import SIZE

    rows = []
    for job in jobs:
        configs = (job.model, job.task, job.train)  # each SIZE column is a field of one of them
        point = {c: next(getattr(cfg, c) for cfg in configs if hasattr(cfg, c)) for c in SIZE}
        point |= {"task": job.task.name, "attention": job.model.attention, "steps": job.train.steps}
        rows += [{"run_id": rid, **point} for rid in job.run_ids().values()]
    return pd.DataFrame(rows)


def left_behind(held, new) -> str:
    """'task: attention, ...; ...' for each parameterization `held` reads at a point that `new`'s runs (those held
    lacks) would raise past it; '' for none."""
    import pandas as pd

    from ..analysis.findings import SIZE, at_longest

    new = new[~new.run_id.isin(held.run_id)]
    keys = ["task", *[c for c in SIZE if c in held.columns], "attention"]

    def cells(runs: pd.DataFrame) -> dict[str, tuple]:  # str keys: a missing size is NaN, which never equals itself
        rows = at_longest(runs)[keys].drop_duplicates()
        return {str(tuple(r)): (r.task, r.attention) for r in rows.itertuples(index=False)}

    both = pd.concat([held, new[[c for c in new.columns if c in held.columns]]], ignore_index=True)
    before, after = cells(held), cells(both)
    lost = sorted({before[k] for k in before.keys() - after.keys()})
    tasks = sorted({task for task, _ in lost})
    return "; ".join(f"{task}: {', '.join(a for t, a in lost if t == task)}" for task in tasks)


def tensors_left_behind(scratch, store, jobs: list[Job]) -> str | None:
    """None unless a run of the line lacks, in `scratch`, a weights or model file that `store` keeps of the same
    member's shorter-capped run: prune --superseded would delete that run, and with it the only copy the pages
    read. A scratch store can hold such runs where it took a member up from a record written before carried runs
    kept their tensors; carried again from `store` into a fresh scratch store, they have them."""
    caps = longest_caps(store)
    lacking = []
    for job in jobs:
        for member, rid in job.run_ids().items():
            cap = caps.get(job.lineage(member), 0)
            if not 0 < cap < job.train.steps:
                continue
            old = job.run_id_at(member, cap)
            if any(
                path(store, old).is_file() and not path(scratch, rid).is_file()
                for path in (rf.weights_path, rf.model_path)
            ):
                lacking.append(rid)
    if not lacking:
        return None
    return (
        f"{len(lacking)} runs (first {lacking[0]}) lack in {scratch} the weights or model that {store} keeps of their "
        f"shorter-capped run: store the line again in a fresh scratch store, carrying (--carry-from) each member "
        f"{store} stopped before its cap from there and the rest from {scratch}, and land from it; nothing copied"
    )


def _check_room(store, pack: int, records: list[Path], limit: int) -> None:
    """Raise LandingError where the store's disk (core.results.size), the new pack's `pack` bytes and the records
    in whole blocks pass `limit`. Weights are not counted: prune keeps those the pages show, about as many as the
    store held."""
    disk = sz.size(store, caches=True)[1] if Path(store).is_dir() else 0  # as tests/test_bundled.py counts it
    after = disk + sz.on_disk(pack) + sum(sz.on_disk(p.stat().st_size) for p in records if p.exists())
    if after > limit:
        raise LandingError(
            f"its pack of {pack / 1e3:.0f} kB and {len(records)} records would take {store} to {after / 1e6:.2f} MB "
            f"on disk, over its limit of {limit / 1e6:g} MB (core.results.size; docs/reproduce.md says the room "
            "left): nothing copied"
        )


def record_command(record: Path) -> str | None:
    """A sweep record's command as recipe lines are matched (its flags in any order); None for a file that is no
    readable record."""
    try:
        return line_key(rf.read_meta(record)["provenance"]["command"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def copy_new(source: Path, target: Path) -> bool:
    """Copy source to target unless target exists or source does not; whether it copied. Written to a temporary
    name and renamed, as every store file is, so a kill leaves no half-copied run."""
    if target.exists() or not source.exists():
        return False
    rf.atomic_write(target, lambda tmp: shutil.copy2(source, tmp))
    return True
