"""Sweep jobs in worker processes, one per CPU core, each job still one vectorized ensemble.

Why processes: a d_model=64 training step is made of kernels too small to split well over
intra-op threads (two threads make a step about 1.2x faster than one), while two one-thread
processes train two jobs at once at nearly one-thread speed each (docs/benchmarks.md has the
figures). On CUDA one process drives the GPU, so there the sweep stays in-process.

Each worker writes its own runs (atomically, as the in-process sweep does) and streams step counts
back (in member-steps) for the progress bar. A worker whose sweep dies (killed) exits, so at most the runs
in flight are lost, and a rerun resumes. A worker that dies (killed, out of memory) breaks its pool,
and every job in flight then is lost with it: each is retried once, alone in a pool of one, so a job
that kills its worker again is known for certain and given up on (reported, not stored), while every
other job goes on. Each pool has a progress queue of its own: a worker killed while writing to one holds its
lock for good, and the next pool's workers would block on it as they exit.
"""

import ctypes
import multiprocessing as mp
import os
import queue
import signal
import threading
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from functools import partial
from multiprocessing import forkserver

_progress = None  # in a worker: the queue its step counts go to


def cpu_cores() -> int:
    """The cores PyTorch would use here (its intra-op thread count)."""
    import torch

    return torch.get_num_threads()


