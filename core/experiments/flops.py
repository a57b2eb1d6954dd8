"""FLOPs of training and this machine's matmul peak: what utilisation is measured with.

The sweep (`python -m core sweep`) and the benchmark (`python -m core bench`) both report achieved
FLOP/s as a fraction of a float32 matmul peak measured in the same run, at the threads in use.
"""

import time
from functools import partial

import pandas as pd
import torch
from torch.utils import benchmark, flop_counter
from torch.utils.flop_counter import FlopCounterMode

from ..training.tasks import make_task
from ..training.train import init_model, masked_ce


def _count_cpu_flash_attention() -> None:
    """FlopCounterMode counts SDPA's CUDA kernels but, in torch 2.13, not the CPU flash kernel, so on
    a CPU every long-sequence attention layer counted as zero FLOPs. Give the CPU kernel the formulas
    torch uses for the CUDA ones: full T x T scores (the causal mask is not discounted, as on CUDA and
    in the usual model-FLOPs convention); the backward counts the scores' recomputation."""
    aten, count = torch.ops.aten, flop_counter
    formulas = {  # called with the arguments' shapes
        aten._scaled_dot_product_flash_attention_for_cpu: lambda q, k, v, *_, **__: count.sdpa_flop_count(q, k, v),
        aten._scaled_dot_product_flash_attention_for_cpu_backward: (
            lambda grad, q, k, v, *_, **__: count.sdpa_backward_flop_count(grad, q, k, v)
        ),
    }
    for op, formula in formulas.items():
        if op not in flop_counter.flop_registry:  # a later torch may count it itself
            flop_counter.register_flop_formula(op)(formula)


_count_cpu_flash_attention()


PEAK_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def matmul_peak(
    n: int = 1024, device="cpu", threads: int | None = None, precision: str = "fp32", seconds: float = 0.5
) -> float:
    """FLOP/s of a large square matmul in `precision` (fp32 or bf16), median of the repeats that fill `seconds`,
    at `threads` (default: those in use)."""
    dtype = PEAK_DTYPES[precision]
    a, b = (torch.randn(n, n, device=device, dtype=dtype) for _ in range(2))
    t = benchmark.Timer("a @ b", globals={"a": a, "b": b}, num_threads=threads or torch.get_num_threads())
    return 2 * n**3 / t.blocked_autorange(min_run_time=seconds).median


def job_flops(job) -> tuple[int, int]:
    """FLOPs of one run of a sweep job, counted by torch's FlopCounterMode: (all its training steps,
    forward + backward of one batch each; all its evaluations, a forward over both held-out sets each)."""
    task, train = make_task(job.task), job.train
    model = init_model(job.model, 0)
    # counted on one sequence and scaled: every counted op (a matmul) is linear in the batch, and one sequence
    # is what lets the Train page price a request before it starts
    x, y, m = task.sample(1, torch.Generator().manual_seed(0))
    with FlopCounterMode(display=False) as step:
        masked_ce(model(x), y, m).backward()
    with FlopCounterMode(display=False) as evaluation, torch.no_grad():
        model(x)
    held_out = 2 * task.cfg.eval_size  # validation and test
    n_evals = 1 + sum(s % train.eval_every == 0 or s == train.steps for s in range(1, train.steps + 1))
    return (step.get_total_flops() * train.batch_size * train.steps, evaluation.get_total_flops() * held_out * n_evals)


def run_flops(job) -> int:
    """FLOPs of one run of a sweep job: every training step and every evaluation."""
    return sum(job_flops(job))


