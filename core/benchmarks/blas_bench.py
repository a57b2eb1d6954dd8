"""numpy's BLAS threads against one thread, in one process alone and in one per core at once, side by side.

The analyses (core.analysis.similarity) take SVDs of each layer's (H, D, D) matrices. On an idle machine
OpenBLAS's threads gain nothing at these sizes (alone, two threads ran 1.5-1.7x slower than one here); with
every core busy (here: as many processes as cores, each taking the same SVDs at once, as `baselines` beside a
sweep or two servers' visitors do; or anything else running on the machine) its threads spin against the
other work. This is why the CLI and the app's server run
numpy's BLAS on one thread (core.analysis.blas).
"""

import os
import time
from multiprocessing import get_context
from statistics import median

import pandas as pd

SHAPES = [(4, 64, 64), (4, 128, 128)]  # (H, D, D): a layer's W_QK at d_model 64 and 128


def _default_threads(out) -> None:
    """numpy's BLAS threads in a fresh process (OpenBLAS: one per core unless OPENBLAS_NUM_THREADS says)."""
    from ..analysis.blas import blas_threads

    out.put(blas_threads())


def _svd_ms(shape: tuple, threads: int, rounds: int, start, out) -> None:
    """Median ms per SVD of a random `shape` batch in this process, numpy's BLAS on `threads` threads, timed once
    every process of the round is ready (`start`, a barrier), so that they overlap."""
    import numpy as np
    import threadpoolctl

    threadpoolctl.threadpool_limits(threads, user_api="blas")
    M = np.random.default_rng(0).standard_normal(shape)
    np.linalg.svd(M, compute_uv=False)  # untimed: the first call allocates
    start.wait()
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        np.linalg.svd(M, compute_uv=False)
        times.append(time.perf_counter() - t0)
    out.put(1000 * median(times))


def _at_once(target, n: int, *args) -> list:
    """Run target(*args, [barrier,] queue) in n fresh processes at once; what each put on the queue."""
    ctx = get_context("spawn")  # fresh numpy in each: its BLAS at its default threads until told otherwise
    out = ctx.Queue()
    extra = (ctx.Barrier(n),) if args else ()
    procs = [ctx.Process(target=target, args=(*args, *extra, out)) for _ in range(n)]
    for proc in procs:
        proc.start()
    got = [out.get(timeout=600) for _ in procs]
    for proc in procs:
        proc.join()
    return got


def blas_bench(rounds: int = 3, shapes=SHAPES, log=print) -> pd.DataFrame:
    """Per shape, processes at once (one; one per core) and numpy's BLAS threads (its default; one): ms per SVD
    (the median over the processes' medians) and its ratio to one thread with as many processes."""
    cores = len(os.sched_getaffinity(0))  # the cores this process may run on
    default = _at_once(_default_threads, 1)[0]  # asked of a fresh process: this one may be limited
    rows = []
    for shape in shapes:
        for n in sorted({1, cores}):
            ms = {
                label: median(_at_once(_svd_ms, n, shape, threads, rounds))
                for label, threads in (("default", default), ("one", 1))
            }
            for label in ms:
                rows.append(
                    {
                        "kind": "blas",
                        "shape": "x".join(map(str, shape)),
                        "processes": n,
                        "blas_threads": default if label == "default" else 1,
                        "ms_per_svd": ms[label],
                        "vs_one_thread": ms[label] / ms["one"],
                    }
                )
            log(f"blas, {shape}, {n} at once: {ms['default']:.1f} ms at {default} threads, {ms['one']:.1f} at one")
    return pd.DataFrame(rows)
