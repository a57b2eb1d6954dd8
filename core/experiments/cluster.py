"""Sweep jobs on a Ray cluster: `python -m core sweep ... --ray local|HOST:PORT`.

Each job (one seeds x lrs ensemble) is one Ray task that declares its resources: one CPU, and a
share of a GPU where the cluster has GPUs. The driver (this process) receives each finished job's
results and writes them to the store with the store's atomic writes, so workers need no shared
filesystem; resume and claims happen in the driver before anything is submitted, exactly as for
the local engine (core.experiments.sweep). Ray retries a task that raises or whose worker or node dies once; a
job that fails twice is reported in one line while the other jobs go on.

Ray is optional (requirements-ray.txt) and imported only inside these functions.
"""

import os
import socket
from pathlib import Path

INSTALL = "pip install -r requirements-ray.txt"
GPU_SHARE = 0.25  # a tiny model leaves a GPU mostly idle: four ensembles share one
PROGRESS_EVERY = 10  # steps between a task's progress reports (one actor call each)
OBJECT_STORE_BYTES = 200 * 2**20  # `local`: a job's results are a few MB; Ray's default takes 30% of RAM


class ClusterError(RuntimeError):
    """The cluster could not be reached: one line naming the address."""


def available() -> bool:
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True


def parse_address(text: str) -> str:
    """`local`, or HOST:PORT of a running cluster's head (`ray start --head --port PORT`)."""
    host, _, port = text.rpartition(":")
    if text == "local" or (host and port.isdigit() and 0 < int(port) < 65536):
        return text
    raise ValueError(f"must be 'local' or HOST:PORT of a running Ray cluster (ray start --head), got {text!r}")


CONNECT_TIMEOUT = 10  # seconds for the head's port to answer; Ray itself keeps retrying for minutes


def probe(address: str) -> None:
    """A TCP connection to the head's port first, so an address nothing answers at is one line within seconds."""
    host, _, port = address.rpartition(":")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT).close()
    except OSError as err:
        why = "no answer" if isinstance(err, TimeoutError) else (err.strerror or type(err).__name__).lower()
        raise ClusterError(f"cannot reach the Ray cluster at {address}: {why} within {CONNECT_TIMEOUT} s") from None


def connect(address: str) -> None:
    """Start an in-process Ray instance (`local`) or join a cluster. The workers get this checkout's `core`
    package from the driver (runtime_env py_modules), so nodes need only the pinned requirements."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no usage report leaves the machine
    import ray

    if address != "local":
        probe(address)
    env = {"py_modules": [str(Path(__file__).resolve().parents[1])], "excludes": ["__pycache__"]}
    quiet = {"include_dashboard": False, "log_to_driver": False, "logging_level": "error"}
    try:
        if address == "local":
            ray.init(runtime_env=env, object_store_memory=OBJECT_STORE_BYTES, **quiet)
        else:
            ray.init(address=address, runtime_env=env, log_to_driver=False, logging_level="error")
    except ConnectionError as err:  # an OSError, but no file of the store is involved
        raise ClusterError(f"cannot reach the Ray cluster at {address}: {str(err).splitlines()[0]}") from None


class Progress:
    """A Ray actor: member-steps done per job, set (not added) by its task, so a retried task restarts its count."""

    def __init__(self):
        self.done: dict[int, int] = {}

    def set(self, index: int, member_steps: int) -> None:
        self.done[index] = member_steps

    def total(self) -> int:
        return sum(self.done.values())


def train_task(job, missing, device, progress, index):
    """What one Ray task runs: train the job's missing members in one ensemble and return the results."""
    import torch

    from .run_job import train_members

    torch.set_num_threads(1)  # one CPU declared, one used
    steps = [0]

    calls = [0]

    def on_step(n):  # n members trained one step
        steps[0] += n
        calls[0] += 1
        if calls[0] % PROGRESS_EVERY == 0:
            progress.set.remote(index, steps[0])

    results = train_members(job, missing, device, on_step)
    progress.set.remote(index, steps[0])
    return results


def run_ray(store, todo, device, command, address: str, on_step=None, train=train_task, out=None) -> list[dict]:
    """Train each (job, missing members) in `todo` (longest first) as one Ray task and store its runs here;
    returns their counts (appended to `out` as each job ends) like core.experiments.workers.run_parallel. A job
    that failed twice comes back as {"failed": ["task/attention (reason)"]}. `train` is what a task runs
    (train_task's signature)."""
    import ray

    from .run_job import store_results

    connect(address)
    try:
        has_gpus = ray.cluster_resources().get("GPU", 0) > 0
        if device == "cuda" and not has_gpus:
            raise ClusterError(f"--device cuda, but the Ray cluster at {address} has no GPU")
        gpus = has_gpus and device != "cpu"
        device = "cuda" if gpus else "cpu"
        remote = ray.remote(train).options(
            num_cpus=1, num_gpus=GPU_SHARE if gpus else 0, max_retries=1, retry_exceptions=True
        )
        progress = ray.remote(Progress).options(num_cpus=0).remote()
        refs = {remote.remote(job, missing, device, progress, i): i for i, (job, missing) in enumerate(todo)}
        return _collect(store, todo, refs, progress, command, on_step, store_results, [] if out is None else out)
    finally:
        ray.shutdown()


def _collect(store, todo, refs, progress, command, on_step, store_results, out: list) -> list[dict]:
    """Store each job's runs as it finishes, its counts into `out`; keep the progress bar moving meanwhile."""
    import ray

    pending, reported = list(refs), 0
    try:
        while pending:
            ready, pending = ray.wait(pending, num_returns=1, timeout=0.5)
            if on_step:
                now = ray.get(progress.total.remote())
                on_step(now - reported)
                reported = now
            for ref in ready:
                job = todo[refs[ref]][0]
                try:
                    results = ray.get(ref)
                except ray.exceptions.RayError as err:
                    out.append({"failed": [f"{job.label} ({_reason(err)})"]})
                    continue
                out.append(store_results(store, job, results, command))
    finally:
        for ref in pending:  # Ctrl-C or a store error: nothing more starts; finished runs are stored
            ray.cancel(ref, force=True)
    return out


def _reason(err) -> str:
    """The one line that says why a task failed: the job's own exception where it raised one."""
    cause = getattr(err, "cause", None)
    if isinstance(cause, BaseException):
        return f"{type(cause).__name__}: {cause}".splitlines()[0]
    return type(err).__name__
