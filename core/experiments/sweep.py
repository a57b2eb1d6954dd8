"""A sweep: every (task, attention) pair trains its missing members (seeds x lrs) as one ensemble.

Resume is by run id: a run already in the store is never trained or written again. A run being
trained is claimed in the store (core.results.claims), so two sweeps on one store never train it twice.
"""

import errno
import warnings
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from ..results import claims, index
from ..results import store as st
from ..results.stores import BUNDLED
from ..training.config import ModelConfig, TaskConfig, TrainConfig
from ..training.model import count_model_params
from ..training.tasks import make_task
from .cluster import ClusterError
from .run_job import Job, Member, held_longer, lineage_caps, train_job  # noqa: F401 - the sweep's interface

MAX_SEEDS = 1000  # seeds per configuration: far beyond any sweep here, so a typo is one clear error


class SweepError(RuntimeError):
    """A sweep that could not finish: one line naming the job or path; every finished run is stored."""


def plan(
    attentions,
    tasks,
    n_seeds: int,
    train: TrainConfig,
    model_overrides: dict | None = None,
    lrs=None,
    task_overrides: dict | None = None,
) -> list[Job]:
    """Validate everything up front (one-line ValueError) so nothing is written for a bad sweep.
    task_overrides (n_symbols, length) apply to every task; max_len follows each task's sequence length.
    A name given twice trains once."""
    if not isinstance(n_seeds, int) or isinstance(n_seeds, bool) or not 0 < n_seeds <= MAX_SEEDS:
        raise ValueError(f"seeds: must be a positive integer at most {MAX_SEEDS}, got {n_seeds!r}")
    lrs = tuple(dict.fromkeys(float(lr) for lr in (lrs or (train.lr,))))
    for lr in lrs:
        TrainConfig(**{**train.to_dict(), "lr": lr})  # each member's config must be valid too
    attentions, tasks = list(dict.fromkeys(attentions)), list(dict.fromkeys(tasks))
    jobs = []
    for task_name in tasks:
        task_cfg = TaskConfig(task_name, **(task_overrides or {}))
        task = make_task(task_cfg)
        for name in attentions:
            model = ModelConfig(
                attention=name, vocab_size=task.vocab_size, max_len=task.seq_len, **(model_overrides or {})
            )
            jobs.append(Job(model, task_cfg, train, tuple(range(n_seeds)), lrs))
    return jobs


def cost(job: Job, n_members: int) -> int:
    """A job's training work in multiply-adds, roughly, if every member trains to the cap: tokens x (weights each
    token meets + attention scores). Only its order matters (longest_first)."""
    return work(job.model, job.train.steps, job.train.batch_size, n_members)


def work(model: ModelConfig, steps: int, batch_size: int, n_members: int) -> int:
    p, T = count_model_params(model), model.max_len
    per_token = p["attention"] + p["mlp"] + p["unembedding"] + model.n_layers * T * model.d_model
    return n_members * steps * batch_size * T * per_token


def criterion_shares(runs: pd.DataFrame) -> pd.Series:
    """Per (task, attention): the mean share of its cap a criterion run trained, over the given runs (any size, any
    cap): how long a job of that pair can be expected to train, which its FLOPs per step do not tell."""
    if runs.empty or "until" not in runs:
        return pd.Series(dtype=float)
    done = runs[runs.until == "solved"]
    return (done.steps_done / done.steps).groupby([done.task, done.attention]).mean()


def longest_first(todo: list, runs: pd.DataFrame) -> list:
    """(job, members) pairs in the order workers take them: the longest first, so no core is left alone with one
    long job at the end of a sweep. Under until="solved" a job's length is its cost times the share of the cap
    the given criterion runs of its task and parameterization trained (_history: the store's, else the bundled
    results'; identity does the least work per step and trains the longest); all of it where none did.
    docs/benchmarks.md replays stored sweeps' measured job times in this order and in the FLOPs-only one
    (`bench --schedule`)."""
    share = criterion_shares(runs)

    def length(pair) -> float:
        job, members = pair
        at_cap = cost(job, len(members))
        return expected(at_cap, share, job.task.name, job.model.attention) if job.train.until == "solved" else at_cap

    return sorted(todo, key=length, reverse=True)


