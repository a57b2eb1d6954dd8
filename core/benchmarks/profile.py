"""Where a training step's time goes: `python -m core bench --profile`.

Two views of the default model's training steps on one task. torch.profiler's operator table
(its per-call overhead inflates the many small elementwise ops), and an ablation: the step timed
with one operator replaced by the identity, so the time saved is what that operator costs inside
a real step, memory traffic included.
"""

import time
from contextlib import nullcontext
from dataclasses import replace
from unittest import mock

import torch
import torch.nn.functional as F

from ..attention import base
from ..training.config import ModelConfig, TaskConfig, TrainConfig
from ..training.reference import train_plain
from ..training.tasks import make_task
from ..training.train import train_ensemble

# operator -> (where it is looked up, its name, the identity that stands in for it): shapes are
# kept, so the step still runs. The default model's sequences are short, so on a CPU its attention is
# short_attention (on CUDA it is SDPA, and this entry would measure nothing).
ABLATIONS = {
    "GELU": (F, "gelu", lambda x, approximate="none": x),
    "attention": (base, "short_attention", lambda q, k, v, scale, causal: base._repeat_heads(v, q.shape[1])),
    "LayerNorm": (F, "layer_norm", lambda x, *args, **kw: x),
}


def _default_run(steps: int, attention: str = "standard"):
    task_cfg = TaskConfig("associative_recall")
    t = make_task(task_cfg)
    cfg = ModelConfig(attention=attention, vocab_size=t.vocab_size, max_len=t.seq_len)
    return cfg, task_cfg, TrainConfig(steps=steps, eval_every=10_000)  # steps only: no evaluation


def profile_training(device, steps: int = 30, rows: int = 12) -> str:
    """torch.profiler's top operators for the default model's training steps: ensemble of 3 (fp32, then under
    bf16 autocast: where a bf16 step's time goes), then the plain loop."""
    from torch.profiler import ProfilerActivity, profile

    cfg, task_cfg, train = _default_run(steps)
    bf16 = replace(train, precision="bf16")
    out = []
    runs = {
        "ensemble of 3": lambda: train_ensemble(cfg, task_cfg, train, [0, 1, 2], device),
        "ensemble of 3, bf16": lambda: train_ensemble(cfg, task_cfg, bf16, [0, 1, 2], device),
        "plain loop, 3 runs": lambda: [train_plain(cfg, task_cfg, train, s, device) for s in range(3)],
    }
    for label, fn in runs.items():
        fn()  # warm-up
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            fn()
        table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=rows, max_name_column_width=40)
        out.append(f"== {label}, {steps} steps, {torch.get_num_threads()} threads ==\n{table}")
    return "\n".join(out)


def _identity(where, name: str, stand_in):
    return mock.patch.object(where, name, stand_in)  # core.training.model and core.attention look these up at call time


def _step_ms(cfg, task_cfg, train, device) -> float:
    """ms per training step of an ensemble of 3 seeds, between the first step and the last (no set-up, no eval)."""
    stamps = []
    train_ensemble(cfg, task_cfg, train, [0, 1, 2], device, on_step=lambda s: stamps.append(time.perf_counter()))
    return (stamps[-1] - stamps[0]) / (len(stamps) - 1) * 1e3


def ablate_step(device, steps: int = 60, rounds: int = 3, attention: str = "standard") -> str:
    """A training step timed whole and with each of ABLATIONS made free; rounds alternate the
    variants so the machine's drift hits all alike, and each keeps its fastest round."""
    cfg, task_cfg, train = _default_run(steps, attention)
    variants = {"whole step": None, **ABLATIONS}
    best = dict.fromkeys(variants, float("inf"))
    _step_ms(cfg, task_cfg, train, device)  # warm-up
    for _ in range(rounds):
        for label, patch in variants.items():
            with _identity(*patch) if patch else nullcontext():
                best[label] = min(best[label], _step_ms(cfg, task_cfg, train, device))
    whole = best.pop("whole step")
    head = f"== ablation: {attention}, ensemble of 3, {torch.get_num_threads()} threads: {whole:.1f} ms per step =="
    return "\n".join([head] + [f"{k:>18}: {whole - ms:4.1f} ms ({(whole - ms) / whole:.0%})" for k, ms in best.items()])


def _stamp(stamps: list[float]):
    return lambda step: stamps.append(time.perf_counter())


def compile_check(device, steps: int = 60, task: str = "associative_recall", n_seeds: int = 5) -> str:
    """Does torch.compile pay for one job of the bundled grid (standard, `task`, 4 lrs x n_seeds members)?
    The same job trained eager and compiled, with a cold inductor cache (a fresh directory, as a new
    machine has): the compiled run's first step holds its compile time; steady ms/step is the median
    step after the 20th. Returns the lines `bench --profile` prints."""
    import os
    import statistics
    import tempfile

    from ..training.config import LR_GRID

    t = make_task(TaskConfig(task))
    cfg = ModelConfig(vocab_size=t.vocab_size, max_len=t.seq_len)
    seeds, lrs = list(range(n_seeds)) * len(LR_GRID), [lr for lr in LR_GRID for _ in range(n_seeds)]
    train = TrainConfig(steps=steps, eval_every=steps)
    out, losses = [], []
    with tempfile.TemporaryDirectory() as cache, mock.patch.dict(os.environ, {"TORCHINDUCTOR_CACHE_DIR": cache}):
        for compiled in (False, True):
            stamps: list[float] = []
            t0 = time.perf_counter()
            results = train_ensemble(
                cfg, TaskConfig(task), train, seeds, device, _stamp(stamps), lrs=lrs, compile=compiled
            )
            gaps = [b - a for a, b in zip(stamps[20:], stamps[21:])]
            out.append((stamps[0] - t0, 1000 * statistics.median(gaps)))
            losses.append([r.final["test_loss"] for r in results])
    (first_e, step_e), (first_c, step_c) = out
    gap = max(abs(a - b) for a, b in zip(*losses))
    compile_s = first_c - first_e
    breakeven = compile_s / max(1e-9, (step_e - step_c) / 1000)
    return (
        f"torch.compile, one job (standard, {task}, {len(seeds)} members, {torch.get_num_threads()} threads): eager "
        f"{step_e:.0f} ms/step, compiled {step_c:.0f} ms/step ({step_e / step_c:.2f}x); compiling cost "
        f"{compile_s:.0f} s cold, so it pays after {breakeven:.0f} steps of this job; test-loss gap {gap:.1e}"
    )


def ensemble_scaling(device, sizes=(1, 2, 4, 8, 20, 40), steps: int = 40) -> str:
    """ms per member-step of the default model (standard, associative recall, one lr) for ensembles of
    each size: whether a job's members would train faster split into smaller ensembles. Median step after
    the 10th. Returns the lines `bench --profile` prints."""
    import statistics

    cfg, task_cfg, train = _default_run(steps)
    lines = [f"== ensemble size: ms per member-step, {torch.get_num_threads()} threads =="]
    train_ensemble(cfg, task_cfg, replace(train, steps=12), [0], device)  # warm-up: the first size pays no set-up
    for E in sizes:
        stamps: list[float] = []
        train_ensemble(cfg, task_cfg, train, list(range(E)), device, _stamp(stamps))
        ms = 1000 * statistics.median(b - a for a, b in zip(stamps[10:], stamps[11:]))
        lines.append(f"{E:>4} members: {ms:7.1f} ms/step, {ms / E:5.1f} ms per member-step")
    return "\n".join(lines)
