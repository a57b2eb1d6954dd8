"""The Train page's background sweep: one at a time per server, owned by the browser session that
started it, inside a server-wide work budget. Progress, cancel and the outcome.

The sweep trains in a child process (core.dashboard.sweep_child), so the server never imports torch; this
module only starts it, reads its progress and stops it. Module state outlives Streamlit reruns (the module is
imported once per server process).
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from pathlib import Path

BUDGET_ENV = "ATTENTION_LAB_BUDGET_GFLOP"  # training compute per hour for the whole server (all visitors)
# about one core-hour per hour: tiny models train at ~17 GFLOP/s a thread here (data/bench sweep records). The
# form's default (2 parameterizations, 2 seeds, 300 steps) is ~700 GFLOP; 8 x 3 seeds x 4 lrs x 2000 steps at
# d_model 128 with 4 layers is ~1.1 million (hours of a core), refused.
DEFAULT_BUDGET = 60_000
WINDOW = 3600.0  # seconds the budget counts back

_ROOT = Path(__file__).resolve().parents[2]
PLAN_TIMEOUT = 120  # seconds for the child to import torch and validate the request

_lock = threading.Lock()
_current: "SweepJob | None" = None
_spent: deque = deque()  # (start time, GFLOP) of the sweeps started in the last WINDOW
_owners: dict[str, str] = {}  # store path -> the session that created it: only that session trains into it


def budget() -> int:
    try:
        return max(0, int(os.environ.get(BUDGET_ENV, DEFAULT_BUDGET)))
    except ValueError:
        return DEFAULT_BUDGET


def plan(attentions, tasks, seeds: int, train: dict, model: dict, lrs=None) -> dict:
    """The Train form's sweep as a request for the child, which validates it like the CLI
    (core.experiments.sweep.plan): a bad field is a one-line ValueError from start()."""
    if not attentions or not tasks:
        raise ValueError("attention, task: pick at least one of each")
    return {
        "attentions": list(attentions),
        "tasks": list(tasks),
        "seeds": seeds,
        "train": dict(train),
        "model": dict(model),
        "lrs": list(lrs) if lrs else None,
    }


class SweepJob:
    """One sweep in its child process: `total` member-steps once planned, `done` so far, `state`."""

    def __init__(self, store, request: dict, owner: str, name: str = ""):
        self.owner, self.store_name, self.store = owner, name, str(store)
        self.total = self.done = self.saved = 0  # saved: member-steps members that stopped early will not take
        self.gflop = 0.0  # its cost in compute: what the budget counts
        self.members: dict = {}  # members stopped so far, by why (core.training.criterion.STOPS), and training
        self.started = time.monotonic()
        self.label = ""
        self.state = "running"  # running, finished, cancelled, failed
        self.counts: dict | None = None
        self.error = ""
        self._planned = threading.Event()
        self._valid = False
        cmd = [sys.executable, "-m", "core.dashboard.sweep_child", str(store), json.dumps(request)]
        self._child = subprocess.Popen(cmd, cwd=_ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        threading.Thread(target=self._read, daemon=True, name="attention-lab-sweep").start()

    @property
    def progress(self) -> float:
        """Member-steps done over those the sweep will take: members that stopped early take no more."""
        return min(1.0, self.done / max(1, self.total - self.saved))

    @property
    def eta_seconds(self) -> float | None:
        """At the rate so far, the time to train what the members still training have left."""
        elapsed = time.monotonic() - self.started
        if not self.done or elapsed <= 0:
            return None
        return max(0.0, (self.total - self.saved - self.done) * elapsed / self.done)

    def _read(self):
        for line in self._child.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue  # not one of ours (a library printing): ignored
            if not isinstance(msg, dict):
                continue
            if "planned" in msg:
                self.total, self.gflop, self._valid = int(msg["planned"]), float(msg.get("gflop", 0.0)), True
                self._planned.set()
            self.done = int(msg.get("done", self.done))
            self.saved = int(msg.get("saved", self.saved))
            self.members = msg.get("members", self.members)
            self.label = msg.get("label", self.label)
            self.counts = msg.get("counts", self.counts)
            self.error = msg.get("error", self.error)
        code = self._child.wait()
        if self.counts is not None:
            state = "cancelled" if self.counts["cancelled"] else "finished"
        else:
            state, self.error = "failed", self.error or f"the sweep process exited with status {code}"
        self.done = self.total - self.saved if state == "finished" else self.done
        if state != "finished" and self._valid and _remove_if_empty(self.store):
            _owners.pop(self.store, None)  # nothing was stored: the name is free again, and the Store list clean
        self.state = state  # last: a reader that sees the end sees the store as it is left
        self._planned.set()

    def planned(self) -> float:
        """The sweep's cost in GFLOP once the child has validated and priced it; else a one-line ValueError."""
        if not self._planned.wait(PLAN_TIMEOUT):
            self.refuse()
            raise RuntimeError(f"the sweep process took over {PLAN_TIMEOUT} s to start")
        if not self._valid:
            raise ValueError(self.error or "the sweep process failed to start")
        return self.gflop

    def go(self):
        try:
            self._child.stdin.write("go\n")
            self._child.stdin.close()
        except OSError:  # the child died after planning: its reader marks the job failed
            pass

    def refuse(self):
        """Not started after all: the child exits without touching the store."""
        try:
            self._child.stdin.close()
        except OSError:
            pass
        try:
            self._child.wait(30)
        except subprocess.TimeoutExpired:  # still importing: it would exit on reading EOF, but need not be waited for
            self._child.kill()
            self._child.wait()

    def stop(self):
        """Cancel after the current evaluation; finished runs stay stored."""
        if self._child.poll() is None:
            self._child.send_signal(signal.SIGTERM)


