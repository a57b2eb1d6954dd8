"""bf16 against fp32: the matmul peak in both precisions and the seeds x lrs engine in fp32, bf16 and
bf16 + torch.compile (compile time included), in paired rounds, with the CPU it ran on."""

import time
from dataclasses import replace
from statistics import median

import pandas as pd
import torch

from ..experiments.flops import matmul_peak, run_flops
from ..experiments.sweep import plan
from ..training.config import LR_GRID, TrainConfig
from ..training.device import bf16_matmul_native, cpu_info
from ..training.train import train_ensemble

# label: (precision, torch.compile)
ENGINES = {"fp32": ("fp32", False), "bf16": ("bf16", False), "bf16 + compile": ("bf16", True)}
CPU_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile")  # what decides bf16's speed on a CPU


def cpu_record() -> dict:
    """The CPU's model name and the flags that decide bf16's speed (for the bench record)."""
    info = cpu_info()
    flags = " ".join(f for f in CPU_FLAGS if f in info["flags"]) or "none of " + ",".join(CPU_FLAGS)
    return {"cpu": info["model"], "cpu_flags": flags}


def precision_bench(
    device,
    steps: int = 30,
    rounds: int = 3,
    seeds: int = 5,
    compile: bool = True,
    eval_size: int | None = None,
    log=print,
) -> pd.DataFrame:
    """One associative-recall `standard` job (seeds x the lr grid, one ensemble) per engine, `rounds` rounds with
    the order rotating; ratio: the median over rounds of fp32's seconds over the engine's in the same round.
    compile=False leaves out bf16 + torch.compile (its compile alone takes minutes); eval_size shrinks the held-out
    sets the job evaluates at its first and last step (on a CPU without bf16 units those dominate a short job)."""
    engines = {k: v for k, v in ENGINES.items() if compile or not v[1]}
    held_out = {"eval_size": eval_size} if eval_size else None
    short = TrainConfig(steps=steps, eval_every=steps)
    job = plan(["standard"], ["associative_recall"], seeds, short, lrs=LR_GRID, task_overrides=held_out)[0]
    members = [s for _, s in job.members]
    lrs = [lr for lr, _ in job.members]
    flops = run_flops(job) * len(members)  # forward/backward FLOPs do not depend on the dtype
    peaks = {p: matmul_peak(device=device, precision=p) for p in ("fp32", "bf16")}
    secs = {label: [] for label in engines}
    labels = list(engines)
    for r in range(rounds):
        for label in labels[r % len(labels) :] + labels[: r % len(labels)]:
            precision, compiled = engines[label]
            train = replace(job.train, precision=precision)
            t0 = time.perf_counter()
            train_ensemble(job.model, job.task, train, members, device, lrs=lrs, compile=compiled)
            secs[label].append(time.perf_counter() - t0)
            log(f"precision, round {r + 1}/{rounds}, {label}: {60 * len(members) / secs[label][-1]:.1f} runs/min")
    rows = []
    for label, (precision, compiled) in engines.items():
        ratio = [f / s for f, s in zip(secs["fp32"], secs[label])]
        sec = median(secs[label])
        rows.append(
            {
                "kind": "precision",
                "engine": label,
                "precision": precision,
                "compile": compiled,
                "members": len(members),
                "steps": steps,
                "rounds": rounds,
                "threads": torch.get_num_threads(),
                "seconds": sec,
                "runs_per_min": 60 * len(members) / sec,
                "speedup_vs_fp32": median(ratio),
                "speedup_min": min(ratio),
                "speedup_max": max(ratio),
                "gflops": flops / sec / 1e9,
                "peak_gflops": peaks[precision] / 1e9,
                "utilisation": flops / sec / peaks[precision],
                "bf16_native": bf16_matmul_native(device),
                **cpu_record(),
            }
        )
    return pd.DataFrame(rows)
