"""One job: a configuration's members (seeds x learning rates) trained as one ensemble, each stored as a run.

The sweep (core.experiments.sweep) plans jobs and hands them out; its worker processes (core.experiments.workers) call
`train_job` here. Both import this module, never each other's, so data flows one way.
"""

from dataclasses import dataclass, replace

import pandas as pd

from ..results import index, scratch
from ..results import store as st
from ..results.superseded import longest_caps
from ..results.weights import stored_tensors
from ..training.config import ModelConfig, TaskConfig, TrainConfig, lineage_id, run_id, stable_hash
from ..training.model import count_model_params
from .pace import warm_up

Member = tuple[float, int]  # (learning rate, seed)


@dataclass(frozen=True)
class Job:
    model: ModelConfig
    task: TaskConfig
    train: TrainConfig  # every field but lr is shared; each member trains at its own lr from `lrs`
    seeds: tuple[int, ...]
    lrs: tuple[float, ...] = ()  # () means (train.lr,)
    # another store (data/, say) whose runs of these members at a shorter cap, stopped before it, or at this cap, are
    # the same runs: carried over from there too, not trained again (`sweep --carry-from`); where and how, not which
    carry_from: str | None = None

    @property
    def members(self) -> list[Member]:
        return [(lr, s) for lr in (self.lrs or (self.train.lr,)) for s in self.seeds]

    def part(self, k: int, n: int) -> "Job":
        """The k-th of n parts of the job (sweep --part K/N): its lrs lrs[k-1::n], each with every seed. Parts by
        lr, not by seed: an lr is chosen on all of its cell's seeds, and stops as hopeless only against an lr that
        finished in its own training, so a part trains each run at least as far as the whole job would (an lr the
        whole job stops as hopeless goes on, and still cannot be chosen) and the lr chosen is the same."""
        return replace(self, lrs=(self.lrs or (self.train.lr,))[k - 1 :: n])

    @property
    def label(self) -> str:
        """task/attention: how progress, failures and left jobs name the job."""
        return f"{self.task.name}/{self.model.attention}"

    def train_at(self, lr: float) -> TrainConfig:
        return replace(self.train, lr=lr)

    def run_ids(self) -> dict[Member, str]:
        """Each member's run id: the hash of (model, task, training config at its lr, seed)."""
        return {(lr, s): run_id(self.model, self.task, self.train_at(lr), s) for lr, s in self.members}

    def run_id_at(self, member: Member, steps: int) -> str:
        """The member's run id at another cap: its run of the same lineage (a shorter cap's, say)."""
        lr, seed = member
        return run_id(self.model, self.task, replace(self.train_at(lr), steps=steps), seed)

    def lineage(self, member: Member) -> str:
        """The member's id without its cap (core.training.config.lineage_id)."""
        lr, seed = member
        return lineage_id(self.model.to_dict(), self.task.to_dict(), self.train_at(lr).to_dict(), seed)


def lineage_caps(store, jobs: list[Job]) -> dict[str, int]:
    """The store's criterion lineages and the highest cap of each, read when a job trains to the criterion."""
    return longest_caps(store) if any(job.train.until == "solved" for job in jobs) else {}


def held_longer(job: Job, members: list[Member], caps: dict[str, int]) -> list[Member]:
    """The members whose lineage the store holds at a higher cap than the job's: the longer run holds this one's
    steps (every point is read at its longest training), so it is not trained again."""
    if job.train.until != "solved":
        return []
    return [m for m in members if caps.get(job.lineage(m), 0) > job.train.steps]


def record(job: Job, result, rid: str, command: str | None) -> dict:
    """The summary stored with one run: its configs, outcome, cost and how it was trained."""
    return {
        "run_id": rid,
        "seed": result.seed,
        "model": job.model.to_dict(),
        "task": job.task.to_dict(),
        "train": job.train_at(result.lr).to_dict(),
        "status": result.status,
        "stop": result.stop,  # why it stopped: solved, cap, pruned (its lr could not be chosen) or diverged
        "final": result.final,
        "params": count_model_params(job.model),
        "train_seconds": result.train_seconds,
        "step_seconds": result.step_seconds,
        "steps_done": result.steps_done,
        "steps_from": result.steps_from,  # the steps before it were taken by an earlier process or a shorter cap
        "tokens_per_s": result.tokens_per_s,
        "n_ensemble": result.n_ensemble,  # members that really trained together (a resumed one may train alone)
        "threads": result.threads,
        "device": result.device,
        "command": command,
    }


