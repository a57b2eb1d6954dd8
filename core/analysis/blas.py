"""numpy's BLAS on one thread, in the processes this project owns: the CLI and the app's server.

The analyses take SVDs and products of many small (H, D, D) matrices, which OpenBLAS's threads do not speed up
even on an idle machine; on a busy one (`baselines` beside a sweep, the server beside a Train child or another
server) those threads spin against the other process's and an SVD stalls for seconds. `python -m core bench`
measures both, side by side (core.benchmarks.blas_bench). torch keeps its own threads: this touches numpy's
BLAS only.
"""

import numpy as np  # noqa: F401 - loads numpy's OpenBLAS, which threadpoolctl finds among the loaded libraries
import threadpoolctl

_limited = False


def one_blas_thread() -> None:
    """Limit numpy's BLAS to one thread for the rest of this process (idempotent and cheap after the first)."""
    global _limited
    if not _limited:
        threadpoolctl.threadpool_limits(1, user_api="blas")
        _limited = True


def blas_threads() -> int:
    """The threads numpy's BLAS runs on now, in this process."""
    return max(i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas")
