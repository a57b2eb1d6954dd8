"""Parking a line between sessions: a recipe line longer than a session (docs/reproduce.md's Still to run) keeps
the runs it has finished in the repository, where a fresh machine finds them, since its scratch store is not sure
to outlast the session.

A job's runs are stored together when its ensemble ends (core.experiments.run_job), and a part of a job (`sweep
--part K/N`: some of its lrs, every seed) is an ensemble of its own, so a job longer than a session can still be
parked part by part. `park` copies the line's runs the scratch store holds and the store does not, as one pack, with
the records of the sweeps that ran the line (its parts' included), into STORE/parked/<key>/ (key: of the line as
lines are matched), which no reader of the store opens. `unpark` writes them back into a scratch store as loose run
files, so the line's rerun there counts them as stored and trains only what is left, from step 0 or from a
checkpoint the scratch store still holds; `land` then copies the whole line into the store and deletes its parked
folder. Parked runs are the line's own runs, their curves thinned as data/'s are (`index --slim`); what parking
loses is the progress of each training not yet stored and the stored runs' end states (a later raise of them trains
from step 0, as from any store but the one that ran them).
"""

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..results import packs
from ..results import runfile as rf
from ..results import store as st
from ..training.config import stable_hash
from .landing import copy_new, record_command
from .lines import line_key
from .run_job import Job

PARKED = st.PARKED


@dataclass(frozen=True)
class Parked:
    jobs: int  # finished jobs parked (all of them now, with those parked before)
    of: int  # jobs the line plans
    runs: int  # runs copied this time
    records: int  # sweep records copied this time
    members: int  # the line's members parked (all of them now)
    planned: int  # members the line plans


def folder(store, line: str) -> Path:
    """Where `store` parks `line`: one folder per line as lines are matched (its --store and engine flags aside)."""
    return Path(store) / PARKED / stable_hash({"line": line_key(line)})


def finished(scratch, jobs: list[Job]) -> list[Job]:
    """The jobs whose every member `scratch` stores."""
    return [job for job in jobs if all(st.has_run(scratch, rid) for rid in job.run_ids().values())]


def parked_share(store, line: str, jobs: list[Job]) -> dict[str, float]:
    """{parameterization: the share of its job's members `store` has parked} for the line's jobs with any parked."""
    where = folder(store, line)
    held = set(packs.packed(where)) if where.is_dir() else set()
    shares = {job.model.attention: sum(r in held for r in job.run_ids().values()) / len(job.members) for job in jobs}
    return {name: share for name, share in shares.items() if share}


def park(scratch, store, line: str, jobs: list[Job]) -> Parked:
    """Copy the line's runs that `scratch` holds and `store` does not (whole jobs, or the parts of jobs that `sweep
    --part` stored), and the records of the sweeps that ran it, into `store`'s parked folder of the line; what that
    holds already stays as it is."""
    dest = folder(store, line)
    ids = sorted({rid for job in jobs for rid in job.run_ids().values() if st.has_run(scratch, rid)})
    new = [rid for rid in ids if not st.has_run(dest, rid) and not st.has_run(store, rid)]
    if new:
        packs.write(dest, _table(scratch, new))
    records = [p for p in sorted(Path(scratch, "bench").glob("sweep-*.parquet")) if record_command(p) == line_key(line)]
    n_records = sum(copy_new(p, dest / "bench" / p.name) for p in records)
    if (new or n_records) and not (dest / "line.txt").exists():
        # the first park's text stays: a later one, of the same line from another machine, differs only in its paths
        rf.atomic_write(dest / "line.txt", lambda tmp: Path(tmp).write_text(line + "\n"))
    ids = [rid for job in jobs for rid in job.run_ids().values()]
    held = set(packs.packed(dest))
    return Parked(len(finished(dest, jobs)), len(jobs), len(new), n_records, sum(r in held for r in ids), len(ids))


def unpark(store, scratch, line: str) -> tuple[int, int]:
    """Write the line's parked runs into `scratch` as loose run files, and its parked records into its bench
    folder, where it lacks them: (runs, records) written."""
    src = folder(store, line)
    ids = [rid for rid in packs.packed(src) if not st.has_run(scratch, rid)]
    runs = packs.unpack(src, scratch, ids)
    parked = sorted(Path(src, "bench").glob("sweep-*.parquet"))
    records = sum(copy_new(p, Path(scratch, "bench", p.name)) for p in parked)
    return runs, records


def clear(store, line: str) -> int | None:
    """Delete the line's parked folder (its runs are in the store now): how many parked records it kept, None
    where there was no folder. Its records go into the store's bench folder first, where it lacks them: a line
    landed from a scratch store the parked runs were not written back into (a best-lr job trained again for its
    weights) has not brought them."""
    path = folder(store, line)
    if not path.is_dir():
        return None
    kept = sum(copy_new(p, Path(store, "bench", p.name)) for p in sorted(Path(path, "bench").glob("sweep-*.parquet")))
    shutil.rmtree(path)
    if not any(path.parent.iterdir()):
        path.parent.rmdir()
    return kept


def _table(scratch, ids: list[str]):
    """A pack of these runs of `scratch` (loose or packed there), their curves thinned as `index --slim` thins
    data/'s (runfile.slim: the same steps whatever is thinned first), so a parked job takes a few kB a run."""
    loose = [rid for rid in ids if rf.run_path(scratch, rid).exists()]
    with tempfile.TemporaryDirectory() as tmp:
        packs.unpack(scratch, tmp, [rid for rid in ids if rid not in loose])
        Path(tmp, "runs").mkdir(exist_ok=True)
        for rid in loose:
            shutil.copy2(rf.run_path(scratch, rid), rf.run_path(tmp, rid))
        paths = [rf.run_path(tmp, rid) for rid in ids]
        for path in paths:
            rf.slim(path, run=True)
        return packs.build(paths)
