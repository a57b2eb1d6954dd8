"""`python -m core bench --quick` runs and writes well-formed results (no timing is asserted)."""

import os
import sys

import pytest
import torch

from core.attention.registry import ATTENTION
from core.benchmarks.layer_bench import REFERENCE
from core.cli import main
from core.results import store as st


def test_quick_bench_writes_well_formed_results(tmp_path, capsys):
    threads, main_module = torch.get_num_threads(), sys.modules["__main__"]
    assert main(["bench", "--quick", "--store", str(tmp_path), "--workers", "2"]) == 0
    assert "relative to nn.MultiheadAttention" in capsys.readouterr().out
    df = st.load_named(tmp_path, "bench")
    att = df[df.kind == "attention"]
    assert set(att.attention) == {*ATTENTION, "sdpa", REFERENCE}
    assert (att.ms > 0).all() and (att.peak_mb > 0).all()
    assert (att[att.attention == REFERENCE].ratio == 1.0).all()
    assert ((att.ratio_q25 <= att.ratio) & (att.ratio <= att.ratio_q75)).all()  # paired per-round quartiles
    tr = df[df.kind == "training"].set_index("engine")
    assert list(tr.index) == ["plain loop", "seed ensembles, one per lr", "seeds x lrs ensembles"]
    assert (tr.runs == 8).all() and (tr.attentions == 2).all() and (tr.lrs == 2).all() and (tr.seeds == 2).all()
    assert list(tr.jobs) == [2, 4, 2]  # one job per (configuration, lr), or one per configuration
    assert tr.speedup["plain loop"] == 1.0 and tr.max_loss_diff["plain loop"] == 0.0
    assert (tr.max_loss_diff < 1e-4).all()  # every engine reproduces the plain loop's test losses, at every lr
    assert (tr.speedup > 0).all() and (tr.utilisation > 0).all() and (tr.gflops <= tr.peak_gflops * 2).all()
    assert list(tr.rounds) == [2, 2, 2]  # every engine in every round, the order rotating
    assert ((tr.speedup_min <= tr.speedup) & (tr.speedup <= tr.speedup_max)).all()
    assert tr.speedup_min["plain loop"] == tr.speedup_max["plain loop"] == 1.0
    assert list(tr.workers) == [1, 2, 2]
    assert st.read_meta(tmp_path / "bench" / "attention.parquet")["quick"] is True
    sb = st.load_table(tmp_path, "bench", "store").set_index("what")
    assert (sb.runs == 200).all() and (sb.seconds > 0).all()  # quick: a 200-run synthetic store
    assert sb.target_seconds.dropna().tolist() == [2.0, 1.0, 0.5, 3.0, 2.0, 1.0, 0.5]  # targets beside each figure
    packed = sb.index.str.contains("packed")
    assert packed.sum() == 3 and sb.disk_bytes[packed].max() < sb.disk_bytes[~packed].min() / 3  # the same runs
    pr = st.load_table(tmp_path, "bench", "precision").set_index("engine")
    assert list(pr.index) == ["fp32", "bf16"] and list(pr.precision) == ["fp32", "bf16"]  # quick: no compile
    assert pr.speedup_vs_fp32["fp32"] == 1.0 and (pr.runs_per_min > 0).all() and (pr.utilisation > 0).all()
    assert pr.peak_gflops["bf16"] != pr.peak_gflops["fp32"]  # each precision against its own measured peak
    meta = st.read_meta(tmp_path / "bench" / "precision.parquet")
    assert meta["cpu"] and "flags" not in meta["cpu_flags"] and meta["cpu_flags"] == pr.cpu_flags.iloc[0]
    assert torch.get_num_threads() == threads  # the one-thread engine gives the threads back
    assert sys.modules["__main__"] is main_module  # else the BLAS bench's spawned processes each ran the app
    bb = st.load_table(tmp_path, "bench", "blas")  # quick: one shape, one process alone, then one per core at once
    assert list(bb.processes) == [n for n in sorted({1, len(os.sched_getaffinity(0))}) for _ in ("default", "one")]
    assert (bb.ms_per_svd > 0).all() and list(bb.vs_one_thread[1::2]) == [1.0] * (len(bb) // 2)


def test_cpu_attention_flops_are_counted():
    """torch's FlopCounterMode leaves the CPU flash kernel out; core.experiments.flops counts it as torch counts
    CUDA's."""
    from core.attention.base import SHORT_SEQ
    from core.benchmarks.layer_bench import layer, layer_flops

    B, T, D, H = 2, SHORT_SEQ + 36, 32, 4
    x = torch.randn(B, T, D, requires_grad=True)
    scores = 2 * B * H * T * T * (D // H)  # one T x T product over all heads
    assert layer_flops(layer("identity", D, H), x) == 7 * scores  # 2 forward, 5 backward (with recomputation)
    short = torch.randn(B, 8, D, requires_grad=True)
    assert layer_flops(layer("identity", D, H), short) == 6 * 2 * B * H * 8 * 8 * (D // H)  # as batched matmuls


def test_ablation_times_the_step_with_each_operator_made_free_and_restores_it():
    import torch.nn.functional as F

    from core.benchmarks.profile import ABLATIONS, _identity, ablate_step

    originals = {name: getattr(where, name) for where, name, _ in ABLATIONS.values()}
    x = torch.randn(2, 3)
    with _identity(*ABLATIONS["GELU"]):
        assert F.gelu(x) is x  # free: the step runs without it
    out = ablate_step("cpu", steps=4, rounds=1)
    lines = out.splitlines()
    assert "ms per step" in lines[0] and len(lines) == 1 + len(ABLATIONS)
    assert [line.split(":")[0].strip() for line in lines[1:]] == list(ABLATIONS)
    assert {name: getattr(where, name) for where, name, _ in ABLATIONS.values()} == originals  # every operator is back
    assert not torch.equal(F.gelu(x), x)


def test_ensemble_scaling_prints_one_line_per_size_with_its_per_member_share():
    from core.benchmarks.profile import ensemble_scaling

    lines = ensemble_scaling("cpu", sizes=(1, 3), steps=13).splitlines()
    assert "ms per member-step" in lines[0] and len(lines) == 3
    for line, E in zip(lines[1:], (1, 3)):
        step, member = (float(part.split(" ms")[0].split()[-1]) for part in line.split(",")[:2])
        assert line.startswith(f"{E:>4} members") and member == pytest.approx(step / E, abs=0.06)


def test_the_criterion_bench_counts_each_runs_own_steps_side_by_side():
    from core.benchmarks.criterion_bench import criterion_bench

    table = criterion_bench(
        ["standard"],
        "reverse",
        2,
        [1e-2],
        30,
        200,
        10,
        "cpu",
        1,
        log=lambda _: 0,
        utilisation=False,
        model={"d_model": 16, "n_heads": 2},
        task_size={"n_symbols": 6, "length": 4},
    )
    fixed, crit = table.set_index("protocol").loc["fixed"], table.set_index("protocol").loc["criterion"]
    assert fixed.member_steps == 2 * 30 and fixed.stopped_early == 0 and fixed.member_steps_ratio == 1
    assert crit.member_steps <= 2 * 200 and crit.member_steps_ratio == crit.member_steps / fixed.member_steps
    assert crit.stopped_early == (crit.solved + crit.pruned) / crit.runs


def test_the_schedule_replay_puts_the_longest_measured_job_first_and_reads_the_order_from_other_sweeps():
    import pandas as pd

    from core.benchmarks.schedule import MODEL, makespan, replay
    from core.experiments import sweep
    from core.training.config import TrainConfig

    assert makespan([1, 1, 10], 2) == 11 and makespan([10, 1, 1], 2) == 10 and makespan([], 3) == 0
    crit = TrainConfig(steps=100, until="solved", schedule="constant")
    jobs = sweep.plan(["identity", "standard", "stacked"], ["associative_recall"], 1, crit)
    seconds = {"identity": 10.0, "standard": 1.0, "stacked": 1.0}  # identity: least work a step, longest to train
    cmd = "python -m core sweep --until solved --workers 2"

    def rows(command, steps_from=0, done=None):
        return [
            {**{k: j.model.to_dict()[k] for k in MODEL}, "task": "associative_recall", "until": "solved",
             "steps": 100, "batch_size": crit.batch_size, "train_seconds": seconds[j.model.attention],
             "steps_done": (done or {}).get(j.model.attention, 100), "steps_from": steps_from, "command": command}
            for j in jobs
        ]  # fmt: skip

    other = rows("python -m core sweep --earlier", done={"standard": 10, "stacked": 10})
    table = replay(pd.DataFrame(rows(cmd) + other + rows(cmd + " --steps 200", steps_from=100)))
    row = table.set_index("command").loc[cmd]  # the extension (steps_from 100) and the 1-worker sweep are not
    assert len(table) == 1 and row.jobs == 3 and row.workers == 2
    assert row.flops == 11 and row.best == row.history == row.bound == 10 and row.flops_vs_best == 1.1
    alone = replay(pd.DataFrame(rows(cmd))).set_index("command").loc[cmd]
    assert alone.history == alone.flops == 11  # no other sweep to learn from: the FLOPs order
