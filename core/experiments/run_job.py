"""One job: a configuration's members (seeds x learning rates) trained as one ensemble, each stored as a run.

The sweep (core.experiments.sweep) plans jobs and hands them out; its worker processes (core.experiments.workers) call
`train_job` here. Both import this module, never each other's, so data flows one way.
"""

from dataclasses import dataclass, replace

import pandas as pd

from ..results import index
from ..results import store as st
from ..training.config import ModelConfig, TaskConfig, TrainConfig, run_id
from ..training.model import count_model_params

Member = tuple[float, int]  # (learning rate, seed)


@dataclass(frozen=True)
class Job:
    model: ModelConfig
    task: TaskConfig
    train: TrainConfig  # every field but lr is shared; each member trains at its own lr from `lrs`
    seeds: tuple[int, ...]
    lrs: tuple[float, ...] = ()  # () means (train.lr,)

    @property
    def members(self) -> list[Member]:
        return [(lr, s) for lr in (self.lrs or (self.train.lr,)) for s in self.seeds]

    def train_at(self, lr: float) -> TrainConfig:
        return replace(self.train, lr=lr)

    def run_ids(self) -> dict[Member, str]:
        """Each member's run id: the hash of (model, task, training config at its lr, seed)."""
        return {(lr, s): run_id(self.model, self.task, self.train_at(lr), s) for lr, s in self.members}


def record(job: Job, result, rid: str, command: str | None) -> dict:
    """The summary stored with one run: its configs, outcome, cost and how it was trained."""
    return {
        "run_id": rid,
        "seed": result.seed,
        "model": job.model.to_dict(),
        "task": job.task.to_dict(),
        "train": job.train_at(result.lr).to_dict(),
        "status": result.status,
        "final": result.final,
        "params": count_model_params(job.model),
        "train_seconds": result.train_seconds,
        "step_seconds": result.step_seconds,
        "steps_done": result.steps_done,
        "tokens_per_s": result.tokens_per_s,
        "n_ensemble": result.n_ensemble,  # members that really trained together (a resumed one may train alone)
        "threads": result.threads,
        "command": command,
    }


_warm = False  # per process: has a training already paid the one-time set-up?


def warm_up(job: Job, device=None) -> None:
    """The first training in a process pays ~2 s of one-time set-up: pay it before anything is timed."""
    global _warm
    from ..training.train import train_ensemble

    if not _warm:
        train_ensemble(job.model, job.task, replace(job.train, steps=3, eval_every=3), [0], device)
        _warm = True


def train_members(job: Job, missing: list[Member], device=None, on_step=None, should_stop=None):
    """Train the missing members of one job as one ensemble; their RunResults, or None if stopped."""
    from ..training.train import train_ensemble  # torch only when something trains

    warm_up(job, device)
    lrs, seeds = [lr for lr, _ in missing], [s for _, s in missing]
    return train_ensemble(job.model, job.task, job.train, seeds, device, on_step, should_stop, lrs=lrs)


def store_results(store, job: Job, results, command=None) -> dict:
    """Write each member's run (atomically, weights first); the counts a sweep adds up."""
    ids = job.run_ids()
    for r in results:
        metrics = pd.DataFrame(r.metrics, columns=["step", "metric", "value"])
        rid = ids[(r.lr, r.seed)]
        state = {k: v.numpy() for k, v in r.state_dict.items()} or None
        st.write_run(store, record(job, r, rid, command), metrics, r.head_weights, r.patterns, r.examples, state)
    index.append(store, [ids[(r.lr, r.seed)] for r in results])  # one index segment per job (core.results.index)
    return {"trained": len(results), "diverged": sum(r.status == "diverged" for r in results)}


def train_job(store, job: Job, missing: list[Member], device=None, command=None, on_step=None, should_stop=None):
    """Train the missing members of one job as one ensemble and store each run; None if stopped."""
    results = train_members(job, missing, device, on_step, should_stop)
    return None if results is None else store_results(store, job, results, command)
