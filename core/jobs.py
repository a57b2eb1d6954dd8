"""One background sweep at a time for the Train page: progress, cancel, and its outcome.

Module state outlives Streamlit reruns (the module is imported once per server process).
"""

import threading
import traceback

from . import sweep

_lock = threading.Lock()
_current: "SweepJob | None" = None


class SweepJob:
    def __init__(self, store, jobs: list[sweep.Job]):
        self.store, self.jobs = store, jobs
        self.total = sum(j.train.steps for j in jobs)
        self.done = 0
        self.label = ""
        self.state = "running"  # running, finished, cancelled, failed
        self.counts: dict | None = None
        self.error = ""
        self.cancel = threading.Event()
        self._finished_jobs = 0

    @property
    def progress(self) -> float:
        return min(1.0, self.done / max(1, self.total))

    def _on_job(self, job, n_missing):
        self.done = self._finished_jobs * job.train.steps
        self._finished_jobs += 1
        self.label = f"{job.task.name} / {job.model.attention} ({n_missing} seeds to train)"

    def _on_step(self, step):
        self.done += 1

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
        except Exception:  # noqa: BLE001 - shown on the page, never lost
            self.state, self.error = "failed", traceback.format_exc(limit=3)
        self.done = self.total if self.state == "finished" else self.done


def current() -> "SweepJob | None":
    return _current


def start(store, jobs) -> SweepJob:
    """Start a sweep in a background thread; refuses while another is running."""
    global _current
    with _lock:
        if _current is not None and _current.state == "running":
            raise RuntimeError("a sweep is already running: wait for it or cancel it")
        _current = SweepJob(store, jobs)
        threading.Thread(target=_current.run, daemon=True, name="attention-lab-sweep").start()
        return _current
