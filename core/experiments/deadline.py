"""`sweep --hours H`: a job starts only if it can finish within the hours left, so a session-bound machine spends
its last hour on jobs that end (a job killed midway loses its training: only finished jobs' runs can be parked).

Each job decides as it starts, in whichever process trains it: its member-steps to the cap at the pace a few of its
steps take here (core.experiments.pace). Under until="solved" a member may stop sooner, so the estimate errs long: a
job it refuses might have fitted, one it starts will end in time, up to the pace's own error.
"""

import time

from . import pace


def member_steps(job, by_start: dict) -> int:
    """The steps a core.experiments.run_job.Job's members, grouped by the step each starts from, would train at
    most: each from its start (0, or an old cap) to the cap."""
    return sum(len(members) * (job.train.steps - start) for start, members in by_start.items())


def past(job, by_start: dict, deadline: float | None, device=None) -> bool:
    """Whether training these members could run past `deadline` (seconds since the epoch); never without one."""
    steps = member_steps(job, by_start)
    if deadline is None or not steps:
        return False
    if time.time() >= deadline:  # no time left: nothing to time
        return True
    return time.time() + steps * pace.member_step_seconds(job, device) > deadline
