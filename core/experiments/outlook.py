"""`python -m core sweep --dry-run`: what a sweep would train and from which step, read from the store and
written nowhere (no claim, no store folder, an unreadable run file left where it is)."""

import pandas as pd

from ..results import claims
from ..results import store as st
from .run_job import Job, Member, checkpointer, held_longer, lineage_caps, starts, training_members

COLUMNS = ["stored", "held longer", "claimed", "carried", "taken up", "from a checkpoint", "from step 0"]


def outlook(store, jobs: list[Job]) -> pd.DataFrame:
    """One row per job: its members stored already, held at a higher cap (a criterion run whose lineage the store
    holds longer: not trained again), claimed by a sweep training them now, carried over (stopped
    before a shorter cap: stored again, not trained), taken up from a shorter cap's saved end state, gone on
    from a checkpoint of a killed training, and trained from step 0; and the member-steps that takes at most
    (each member to the cap from where it starts; criterion runs that stop early take fewer)."""
    caps = lineage_caps(store, jobs)
    return pd.DataFrame(
        [_job(store, job, caps) for job in jobs], columns=["task", "attention", "members", *COLUMNS, "member-steps"]
    )


def _job(store, job: Job, caps: dict[str, int]) -> dict:
    ids = job.run_ids()
    stored = [m for m, rid in ids.items() if st.has_run(store, rid) and st.run_problem(store, rid) is None]
    longer = held_longer(job, [m for m in ids if m not in stored], caps)
    rest = [m for m in ids if m not in stored and m not in longer]
    claimed = [m for m in rest if claims.held(claims.claim_path(store, ids[m]))]
    missing = [m for m in rest if m not in claimed]
    _, carried, by_start = starts(store, job, missing)
    row = dict.fromkeys([*COLUMNS, "member-steps"], 0) | {"stored": len(stored), "held longer": len(longer)}
    row |= {
        "claimed": len(claimed),
        "task": job.task.name,
        "attention": job.model.attention,
        "members": len(ids),
        "carried": len(carried),
    }
    for start, members in by_start.items():
        how, alive, begin = _start(store, job, members, start)
        row[how] += len(members)
        row["member-steps"] += alive * (job.train.steps - begin)
    return row


def _start(store, job: Job, members: list[Member], start: int) -> tuple[str, int, int]:
    """How a training of `members` from `start` begins: (its column, the members it steps, the step it begins at)."""
    saver = checkpointer(store, job, start)
    trains = training_members(saver, members, start > 0)
    saved = saver.load()
    if saved and [tuple(m) for m in saved.get("members", [])] == trains:  # train_ensemble goes on from it
        if saved.get("done"):  # finished before a kill, not yet stored: stored without a step
            return "from a checkpoint", 0, 0
        return "from a checkpoint", len(saved["alive"]), saved["step"]
    return ("taken up" if start else "from step 0"), len(trains), start