def describe_members(job: "SweepJob") -> str:
    """' · 3 training · 2 solved · 1 censored · 25 s so far · about 40 s left', from what the sweep has said."""
    m = job.members
    names = {
        "training": "training",
        "solved": "solved",
        "cap": "censored at the cap",
        "pruned": "lr dropped",
        "diverged": "diverged",
    }
    parts = [f"{m[k]} {label}" for k, label in names.items() if m.get(k)]
    parts.append(f"{_duration(time.monotonic() - job.started)} so far")
    eta = job.eta_seconds
    if eta is not None:
        parts.append(f"about {_duration(eta)} left")
    return "".join(f" · {p}" for p in parts)


def _duration(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 120 else f"{seconds:.0f} s"


def current() -> "SweepJob | None":
    return _current


def _remove_if_empty(store) -> bool:
    """Remove a store that holds nothing but folders and its claims lock (a sweep cancelled before its first job
    finished); True if it is gone. Anything with another file in it is left exactly as it is."""
    root = Path(store)
    lock = root / "claims" / ".lock"
    try:
        walked = list(os.walk(root, topdown=False))
        if not walked or any(Path(d, f) != lock for d, _, files in walked for f in files):
            return False
        lock.unlink(missing_ok=True)
        for folder, _, _ in walked:
            os.rmdir(folder)
    except OSError:
        return False
    return True


def _has_files(store) -> bool:
    try:
        return any(Path(store).iterdir())
    except OSError:  # absent (the usual case: a new name), or not a directory: mkdir below says which
        return False


def wait_seconds(cost: float, now: float | None = None) -> float:
    """0 when a sweep of `cost` GFLOP fits in the budget now, else how long until it does."""
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


def start(store, request: dict, owner: str, name: str = "") -> SweepJob:
    """Start a sweep in a child process for the session `owner`. Refuses (one-line ValueError or RuntimeError)
    a bad request, while another sweep runs, or when the server's hourly budget would be exceeded; a refused
    start leaves no store."""
    global _current
    with _lock:
        if _current is not None and _current.state == "running":
            raise RuntimeError("a sweep is already running on this server: wait for it to finish")
        job = SweepJob(store, request, owner, name)
        try:
            cost = job.planned()
            wait = wait_seconds(cost)
            if wait == float("inf"):
                raise RuntimeError(
                    f"this sweep ({cost:,.0f} GFLOP) is larger than the server's budget of "
                    f"{budget():,} GFLOP per hour ({BUDGET_ENV}): fewer steps, seeds, lrs or "
                    "a smaller model"
                )
            if wait > 0:
                raise RuntimeError(
                    f"the server's training budget ({budget():,} GFLOP per hour) is used "
                    f"up: try again in {max(1, round(wait / 60))} min"
                )
            if _owners.get(str(store), owner) != owner or (str(store) not in _owners and _has_files(store)):
                raise ValueError(f"store name: {name!r} is taken; pick another name")  # another visitor's, or older
            try:  # only once the start is allowed: a refused one leaves no empty store
                Path(store).mkdir(exist_ok=True)
            except OSError:  # raced into existence as something else, or the root went away: no path in the message
                raise ValueError(f"store name: {name!r} is taken; pick another name") from None
            _owners[str(store)] = owner
        except BaseException:
            job.refuse()
            raise
        _spent.append((time.time(), cost))
        _current = job
        job.go()
        return job
