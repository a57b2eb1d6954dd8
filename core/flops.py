"""FLOPs of training and this machine's matmul peak: what utilisation is measured with.

The sweep (`python -m core sweep`) and the benchmark (`python -m core bench`) both report achieved
FLOP/s as a fraction of a float32 matmul peak measured in the same run, at the threads in use.
"""

import time

import pandas as pd
import torch
from torch.utils import benchmark
from torch.utils.flop_counter import FlopCounterMode

from .tasks import make_task
from .train import init_model, masked_ce


def matmul_peak(n: int = 1024, device="cpu", threads: int | None = None) -> float:
    """float32 FLOP/s of a large square matmul, median of repeats, at `threads` (default: those in use)."""
    a, b = torch.randn(n, n, device=device), torch.randn(n, n, device=device)
    t = benchmark.Timer("a @ b", globals={"a": a, "b": b}, num_threads=threads or torch.get_num_threads())
    return 2 * n**3 / t.blocked_autorange(min_run_time=0.5).median


def run_flops(job) -> int:
    """FLOPs of one run of a sweep job, counted by torch's FlopCounterMode: every training step
    (forward + backward of one batch) and every evaluation (forward over the eval set)."""
    task, train = make_task(job.task), job.train
    model = init_model(job.model, 0)
    x, y, m = task.sample(train.batch_size, torch.Generator().manual_seed(0))
    with FlopCounterMode(display=False) as step:
        masked_ce(model(x), y, m).backward()
    with FlopCounterMode(display=False) as evaluation, torch.no_grad():
        model(task.eval_set()[0])
    n_evals = 1 + sum(s % train.eval_every == 0 or s == train.steps for s in range(1, train.steps + 1))
    return step.get_total_flops() * train.steps + evaluation.get_total_flops() * n_evals


def measured_sweep(run, missing: dict, device, threads: int) -> tuple[dict, pd.DataFrame | None]:
    """Call run() (a sweep; it fills `missing`, {job: seeds it trains}) and measure it: wall time, and
    FLOP/s against the matmul peak at `threads` (all that the sweep uses) just before and after.
    Returns run()'s counts and a one-row table (None when nothing trained). The FLOPs assume every
    job ran all its steps: an ensemble stops early only once all its members have diverged."""
    before = matmul_peak(device=device, threads=threads)
    t0 = time.perf_counter()
    counts = run()
    seconds = time.perf_counter() - t0
    if not counts["trained"]:
        return counts, None
    peak = (before + matmul_peak(device=device, threads=threads)) / 2
    trained = {job: n for job, n in missing.items() if n}
    flop = sum(run_flops(job) * n for job, n in trained.items())
    row = {"kind": "sweep", "jobs": len(trained), "runs": counts["trained"], "steps": next(iter(trained)).train.steps,
           "threads": threads, "seconds": seconds, "runs_per_min": 60 * counts["trained"] / seconds,
           "gflop": flop / 1e9, "gflops": flop / seconds / 1e9, "peak_gflops": peak / 1e9,
           "utilisation": flop / seconds / peak}  # fmt: skip
    return counts, pd.DataFrame([row])
