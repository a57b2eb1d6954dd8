"""Where a training step's time goes: `python -m core bench --profile`.

Two views of the default model's training steps on one task. torch.profiler's operator table
(its per-call overhead inflates the many small elementwise ops), and an ablation: the step timed
with one operator replaced by the identity, so the time saved is what that operator costs inside
a real step, memory traffic included.
"""

import time
from contextlib import nullcontext
from unittest import mock

import torch
import torch.nn.functional as F

from .attention import base
from .config import ModelConfig, TaskConfig, TrainConfig
from .reference import train_plain
from .tasks import make_task
from .train import train_ensemble

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
    """torch.profiler's top operators for the default model's training steps: ensemble of 3, then plain."""
    from torch.profiler import ProfilerActivity, profile

    cfg, task_cfg, train = _default_run(steps)
    out = []
    runs = {
        "ensemble of 3": lambda: train_ensemble(cfg, task_cfg, train, [0, 1, 2], device),
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
    return mock.patch.object(where, name, stand_in)  # core.model and core.attention look these up at call time


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