def expected(at_cap: float, shares: pd.Series, task: str, attention: str) -> float:
    """A criterion job's work at the cap times the share of it runs of its task and parameterization trained
    (criterion_shares); all of it where none did."""
    key = (task, attention)
    return at_cap * (float(shares[key]) if key in shares.index else 1.0)


def _quietly(fn, *args) -> None:
    try:
        fn(*args)
    except OSError:  # tidying up must never hide the sweep's own outcome
        pass


def _one_line(err: BaseException) -> str:
    if isinstance(err, OSError) and err.errno == errno.ENOSPC:
        return f"disk full writing {err.filename or 'the store'}"
    return f"{type(err).__name__}: {err}".splitlines()[0]


def run(
    store,
    jobs: list[Job],
    device=None,
    command: str | None = None,
    on_job: Callable[[Job, int], None] | None = None,
    on_step: Callable[[int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    workers: int = 1,
    ray: str | None = None,
    on_stop: Callable[[str, int], None] | None = None,
    deadline: float | None = None,
) -> dict:
    """Train what is missing. Returns counts: trained, skipped (already stored), longer (under until="solved": held
    at a higher cap, whose run holds this one's steps; core.results.superseded), claimed (being trained
    by another sweep right now), diverged, failed (jobs given up on), cancelled, stored (the ids of the runs it
    wrote), and under until="solved" carried (stopped before a shorter cap: stored again under this one, not
    trained), and left (the jobs that would have trained past `deadline`, seconds since the epoch: `sweep --hours`;
    core.experiments.deadline), whose claims are let go for a later sweep.

    A KeyboardInterrupt (Ctrl-C) cancels: the jobs in flight stop (their checkpoints stay, for a rerun to go on
    from) and the counts come back with cancelled set, as should_stop's do.

    on_step(n) is called as training advances n member-steps; on_stop(why, steps_left) as a member stops
    (core.training.criterion.STOPS), steps_left before its cap (not from Ray). workers > 1 trains that many jobs at
    once in worker processes (core.experiments.workers); `ray` (local or HOST:PORT) trains every job as a task
    on a Ray cluster instead (core.experiments.cluster). should_stop is for the in-process sweep only.
    Raises SweepError (one line) when the store cannot be written or the cluster reached: every
    run finished before that is stored, and a rerun resumes."""
    counts = {
        "trained": 0,
        "skipped": 0,
        "longer": 0,
        "claimed": 0,
        "diverged": 0,
        "failed": [],
        "cancelled": False,
        "stored": [],
        "left": [],
    }
    st.remove_stale_tmp(store)  # left by a sweep killed mid-write
    todo, held = [], []
    try:
        caps = lineage_caps(store, jobs)
        for job in jobs:
            ids = job.run_ids()
            missing = [m for m, rid in ids.items() if not st.stored_whole(store, rid)]  # unreadable: set aside
            counts["skipped"] += len(ids) - len(missing)
            longer = held_longer(job, missing, caps)
            counts["longer"] += len(longer)
            missing = [m for m in missing if m not in longer]
            mine = [m for m in missing if claims.claim(store, ids[m])]
            held += [ids[m] for m in mine]
            counts["claimed"] += len(missing) - len(mine)
            if on_job:
                on_job(job, len(mine))
            if not mine:
                continue
            if workers > 1 or ray:
                todo.append((job, mine))
                continue
            done = train_job(store, job, mine, device, command, on_step, should_stop, on_stop, deadline)
            if done is None:
                counts["cancelled"] = True
                break
            if done.get("left"):  # another sweep with more time may take it now
                for rid in [ids[m] for m in mine]:
                    claims.release(store, rid)
                    held.remove(rid)
            _add(counts, done)
        if todo:
            todo = longest_first(todo, _history(store, todo))
            finished: list[dict] = []  # each job's counts as it ends: a cancel still counts the jobs done before it
            try:
                _engine(store, todo, device, command, workers, ray, on_step, on_stop, finished, deadline)
            finally:
                for done in finished:
                    _add(counts, done)
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM (core.cli): what finished is stored and counted
        counts["cancelled"] = True
    except ClusterError as err:
        raise SweepError(str(err)) from None
    except OSError as err:
        try:
            stored = f"{sum(st.has_run(store, rid) for job in jobs for rid in job.run_ids().values())} runs"
        except OSError:  # the store cannot even be listed (permissions): say so, not a second traceback
            stored = "the runs finished before it"
        raise SweepError(f"{_one_line(err)}; {stored} of this sweep are stored, rerun to resume") from None
    finally:
        for rid in held:
            claims.release(store, rid)
        if counts["trained"] or counts.get("carried"):
            _compact_index(store)
        _quietly(st.remove_stale_tmp, store)  # a worker killed mid-write and retried left its temp file
    return counts


def _history(store, todo, prior=BUNDLED) -> pd.DataFrame:
    """The runs whose criterion shares order the jobs (longest_first): the store's own, and the prior store's (the
    bundled results) for each task and parameterization the store has no criterion run of, so a fresh store's first
    sweep also starts the jobs known to train long first. Order only: no result depends on it. The prior is read
    only where the store's own history leaves a job's pair unknown."""
    if not any(job.train.until == "solved" for job, _ in todo):
        return pd.DataFrame()
    own = st.load_runs(store)
    if {(job.task.name, job.model.attention) for job, _ in todo} <= set(criterion_shares(own).index):
        return own
    try:
        known = st.load_runs(prior) if prior is not None and Path(prior).is_dir() else pd.DataFrame()
    except OSError:  # an unreadable prior costs the order, never the sweep
        known = pd.DataFrame()
    return with_prior(own, known)


def with_prior(own: pd.DataFrame, prior: pd.DataFrame) -> pd.DataFrame:
    """own's runs, then prior's criterion runs of each (task, attention) that own has no criterion run of."""
    if prior.empty or "until" not in prior:
        return own
    mine = set(criterion_shares(own).index)
    theirs = prior[prior.until == "solved"]
    return pd.concat([own, theirs[[k not in mine for k in zip(theirs.task, theirs.attention)]]], ignore_index=True)


def _add(counts: dict, done: dict) -> None:
    """A job's counts into the sweep's: trained, diverged, failed, and why criterion runs stopped."""
    for k, v in done.items():
        counts[k] = counts.get(k, [] if isinstance(v, list) else 0) + v


def _compact_index(store) -> None:
    """Merge the sweep's per-job index segments into one; a failure here costs read speed, never runs."""
    try:
        index.compact(store)
    except OSError as err:
        warnings.warn(f"could not compact the runs index of {store}: {_one_line(err)}", stacklevel=3)


def _engine(store, todo, device, command, workers, ray, on_step, on_stop, out: list, deadline=None) -> None:
    if ray:
        from .cluster import run_ray

        run_ray(store, todo, device, command, ray, on_step, out=out)
        return
    from .workers import run_parallel

    run_parallel(
        store, todo, device, command, min(workers, len(todo)), on_step, on_stop=on_stop, out=out, deadline=deadline
    )


def summary_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Mean and std over seeds per (task, attention), in registry order: what the CLI prints."""
    from ..analysis.findings import summary
    from ..attention import NAMES
    from ..training.task_specs import TASK_NAMES

    return summary(runs, list(TASK_NAMES), list(NAMES))


def accuracy_table(runs: pd.DataFrame, markdown: bool = False) -> str:
    """Final test accuracy of each task at its longest training, each cell at its best lr (chosen on
    validation): solved k/n with its Wilson 95% interval, mean ± std over seeds, and the lr; tasks as rows,
    parameterizations as columns."""
    from ..analysis import markdown
    from ..analysis.findings import at_best_lr, at_longest

    table = summary_table(at_best_lr(at_longest(runs)))
    table["cell"] = [
        f"{k}/{n} [{lo:.2f}, {hi:.2f}] · {m:.3f} ± {0.0 if pd.isna(s) else s:.3f} · lr {lr:g}"
        for k, n, lo, hi, m, s, lr in zip(
            table.solved, table.seeds, table.solved_lo, table.solved_hi, table.test_acc, table.test_acc_std, table.lr
        )
    ]
    wide = table.pivot(index="task", columns="attention", values="cell")
    wide = wide.loc[list(dict.fromkeys(table.task)), list(dict.fromkeys(table.attention))]
    if not markdown:
        return wide.to_string()
    return markdown.table(wide.rename_axis(index="task", columns=None).reset_index())
