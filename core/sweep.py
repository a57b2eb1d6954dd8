"""A sweep: every (task, attention) pair trains its missing seeds as one ensemble, then each run is stored.

Resume is by run id: a run already in the store is never trained or written again.
"""

from collections.abc import Callable
from dataclasses import dataclass, replace

import pandas as pd

from . import store as st
from .config import ModelConfig, TaskConfig, TrainConfig, run_id
from .model import count_model_params
from .tasks import make_task


@dataclass(frozen=True)
class Job:
    model: ModelConfig
    task: TaskConfig
    train: TrainConfig
    seeds: tuple[int, ...]

    def run_ids(self) -> dict[int, str]:
        return {s: run_id(self.model, self.task, self.train, s) for s in self.seeds}


def plan(attentions, tasks, n_seeds: int, train: TrainConfig, model_overrides: dict | None = None) -> list[Job]:
    """Validate everything up front (one-line ValueError) so nothing is written for a bad sweep."""
    if not isinstance(n_seeds, int) or n_seeds <= 0:
        raise ValueError(f"seeds: must be a positive integer, got {n_seeds!r}")
    jobs = []
    for task_name in tasks:
        task_cfg = TaskConfig(task_name)
        task = make_task(task_cfg)
        for name in attentions:
            model = ModelConfig(
                attention=name, vocab_size=task.vocab_size, max_len=task.seq_len, **(model_overrides or {})
            )
            jobs.append(Job(model, task_cfg, train, tuple(range(n_seeds))))
    return jobs


def summary(job: Job, seed: int, rid: str, result, command: str | None) -> dict:
    return {
        "run_id": rid,
        "seed": seed,
        "model": job.model.to_dict(),
        "task": job.task.to_dict(),
        "train": job.train.to_dict(),
        "status": result.status,
        "final": result.final,
        "params": count_model_params(job.model),
        "train_seconds": result.train_seconds,
        "step_seconds": result.step_seconds,
        "steps_done": result.steps_done,
        "tokens_per_s": result.tokens_per_s,
        "n_ensemble": len(job.seeds),
        "threads": result.threads,
        "command": command,
    }


def cost(job: Job, n_seeds: int) -> int:
    """A job's training work in multiply-adds, roughly: tokens x (weights each token meets + attention
    scores). Only its order matters: workers take the longest jobs first, so no core is left alone
    with one long job at the end of a sweep."""
    p, T = count_model_params(job.model), job.model.max_len
    per_token = p["attention"] + p["mlp"] + p["unembedding"] + job.model.n_layers * T * job.model.d_model
    return n_seeds * job.train.steps * job.train.batch_size * T * per_token


_warm = False  # per process: has a training already paid the one-time set-up?


def warm_up(job: Job, device=None) -> None:
    """The first training in a process pays ~2 s of one-time set-up: pay it before anything is timed."""
    global _warm
    from .train import train_ensemble

    if not _warm:
        train_ensemble(job.model, job.task, replace(job.train, steps=3, eval_every=3), [0], device)
        _warm = True


def train_job(store, job: Job, missing: list[int], device=None, command=None, on_step=None, should_stop=None):
    """Train the missing seeds of one job as one ensemble and store each run; None if stopped."""
    from .train import train_ensemble  # torch only when something trains

    warm_up(job, device)
    results = train_ensemble(job.model, job.task, job.train, missing, device, on_step, should_stop)
    if results is None:
        return None
    ids = job.run_ids()
    for r in results:
        metrics = pd.DataFrame(r.metrics, columns=["step", "metric", "value"])
        st.write_run(
            store, summary(job, r.seed, ids[r.seed], r, command), metrics, r.head_weights, r.patterns, r.examples
        )
    return {"trained": len(results), "diverged": sum(r.status == "diverged" for r in results)}


def run(
    store,
    jobs: list[Job],
    device=None,
    command: str | None = None,
    on_job: Callable[[Job, int], None] | None = None,
    on_step: Callable[[int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    workers: int = 1,
) -> dict:
    """Train what is missing. Returns counts: trained, skipped (already stored), diverged, cancelled.

    workers > 1 trains that many jobs at once in worker processes (core.workers); should_stop
    is for the in-process sweep (workers=1) only.
    """
    counts = {"trained": 0, "skipped": 0, "diverged": 0, "cancelled": False}
    st.remove_stale_tmp(store)  # left by a sweep killed mid-write
    todo = []
    for job in jobs:
        ids = job.run_ids()
        missing = [s for s, rid in ids.items() if not st.has_run(store, rid)]
        counts["skipped"] += len(ids) - len(missing)
        if on_job:
            on_job(job, len(missing))
        if not missing:
            continue
        if workers > 1:
            todo.append((job, missing))
            continue
        done = train_job(store, job, missing, device, command, on_step, should_stop)
        if done is None:
            counts["cancelled"] = True
            break
        counts["trained"] += done["trained"]
        counts["diverged"] += done["diverged"]
    if todo:
        from .workers import run_parallel

        todo.sort(key=lambda t: cost(t[0], len(t[1])), reverse=True)  # longest first
        for done in run_parallel(store, todo, device, command, min(workers, len(todo)), on_step):
            counts["trained"] += done["trained"]
            counts["diverged"] += done["diverged"]
    return counts


def summary_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Mean and std over seeds per (task, attention), in registry order: what the CLI prints."""
    from .attention import ATTENTION
    from .findings import summary
    from .tasks import TASKS

    return summary(runs, list(TASKS), list(ATTENTION))


def accuracy_table(runs: pd.DataFrame, markdown: bool = False) -> str:
    """Final eval accuracy as mean ± std over seeds: tasks as rows, parameterizations as columns."""
    table = summary_table(runs)
    table["cell"] = [f"{m:.3f} ± {0.0 if pd.isna(s) else s:.3f}" for m, s in zip(table.eval_acc, table.eval_acc_std)]
    wide = table.pivot(index="task", columns="attention", values="cell")
    wide = wide.loc[list(dict.fromkeys(table.task)), list(dict.fromkeys(table.attention))]
    if not markdown:
        return wide.to_string()
    lines = ["| task | " + " | ".join(wide.columns) + " |", "|---" * (len(wide.columns) + 1) + "|"]
    lines += [f"| {task} | " + " | ".join(row) + " |" for task, row in wide.iterrows()]
    return "\n".join(lines)
