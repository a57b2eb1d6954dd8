"""The Train page's sweep, run in a child process so the server never imports torch (the page's server stays
at the read-only pages' memory; training's ~200 MB lives and dies with the child).

    python -m core.dashboard.sweep_child STORE REQUEST_JSON

Speaks JSON lines on stdout:
  {"planned": member_steps, "gflop": g} the request is valid (core.experiments.sweep.plan), and what it costs;
                                       or {"error": line}
  -- then reads one line from stdin: "go" trains; anything else (or EOF) exits without touching the store --
  {"label": ..., "done": n}            a job starts (n member-steps done so far, stored ones included)
  {"done": n}                          progress, at most every PROGRESS_EVERY seconds
  {"counts": {...}} or {"error": line} the outcome, last
SIGTERM stops after the current evaluation (finished runs stay stored); so does the server's death.
"""

import json
import os
import signal
import sys
import time

PROGRESS_EVERY = 0.2  # seconds between progress lines


def _say(**msg) -> None:
    print(json.dumps(msg), flush=True)


def plan(request: dict):
    from ..experiments import sweep
    from ..training.config import TrainConfig

    train = TrainConfig(**request["train"])
    return sweep.plan(
        request["attentions"], request["tasks"], request["seeds"], train, request["model"], request.get("lrs")
    )


def member_steps(jobs) -> int:
    return sum(len(j.members) * j.train.steps for j in jobs)


def gflop(jobs) -> float:
    """What the sweep costs at most (every member to its cap): its training and evaluation FLOPs, counted."""
    from ..experiments.flops import run_flops

    return sum(len(j.members) * run_flops(j) for j in jobs) / 1e9


class _Progress:
    def __init__(self, n_jobs: int):
        self.done, self.saved, self.said = 0, 0, 0.0
        self.job, self.n_jobs = 0, n_jobs
        self.members = {"training": 0}  # and, as they stop, how many stopped why (core.training.criterion.STOPS)

    def on_job(self, job, n_missing):
        self.done += (len(job.members) - n_missing) * job.train.steps  # stored already, or another sweep's
        self.members["training"] += n_missing
        self.job += 1
        _say(
            label=f"job {self.job} of {self.n_jobs}: {job.task.name} / {job.model.attention} "
            f"({n_missing} members to train)",
            done=self.done,
            members=self.members,
        )

    def on_step(self, n):
        self.done += n
        if time.monotonic() - self.said >= PROGRESS_EVERY:
            self.said = time.monotonic()
            _say(done=self.done)

    def on_stop(self, why: str, steps_left: int):
        self.saved += steps_left
        self.members[why] = self.members.get(why, 0) + 1
        self.members["training"] -= 1
        _say(done=self.done, saved=self.saved, members=self.members)


def main(store: str, request: dict) -> int:
    from ..experiments import sweep  # its one-line error wording (a full disk named as such)

    try:
        jobs = plan(request)
    except (ValueError, TypeError, KeyError) as err:  # a bad request: one line, the store untouched
        _say(error=str(err).splitlines()[0] if isinstance(err, ValueError) else sweep._one_line(err))
        return 1
    _say(planned=member_steps(jobs), gflop=gflop(jobs))
    if sys.stdin.readline().strip() != "go":
        return 0
    import torch

    torch.set_num_threads(1)  # one core: the server's other visitors keep theirs (and tiny models gain little)
    stop, parent = [], os.getppid()
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    progress = _Progress(len(jobs))

    def should_stop() -> bool:
        return bool(stop) or os.getppid() != parent  # cancelled, or the server is gone

    try:
        counts = sweep.run(
            store,
            jobs,
            command="streamlit Train page",
            on_job=progress.on_job,
            on_step=progress.on_step,
            should_stop=should_stop,
            on_stop=progress.on_stop,
        )
    except Exception as err:  # noqa: BLE001 - shown on the page as one line; every finished run is stored
        _say(error=sweep._one_line(err))
        return 1
    _say(counts=counts)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], json.loads(sys.argv[2])))
