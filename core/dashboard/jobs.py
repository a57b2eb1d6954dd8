"""The Train page's background sweep: one at a time per server, owned by the browser session that
started it, inside a server-wide work budget. Progress, cancel and the outcome.

Module state outlives Streamlit reruns (the module is imported once per server process).
"""

import os
import threading
import time
from collections import deque
from pathlib import Path

from ..experiments import sweep
from ..training.config import TrainConfig

BUDGET_ENV = "ATTENTION_LAB_BUDGET"  # member-steps per hour for the whole server (all visitors)
DEFAULT_BUDGET = 200_000  # e.g. 8 parameterizations x 2 tasks x 3 seeds x 2000 steps is 96,000
WINDOW = 3600.0  # seconds the budget counts back

_lock = threading.Lock()
_current: "SweepJob | None" = None
_spent: deque = deque()  # (start time, member-steps) of the sweeps started in the last WINDOW


def budget() -> int:
    try:
        return max(0, int(os.environ.get(BUDGET_ENV, DEFAULT_BUDGET)))
    except ValueError:
        return DEFAULT_BUDGET


def plan(attentions, tasks, seeds: int, steps: int, model: dict, lrs=None, precision="fp32") -> list[sweep.Job]:
    """The Train form's sweep, validated like the CLI's (a one-line ValueError names the field)."""
    return sweep.plan(attentions, tasks, seeds, TrainConfig(steps=steps, precision=precision), model, lrs)


def member_steps(jobs: list[sweep.Job]) -> int:
    return sum(len(j.members) * j.train.steps for j in jobs)


class SweepJob:
    def __init__(self, store, jobs: list[sweep.Job], owner: str, name: str = ""):
        self.store, self.jobs, self.owner, self.store_name = store, jobs, owner, name
        self.total = member_steps(jobs)
        self.done = 0
        self.label = ""
        self.state = "running"  # running, finished, cancelled, failed
        self.counts: dict | None = None
        self.error = ""
        self.cancel = threading.Event()

    @property
    def progress(self) -> float:
        return min(1.0, self.done / max(1, self.total))

    def _on_job(self, job, n_missing):
        self.done += (len(job.members) - n_missing) * job.train.steps  # stored already, or another sweep's
        self.label = f"{job.task.name} / {job.model.attention} ({n_missing} members to train)"

    def _on_step(self, member_steps):
        self.done += member_steps

    def run(self):
        try:
            self.counts = sweep.run(
                self.store,
                self.jobs,
                command="streamlit Train page",
                on_job=self._on_job,
                on_step=self._on_step,
                should_stop=self.cancel.is_set,
            )
            self.state = "cancelled" if self.counts["cancelled"] else "finished"
        except Exception as err:  # noqa: BLE001 - shown on the page as one line, never lost
            self.state, self.error = "failed", f"{type(err).__name__}: {err}".splitlines()[0]
        self.done = self.total if self.state == "finished" else self.done


def current() -> "SweepJob | None":
    return _current


def wait_seconds(cost: int, now: float | None = None) -> float:
    """0 when a sweep of `cost` member-steps fits in the budget now, else how long until it does."""
    now = time.time() if now is None else now
    while _spent and _spent[0][0] <= now - WINDOW:
        _spent.popleft()
    limit = budget()
    if cost > limit:
        return float("inf")
    used = sum(c for _, c in _spent)
    if used + cost <= limit:
        return 0.0
    for t, c in _spent:  # the oldest sweeps leave the window first
        used -= c
        if used + cost <= limit:
            return max(0.0, t + WINDOW - now)
    return WINDOW


def start(store, jobs, owner: str, name: str = "") -> SweepJob:
    """Start a sweep in a background thread for the session `owner`. Refuses (one-line RuntimeError)
    while another sweep runs, or when the server's hourly budget would be exceeded."""
    global _current
    with _lock:
        if _current is not None and _current.state == "running":
            raise RuntimeError("a sweep is already running on this server: wait for it to finish")
        cost = member_steps(jobs)
        wait = wait_seconds(cost)
        if wait == float("inf"):
            raise RuntimeError(f"this sweep ({cost:,} member-steps) is larger than the server's budget of "
                               f"{budget():,} member-steps per hour ({BUDGET_ENV})")  # fmt: skip
        if wait > 0:
            raise RuntimeError(f"the server's training budget ({budget():,} member-steps per hour) is used up: "
                               f"try again in {max(1, round(wait / 60))} min")  # fmt: skip
        try:  # only once the start is allowed: a refused one leaves no empty store
            Path(store).mkdir(exist_ok=True)
        except OSError:  # raced into existence as something else, or the root went away: no path in the message
            raise ValueError(f"store name: {name!r} is taken; pick another name") from None
        _spent.append((time.time(), cost))
        _current = SweepJob(store, jobs, owner, name)
        threading.Thread(target=_current.run, daemon=True, name="attention-lab-sweep").start()
        return _current
