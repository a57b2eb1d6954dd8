"""How long a sweep line takes on this machine: each of its jobs' member-steps at the pace a few of its steps run
here, its jobs taken longest first by the sweep's workers (`python -m core todo --hours`).

Timed, not read from the store: a run's recorded time is its ensemble's, on whatever machine trained it, resumed
or not, and these machines differ by about twice (docs/cli.md, `todo`).
warm_up pays a process's one-time set-up before anything is timed: a job's recorded seconds and a pace alike.
"""

import heapq
import os
from dataclasses import replace

PACE_STEPS = 20  # steps timed per job: a second or two of a CPU core at the scan sizes
PACE_MEMBERS = 4  # a member's share of a step is flat in the ensemble's size past 2 (docs/benchmarks.md)


def member_step_seconds(job, device="cpu", steps: int = PACE_STEPS, members: int = PACE_MEMBERS) -> float:
    """Seconds one member-step of `job` (a core.experiments.run_job.Job) takes here on one thread, as a 2-core
    sweep's worker runs it: `members` seeds at its first lr trained `steps` steps, plus a share of the evaluation
    the job runs every eval_every steps (timed at step 0 and at the last step; the set-up is counted with them, so
    the pace errs slow)."""
    import torch

    from ..training.train import train_ensemble

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        warm_up(job, device)  # one-time set-up a real sweep pays once, not per job
        train = replace(job.train_at(job.members[0][0]), steps=steps, eval_every=job.train.eval_every, until="steps")
        (first, *_) = train_ensemble(job.model, job.task, train, list(range(members)), device)
    finally:
        torch.set_num_threads(threads)
    evaluation = (first.train_seconds - first.step_seconds) / 2  # the evaluations at step 0 and at `steps`
    return (first.step_seconds / steps + evaluation / job.train.eval_every) / members


_warm = False  # per process: has a training already paid the one-time set-up?


def warm_up(job, device=None) -> None:
    """The first training in a process pays ~2 s of one-time set-up: pay it before anything is timed."""
    global _warm
    from ..training.train import train_ensemble

    if not _warm:
        train_ensemble(job.model, job.task, replace(job.train, steps=3, eval_every=3, until="steps"), [0], device)
        _warm = True


def wall_hours(hours, workers: int) -> float:
    """The wall hours of jobs taken longest first by `workers` one-thread workers, each job to the worker free
    first, as a sweep's pool takes them (core.experiments.sweep.longest_first)."""
    loads = [0.0] * workers
    for h in sorted(hours, reverse=True):
        heapq.heapreplace(loads, loads[0] + h)
    return max(loads)


def busy(cores: int) -> str | None:
    """A line for stderr where other work holds the CPUs a line's `cores` workers would take: each pace is then
    timed beside it (a one-thread job on a 2-core machine running a sweep times over twice as slow), else None."""
    load, cpus = os.getloadavg()[0], os.cpu_count() or 1
    if load <= cpus - cores + 0.5:
        return None
    return (
        f"# load {load:.1f} on {cpus} CPUs leaves fewer than the {cores} free that these hours assume: each pace is "
        "timed beside other work, so the hours err slow"
    )