def checkpointer(store, job: Job, start: int):
    """Where a training of this job from `start` saves itself: keyed by all the job's runs, not the missing
    ones, so a sweep killed after storing some of its members finds it again."""
    from ..training.checkpoint import Checkpointer

    return Checkpointer(scratch.checkpoint_path(store, stable_hash([sorted(job.run_ids().values()), start])))


def train_members(
    job: Job,
    missing: list[Member],
    device=None,
    on_step=None,
    should_stop=None,
    *,
    store=None,
    resume=None,
    settled=(),
    on_stop=None,
):
    """Train the missing members of one job as one ensemble; their RunResults, or None if stopped.
    With a store, the training checkpoints to its scratch folder (checkpointer; train_job clears it once the
    runs are stored), and a checkpoint left there by a killed sweep is gone on from, with every member it
    trained (so the members train in the same ensemble as before and end bit-identical), however many of
    them were stored before the kill."""
    from ..training.train import train_ensemble  # torch only when something trains

    warm_up(job, device)
    saver, members = None, list(missing)
    if store is not None:
        saver = checkpointer(store, job, resume[0]["step"] if resume else 0)
        members = training_members(saver, missing, bool(resume))
    resume = resume and [resume[missing.index(m)] for m in members]
    lrs, seeds = [lr for lr, _ in members], [s for _, s in members]
    results = train_ensemble(
        job.model,
        job.task,
        job.train,
        seeds,
        device,
        on_step,
        should_stop,
        lrs=lrs,
        resume=resume,
        checkpoint=saver,
        settled=settled,
        on_stop=on_stop,
    )
    want = set(missing)
    return None if results is None else [r for r in results if (r.lr, r.seed) in want]


def training_members(saver, missing: list[Member], resumed: bool) -> list[Member]:
    """The members a training of `missing` trains: those of the checkpoint `saver` holds, where it holds every
    missing one (so they train in the same ensemble as before and end bit-identical), else `missing`; going on
    from saved end states, only the members they cover."""
    before = [tuple(m) for m in saver.members() or []]
    members = before if before and set(missing) <= set(before) else list(missing)
    return list(missing) if resumed and not set(members) <= set(missing) else members


def starts(store, job: Job, missing: list[Member]) -> tuple[dict, list, dict[int, list[Member]]]:
    """How train_job takes up `missing`: each member's shorter-capped run (under until="solved": read_lineage),
    the results of those that stopped before their old cap (the same runs: carried over, not trained), and the
    others by the step they start from (0, or their old cap, from its saved end state)."""
    criterion = job.train.until == "solved"
    prior = {m: scratch.read_lineage(store, job.lineage(m), job.train.steps) for m in missing} if criterion else {}
    if criterion and job.carry_from:
        prior |= stopped_elsewhere(job, [m for m in missing if not prior[m]])
    done = {m: p["result"] for m, p in prior.items() if p and _finished(p["result"], job.train.steps)}
    by_start: dict[int, list[Member]] = {}
    for m in missing:
        if m not in done:
            p = prior.get(m)
            by_start.setdefault(p["result"].steps_done if p else 0, []).append(m)
    return prior, list(done.values()), by_start


def _finished(result, cap: int) -> bool:
    """A prior run that is this job's run already: it stopped before its cap, or it ran to this job's own cap."""
    return result.stop != "cap" or result.steps_done >= cap


def stopped_elsewhere(job: Job, members: list[Member]) -> dict:
    """{member: {"result": its RunResult}} for each member whose lineage job.carry_from holds at a shorter cap, in a
    run that stopped before that cap (solved, its lr ruled out, diverged), or at the job's own cap, however it
    stopped (a line that adds seeds): the run this job would train again, step for step, since neither the schedule
    nor those stops depend on the cap. Its curve is the one stored there (a slimmed store's thinned curve), and
    its weights, patterns and model where that store kept them: prune --superseded deletes the shorter run they
    were kept with once the raised one lands."""
    from ..training.recorder import RunResult

    if not members:
        return {}
    caps = longest_caps(job.carry_from)
    stopped = {}
    for lr, seed in members:
        cap = caps.get(job.lineage((lr, seed)), 0)
        if not 0 < cap <= job.train.steps:
            continue
        rid = job.run_id_at((lr, seed), cap)
        meta = st.run_meta(job.carry_from, rid)
        if meta.get("stop", "cap") != "cap" or cap == job.train.steps:
            stopped[rid] = (lr, seed, meta)
    curves = st.load_metrics(job.carry_from, list(stopped)).groupby("run_id") if stopped else {}
    out = {}
    for rid, (lr, seed, meta) in stopped.items():
        curve = curves.get_group(rid)
        fields = {k: meta[k] for k in _CARRIED if meta.get(k) is not None}
        metrics = list(zip(curve.step, curve.metric, curve.value))
        tensors = stored_tensors(job.carry_from, rid)
        out[(lr, seed)] = {"result": RunResult(seed=seed, lr=lr, **fields, metrics=metrics, **tensors)}
    return out