def threads_per_worker(workers: int) -> int:
    """Intra-op threads each process gets: the cores shared out (1 worker: all of them, in-process)."""
    return max(1, cpu_cores() // workers)


def default_workers(device=None) -> int:
    """One per core on a CPU; one on CUDA, where a single process keeps the GPU busy."""
    from ..training.device import default_device

    device = default_device() if device is None else device
    return 1 if str(device).startswith("cuda") else cpu_cores()


def keep_freed_memory() -> None:
    """glibc hands freed blocks over 128 KB back to the OS, and every training step then page-faults
    its activations in again (hundreds of faults a step, about 10% of a CPU step here). Keep them."""
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:  # not glibc: nothing to tune
        return
    libc.mallopt(-1, 1 << 30)  # M_TRIM_THRESHOLD: keep up to 1 GiB of freed heap
    libc.mallopt(-3, 32 << 20)  # M_MMAP_THRESHOLD: blocks up to 32 MiB come from the (kept) heap


def start_context():
    """forkserver where the platform has one: a server that imports torch and the training code once, and
    every worker forked from it, so a pool starts in a tenth of a second, not the seconds an interpreter
    takes to import torch. The server runs no OpenMP region, so its children start with clean thread pools,
    as spawned ones do; it keeps the environment it started with (the checkpoint interval's variable
    included), for the life of this process. spawn elsewhere: a fresh interpreter each."""
    if "forkserver" not in mp.get_all_start_methods():
        return mp.get_context("spawn")
    ctx = mp.get_context("forkserver")
    # read when the server starts (once per process); torch.optim imports torch._dynamo at its first optimizer
    ctx.set_forkserver_preload([f"{__package__}.run_job", "torch._dynamo"])
    _ready(ctx)
    return ctx


def _ready(ctx) -> None:
    """Start the server and wait until it has imported torch. Ctrl-C reaches the whole foreground group: a
    server halfway through its imports would die of it with a traceback, or, once the sweep had cancelled,
    fork the workers a pool that no longer exists asked for. So the server starts with SIGINT ignored
    (which its interpreter keeps across exec), and one empty process is forked from it before any pool asks."""
    if threading.current_thread() is threading.main_thread():  # only the main thread may set a handler
        old = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            forkserver.ensure_running()
        finally:
            signal.signal(signal.SIGINT, old)
    probe = ctx.Process(target=_nothing)
    probe.start()  # returns once the server has forked it: its imports are done
    probe.join()


def _nothing() -> None:
    pass


def _init(threads: int, progress, cancel) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group: the parent decides (cancel)
    import torch

    global _progress
    torch.set_num_threads(threads)
    keep_freed_memory()
    _progress = progress
    threading.Thread(target=_exit_with_parent, args=(cancel,), daemon=True).start()


def _exit_with_parent(cancel) -> None:
    """The sweep's end of a pipe closes when it dies, however it dies (a forked worker's parent is the
    server, so its parent pid says nothing about the sweep)."""
    parent = mp.parent_process()
    while parent.is_alive() and not cancel.wait(0.2):
        pass
    os._exit(1)  # the sweep was killed or cancelled: stop too; runs in flight are lost, finished ones are stored


def _train(store, index, job, missing, device, command, deadline=None) -> dict:
    from .run_job import train_job

    _progress.put(("start", index))
    return train_job(
        store,
        job,
        missing,
        device,
        command,
        on_step=_progress.put,
        on_stop=lambda why, left: _progress.put(("stop", why, left)),
        deadline=deadline,
    )


def run_parallel(
    store,
    todo,
    device,
    command,
    workers: int,
    on_step=None,
    train=_train,
    on_stop=None,
    out: list | None = None,
    deadline: float | None = None,
) -> list[dict]:
    """Train each (job, missing members) in `todo` on a pool of `workers` processes; returns their counts, each
    appended to `out` (when given) as its job ends, so a caller interrupted midway still has the finished ones.
    A job that a dying worker took down twice comes back as {"failed": [label]}. `train` is what a worker
    runs for one job (a module-level function, as _train); with a deadline, each job as it starts decides whether
    it can end by then (`sweep --hours`)."""
    if deadline is not None:
        train = partial(train, deadline=deadline)
    ctx = start_context()
    threads = threads_per_worker(workers)
    started: set[int] = set()
    out, left, suspects = [] if out is None else out, list(range(len(todo))), []

    def pool(indices, n):
        listener = _Listener(ctx, started, on_step, on_stop)  # one queue per pool (see _init)
        try:
            return _one_pool(store, todo, indices, device, command, ctx, n, threads, listener.queue, out, train)
        finally:
            listener.close()

    while left or suspects:
        for i in suspects:  # in flight when a worker died: retried once, alone, so the culprit is certain
            if pool([i], 1):
                out.append({"failed": [todo[i][0].label]})
        started.clear()
        left = pool(left, workers)
        suspects = [i for i in left if i in started]
        left = [i for i in left if i not in started]
    return out


class _Listener:
    """A pool's progress queue and the thread that reads it: step counts, stops, and which jobs started."""

    def __init__(self, ctx, started: set, on_step, on_stop):
        self.queue, self.started, self.on_step, self.on_stop = ctx.Queue(), started, on_step, on_stop
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self._thread.start()

    def _drain(self):
        while not self._stop.is_set() or not self.queue.empty():
            try:
                item = self.queue.get(timeout=0.1)
            except queue.Empty:
                continue
            if isinstance(item, tuple) and item[0] == "stop":
                if self.on_stop:
                    self.on_stop(item[1], item[2])
            elif isinstance(item, tuple):
                self.started.add(item[1])
            elif self.on_step:
                self.on_step(item)  # member-steps

    def close(self):
        """Read what the pool's workers sent, then stop (its workers have exited: nothing more can come)."""
        self._stop.set()
        self._thread.join()
        self.queue.close()


def _one_pool(store, todo, indices, device, command, ctx, workers, threads, progress, out, train) -> list[int]:
    """Run these jobs on one pool until done or the pool breaks; returns the indices not finished."""
    cancel = ctx.Event()
    pool = ProcessPoolExecutor(workers, ctx, initializer=_init, initargs=(threads, progress, cancel))
    try:
        futures = {pool.submit(train, store, i, *todo[i], device, command): i for i in indices}
        pending, broken = set(futures), False
        while pending and not broken:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            broken = any(isinstance(f.exception(), BrokenProcessPool) for f in done)
            out += [f.result() for f in done if not isinstance(f.exception(), BrokenProcessPool)]  # raises its own
        if not broken:
            return []
        wait(pending)  # a broken pool fails every future it still held
        out += [f.result() for f in pending if not isinstance(f.exception(), BrokenProcessPool)]
        return [i for f, i in futures.items() if isinstance(f.exception(), BrokenProcessPool)]
    except KeyboardInterrupt:  # Ctrl-C: the workers stop now, not after the jobs they hold
        cancel.set()
        raise
    finally:
        _shut(pool)


def _shut(pool: ProcessPoolExecutor) -> None:
    """No new jobs start. A Ctrl-C inside the first submit can leave the pool's manager thread made but not
    started, which shutdown cannot join: then its workers are ended here (they hold no job yet)."""
    manager = pool._executor_manager_thread
    if manager is None or manager.ident is not None:  # never made, or started: shutdown can join it
        pool.shutdown(cancel_futures=True)
        return
    for proc in list((pool._processes or {}).values()):
        proc.terminate()
        proc.join()