def measured_sweep(
    run, missing: dict, device, threads: int, precision: str = "fp32", runs=None
) -> tuple[dict, pd.DataFrame | None]:
    """Call run() (a sweep in `precision`; it fills `missing`, {job: seeds it trains}) and measure it: wall time,
    and FLOP/s against the matmul peak in that precision at `threads` (all that the sweep uses) just before and
    after.
    `runs()` gives the store's runs table, read after: the FLOPs count the steps this sweep took of the runs it
    stored (counts["stored"], never another sweep's, which may train members of the same jobs at once), from
    `steps_from`, where it took a run up, to `steps_done`, where the run stopped; so a run carried over or
    extended from a shorter cap, or resumed from a checkpoint, counts only its new steps. From the time each
    ensemble spent in its training steps (`step_seconds`, on its `threads`), the training steps' own
    utilisation of the per-thread peak, evaluations, start-up and waiting excluded.
    Without `runs`, every trained run counts all its steps.
    A cancelled sweep (counts["cancelled"]) is recorded too, once any job had members to train: its wall time is
    compute spent, but the steps of the jobs in flight (kept in their checkpoints, taken up by the rerun, which
    counts only its own) stored no run, so its FLOPs are those of the runs it stored, a floor, and its
    utilisation is not known (NaN).
    Returns run()'s counts and a one-row table (None when nothing trained)."""
    # a bracket of 0.2 s is ten or more repeats here: their median moves less than the machine does during a sweep,
    # and a short sweep (the Train page's, a rerun with little left) does not spend most of its time measuring
    measure = partial(matmul_peak, device=device, threads=threads, precision=precision, seconds=0.2)
    before = measure()
    t0 = time.perf_counter()
    counts = run()
    seconds = time.perf_counter() - t0
    cancelled = bool(counts.get("cancelled")) and any(missing.values())
    if not counts["trained"] and not cancelled:
        return counts, None
    peak = (before + measure()) / 2
    trained = {job: n for job, n in missing.items() if n}
    new = None
    if runs is not None:  # the runs this sweep stored, each with the steps it took of them
        new = runs()[lambda t: t.run_id.isin(set(counts.get("stored", ())))]
        new = new.assign(taken=(new.steps_done - new.steps_from).clip(lower=0))
    share = _new_steps(new, trained) if new is not None else trained  # {job: runs' worth of new steps}
    share = {job: v for job, v in share.items() if v > 0}  # a job whose worker died twice stored nothing
    if not share and not cancelled:
        return counts, None
    parts = {job: job_flops(job) for job in share}  # (steps, evaluations) of one run, had it run every step
    flop = sum((parts[job][0] + parts[job][1]) * v for job, v in share.items())
    known = float("nan") if cancelled else 1.0  # a cancelled part's FLOPs leave out its jobs in flight
    row = {
        "kind": "sweep",
        "precision": precision,
        "jobs": len(share),
        "runs": counts["trained"],
        "carried": counts.get("carried", 0),  # stored again from a shorter cap, not trained: no FLOPs counted
        "steps": next(iter(share or trained)).train.steps,
        "threads": threads,
        "seconds": seconds,
        "runs_per_min": 60 * counts["trained"] / seconds,
        "gflop": flop / 1e9,
        "gflops": known * flop / seconds / 1e9,
        "peak_gflops": peak / 1e9,
        "utilisation": known * flop / seconds / peak,
        "cancelled": cancelled,
    }
    if new is not None:
        member_step_flop = {job: parts[job][0] / job.train.steps for job in share}
        row["step_utilisation"] = (
            _step_utilisation(new[new.taken > 0], member_step_flop, peak / threads) if share else float("nan")
        )
    return counts, pd.DataFrame([row])


def _new_steps(new: pd.DataFrame, trained: dict) -> dict:
    """Per job, the steps this sweep took (`taken`) of the runs it stored, in runs of the job's whole cap: a member
    stops early when it diverges, solves its task or trains at an lr that can no longer be chosen
    (core.training.criterion), and one taken up at a later step took the steps before it elsewhere."""
    taken = dict(zip(new.run_id, new.taken))
    return {job: sum(taken.get(rid, 0) for rid in job.run_ids().values()) / job.train.steps for job in trained}


def _step_utilisation(runs: pd.DataFrame, member_step_flop: dict, peak_per_thread: float) -> float:
    """Training steps' FLOPs over the thread-seconds they took, as a fraction of one thread's share of the peak.
    Both are read off each ensemble's own clock (the runs one ensemble trained share it): its step time, and the
    member-steps it took in that time (step_seconds / seconds_per_member_step), each of a job's FLOPs per
    member-step. A clock a checkpoint carried holds the steps before it too, so the steps this sweep took
    would not match it."""
    flop = thread_seconds = 0.0
    for job, per_member_step in member_step_flop.items():
        mine = runs[runs.run_id.isin(set(job.run_ids().values()))]
        ensembles = mine.drop_duplicates(["step_seconds", "threads", "train_seconds"])
        flop += per_member_step * (ensembles.step_seconds / ensembles.seconds_per_member_step).sum()
        thread_seconds += (ensembles.step_seconds * ensembles.threads).sum()
    return flop / thread_seconds / peak_per_thread