# the RunResult fields a carried run keeps from its stored record (its end state stays behind)
_CARRIED = (
    *("status", "final", "stop", "steps_done", "device"),
    *("train_seconds", "step_seconds", "tokens_per_s", "threads", "n_ensemble"),
)


def store_results(store, job: Job, results, command=None) -> dict:
    """Write each member's run (atomically, weights first); the counts a sweep adds up. A criterion run also
    leaves its lineage record in the scratch folder, from which a longer cap goes on."""
    ids = job.run_ids()
    for r in results:
        metrics = pd.DataFrame(r.metrics, columns=["step", "metric", "value"])
        rid = ids[(r.lr, r.seed)]
        state = r.state_dict or None  # torch (trained) or numpy (carried): write_run takes either as float32
        st.write_run(store, record(job, r, rid, command), metrics, r.head_weights, r.patterns, r.examples, state)
        if job.train.until == "solved":
            scratch.write_lineage(store, job.lineage((r.lr, r.seed)), job.train.steps, r)
    index.append(store, [ids[(r.lr, r.seed)] for r in results])  # one index segment per job (core.results.index)
    counts = {"trained": len(results), "diverged": sum(r.status == "diverged" for r in results)}
    counts["stored"] = [ids[(r.lr, r.seed)] for r in results]  # what a sweep's record counts (flops.measured_sweep)
    if job.train.until == "solved":  # why each stopped: what a sweep to a criterion reports
        counts.update({k: sum(r.stop == k for r in results) for k in ("solved", "cap", "pruned")})
    return counts


def train_job(
    store,
    job: Job,
    missing: list[Member],
    device=None,
    command=None,
    on_step=None,
    should_stop=None,
    on_stop=None,
    deadline: float | None = None,
):
    """Train the missing members of one job and store each run; None if stopped. With a deadline (seconds since
    the epoch: `sweep --hours`), a job that could train past it trains nothing and comes back as {"left": [label]}
    (core.experiments.deadline); its carried members are stored all the same.

    Under until="solved", a member whose shorter-capped run is recorded in the scratch folder is not trained
    anew: stopped before its old cap (solved, pruned, diverged), it is the same run and is stored again under
    the new cap; stopped at its old cap, it goes on from its saved state. The cell's stored members count
    towards the rule that stops an lr which can no longer be chosen."""
    criterion = job.train.until == "solved"
    prior, done_before, by_start = starts(store, job, missing)
    copied = [replace(r, steps_from=r.steps_done) for r in done_before]  # no step of theirs is taken here
    stored = store_results(store, job, copied, command)["stored"] if copied else []
    counts = {"trained": 0, "diverged": 0, "carried": len(copied), "stored": stored}  # carried: stored, not trained
    if deadline is not None:
        from . import deadline as until

        if until.past(job, by_start, deadline, device):
            return counts | {"left": [job.label]}
    for start, members in sorted(by_start.items(), reverse=True):  # go on from saved states first: cheaper
        resume = [prior[m]["result"].resume for m in members] if start else None
        settled = _settled(store, job, members) if criterion else ()
        results = train_members(
            job, members, device, on_step, should_stop, store=store, resume=resume, settled=settled, on_stop=on_stop
        )
        if results is None:
            return None
        done = store_results(store, job, results, command)
        checkpointer(store, job, start).clear()  # every run it held is stored
        counts |= {k: counts.get(k, 0) + v for k, v in done.items()}
    return counts


def _settled(store, job: Job, training: list[Member]) -> list[tuple[float, int | None]]:
    """(lr, solve step or None) of the job's members stored already, for the rule that stops a hopeless lr."""
    out = []
    for m, rid in job.run_ids().items():
        if m in training:
            continue
        try:
            meta = st.run_meta(store, rid)
        except (OSError, ValueError):
            continue
        solve = (meta.get("final") or {}).get("solve_step")
        solved = meta.get("stop") == "solved" and solve is not None and solve == solve
        out.append((m[0], int(solve) if solved else None))
    return out
