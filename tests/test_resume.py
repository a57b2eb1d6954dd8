"""A sweep to the criterion survives a kill and extends to a larger cap; member states save and load across
optimizer gaps, parameter layouts and devices."""

import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import replace
from functools import partial
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

import pytest
import torch
from tiny import REVERSE_MODEL as MODEL
from tiny import REVERSE_TASK, SOLVED, close, criterion_argv, criterion_sweep, curves

from core.results import store as st
from core.training import train as train_mod
from core.training.config import TrainConfig
from core.training.tasks import make_task

ROOT = Path(__file__).resolve().parents[1]
T = make_task(REVERSE_TASK)


def _sweep(store: Path, steps: int, env=None, wait=True, lrs="1e-3,1e-2"):
    """The sweep command in a fresh process (one a test can kill, with `env`)."""
    cmd = [sys.executable, "-m", "core", *criterion_argv(store, steps, lrs)]
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env={**os.environ, **(env or {})}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    if wait:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    return proc


def test_a_sweep_killed_at_a_random_moment_resumes_bit_identical(tmp_path):
    steps = 400  # long enough that the kill lands mid-training on a fast idle machine too
    _sweep(tmp_path / "straight", steps)
    killed = _sweep(tmp_path / "killed", steps, {"ATTENTION_LAB_CHECKPOINT_SECONDS": "0"}, wait=False)
    checkpoints = tmp_path / "killed" / "scratch" / "checkpoints"
    deadline = time.monotonic() + 120
    while not (checkpoints.is_dir() and any(checkpoints.glob("*.pt"))) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(random.Random().uniform(0.0, 0.3))
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    assert not (tmp_path / "killed" / "runs").is_dir() or len(list((tmp_path / "killed" / "runs").iterdir())) < 4
    _sweep(tmp_path / "killed", steps)
    assert curves(tmp_path / "killed") == curves(tmp_path / "straight")
    killed = st.load_runs(tmp_path / "killed")
    assert (killed.steps_from > 0).any()  # taken up from a checkpoint, on the clock it carried from step 0
    _assert_member_step_time(killed, start=0)
    _assert_step_utilisation(tmp_path / "killed", steps, killed)
    assert not any(checkpoints.glob("*.pt"))  # removed once the training ended


def _assert_step_utilisation(store: Path, steps: int, runs) -> None:
    """The rerun's record (the killed process wrote none) reads its steps' utilisation off the ensemble's clock:
    every member-step since step 0, not only the ones the rerun took."""
    from core.experiments.flops import job_flops

    (rec,) = st.load_named(store, "bench").itertuples()
    job, _ = _outlook(store, steps)
    (clock,) = runs.drop_duplicates(["train_seconds", "step_seconds"]).itertuples()  # one job: one ensemble
    flop = job_flops(job)[0] / steps * runs.steps_done.sum()
    per_thread_peak = rec.peak_gflops * 1e9 / rec.threads
    assert rec.step_utilisation == pytest.approx(flop / (clock.step_seconds * clock.threads) / per_thread_peak)


def test_a_larger_cap_extends_the_stored_runs_as_a_straight_run_would_train_them(extension):
    a, b = extension
    extended = {k: v for k, v in curves(a).items() if k[2] == 150}
    straight = curves(b)
    assert extended.keys() == straight.keys()
    for key, (stop, solve, rows) in straight.items():
        e_stop, e_solve, e_rows = extended[key]
        assert (e_stop, e_solve) == (stop, solve)
        assert [r[:2] for r in e_rows] == [r[:2] for r in rows]
        assert close([r[2] for r in e_rows], [r[2] for r in rows])


def test_an_extension_records_and_counts_only_the_steps_it_took(extension, tmp_path, monkeypatch):
    """A run taken up at the old cap records where; one stopped before it is carried over, not trained; the
    extension's sweep record counts the FLOPs of its new steps only, and none when it took none."""
    a, _ = extension
    runs = st.load_runs(a)
    short, ext = runs[runs.steps == 60].set_index(["lr", "seed"]), runs[runs.steps == 150]
    assert (short.steps_from == 0).all()
    for r in ext.itertuples():
        censored = short.loc[(r.lr, r.seed)].stop == "cap"
        assert r.steps_from == (60 if censored else r.steps_done)
    assert (ext.steps_done == ext.steps_from).all()  # solved by 60 (carried) or ruled out at 60 (taken up, stopped)
    assert list(st.load_named(a, "bench").steps) == [60]  # so the extension took no step and left no record
    lrs = "1e-3,3e-3"  # neither solves by 60: both go on
    slow = SimpleNamespace(perf_counter=lambda: 1000 * time.perf_counter())  # the shorter cap's clock, made long
    for store, caps in ((tmp_path / "c", (60, 150)), (tmp_path / "d", (150,))):
        for cap in caps:
            with monkeypatch.context() as m:
                if cap == 60:
                    m.setattr(train_mod, "time", slow)
                criterion_sweep(store, cap, lrs=lrs)
    runs = st.load_runs(tmp_path / "c")
    ext = runs[runs.steps == 150]
    assert (runs[runs.steps == 60].stop == "cap").all() and (ext.steps_from == 60).all()
    records = st.load_named(tmp_path / "c", "bench").sort_values("steps")
    (straight,) = st.load_named(tmp_path / "d", "bench").itertuples()
    new_steps, all_steps = (ext.steps_done - 60).sum(), st.load_runs(tmp_path / "d").steps_done.sum()
    assert 0 < new_steps < all_steps and list(records.steps) == [60, 150]
    assert (records.runs.iloc[1], records.carried.iloc[1]) == (4, 0)
    assert records.gflop.iloc[1] == pytest.approx(straight.gflop * new_steps / all_steps)
    _assert_member_step_time(ext, start=60)  # an extension's clock starts afresh where it took its runs up
    wall = st.load_metrics(tmp_path / "c", list(ext.run_id), ["wall_time"]).sort_values(["run_id", "step"])
    gaps = wall.groupby("run_id").value.diff().dropna()
    assert (gaps > 0).all() and (wall.step > 60).any()  # its wall_time curve goes on from the shorter cap's
    _assert_member_step_time(st.load_runs(tmp_path / "d"), start=0)


def _assert_member_step_time(runs, start: int) -> None:
    """Each ensemble's runs (one clock: train_seconds and step_seconds) give its training-step time over the
    member-steps it took since `start`, however early each member stopped."""
    assert len(runs)
    for _, ens in runs.groupby(["train_seconds", "step_seconds"]):
        taken = (ens.steps_done - start).sum()
        assert ens.seconds_per_member_step.tolist() == pytest.approx([ens.step_seconds.iloc[0] / taken] * len(ens))


def _outlook(store: Path, steps: int, lrs="1e-3,1e-2"):
    """The sweep's one job at `steps`, and what `sweep --dry-run` says of it (core.experiments.outlook)."""
    from core.cli import build_parser
    from core.cli.sweep import plan_jobs
    from core.experiments.outlook import outlook

    (job,) = plan_jobs(build_parser().parse_args(criterion_argv(store, steps, lrs)), None)
    return job, outlook(store, [job]).iloc[0].to_dict()


def test_a_dry_run_says_what_a_sweep_would_train_from_which_step_and_writes_nothing(extension, tmp_path, capsys):
    from core.cli import main
    from core.experiments.run_job import checkpointer

    a, _ = extension
    files = sorted((p, p.stat().st_mtime_ns) for p in a.rglob("*"))
    _, row = _outlook(a, 150)
    assert row["stored"] == 4 and row["member-steps"] == 0
    _, row = _outlook(a, 300)  # every member stopped before 150 (solved or ruled out): carried over, not trained
    assert (row["carried"], row["taken up"], row["from step 0"], row["member-steps"]) == (4, 0, 0, 0)
    assert sorted((p, p.stat().st_mtime_ns) for p in a.rglob("*")) == files
    criterion_sweep(tmp_path / "c", 60, lrs="1e-3,3e-3")  # neither lr solves by 60: every member goes on
    _, row = _outlook(tmp_path / "c", 150, lrs="1e-3,3e-3")
    assert (row["taken up"], row["member-steps"]) == (4, 4 * (150 - 60))
    capsys.readouterr()
    assert main([*criterion_argv(tmp_path / "c", 150, "1e-3,3e-3"), "--dry-run"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "would train 4 of 4 members (4 taken up from a shorter cap's end states, 0 from a checkpoint, 0 from step "
        "0) for at most 360 member-steps; nothing was trained or written (--dry-run)"
    )
    assert len(st.load_runs(tmp_path / "c")) == 4  # the 60-step runs alone
    _, row = _outlook(tmp_path / "fresh", 60)
    assert (row["from step 0"], row["member-steps"]) == (4, 4 * 60) and not (tmp_path / "fresh").exists()
    job, _ = _outlook(tmp_path / "killed", 60)
    checkpointer(tmp_path / "killed", job, 0).save({"step": 40, "alive": [0, 2], "members": job.members})
    _, row = _outlook(tmp_path / "killed", 60)
    assert (row["from a checkpoint"], row["member-steps"]) == (4, 2 * (60 - 40))  # two still training at 40


def test_a_parameter_that_never_had_a_gradient_stays_out_of_the_saved_state_and_back_in_after():
    """AdamW keeps no state for a parameter without a gradient; stopping, re-stacking and resuming must cope."""
    import torch.nn.functional as F

    from core.training.ensemble import Ensemble
    from core.training.train import _batch, data_generator

    with mock.patch.object(F, "layer_norm", lambda x, *a, **kw: x):  # LayerNorm weights get no gradient
        ens = Ensemble(MODEL, SOLVED, [0, 1], [1e-2, 1e-2], "cpu")
        gens = {s: data_generator(s) for s in (0, 1)}
        for step in (1, 2):
            ens.step(step, *_batch(T, 8, gens, [0, 1], "cpu"))
        saved = ens.member_state(1)
        ens.keep([1])
        again = Ensemble(MODEL, SOLVED, [1], [1e-2], "cpu", states=[saved])
    assert not any("ln" in k for k in saved["exp_avg"]) and saved["exp_avg"] and int(saved["step"]) == 2
    for k, p in again.slices[0].items():
        assert bool(again.opt.state.get(p)) == (k in saved["exp_avg"])
        assert torch.equal(p.detach(), ens.slices[0][k].detach())


def _old_stacked_layout(state: dict) -> dict:
    """A state as files saved it before stacked's per-head factors took standard's layout: W_QKV (3, D, H, r)."""
    return {
        (k.replace("W_QKV_head", "W_QKV")): (v.movedim(-3, -4) if "W_QKV_head" in k else v) for k, v in state.items()
    }


def test_a_stacked_member_saved_in_the_old_layout_resumes_as_saved():
    """Checkpoints and models written before the layout change load to the same parameters and AdamW moments."""
    from core.training.ensemble import Ensemble
    from core.training.train import _batch, data_generator

    cfg = replace(MODEL, attention="stacked")
    ens = Ensemble(cfg, SOLVED, [0], [1e-2], "cpu")
    ens.step(1, *_batch(T, 8, {0: data_generator(0)}, [0], "cpu"))
    saved = ens.member_state(0)
    old = {"step": saved["step"], **{k: _old_stacked_layout(saved[k]) for k in ("params", "exp_avg", "exp_avg_sq")}}
    assert any(k.endswith("attn.W_QKV") for k in old["params"]) and not any("W_QKV_head" in k for k in old["exp_avg"])
    again = Ensemble(cfg, SOLVED, [0], [1e-2], "cpu", states=[old])
    for k, p in again.slices[0].items():
        assert torch.equal(p.detach(), ens.slices[0][k].detach())
        for m in ("exp_avg", "exp_avg_sq"):
            assert torch.equal(again.opt.state[p][m], ens.opt.state[ens.slices[0][k]][m])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_a_checkpoint_saved_on_the_gpu_resumes_on_the_cpu(tmp_path):
    """A job checkpointed on a GPU machine goes on where there is none: the state is read to the CPU."""
    from core.training.checkpoint import Checkpointer
    from core.training.ensemble import Ensemble
    from core.training.train import _batch, data_generator

    ens = Ensemble(MODEL, SOLVED, [0], [1e-2], "cuda")
    ens.step(1, *_batch(T, 8, {0: data_generator(0)}, [0], "cuda"))
    Checkpointer(tmp_path / "job.pt").save({"states": [ens.member_state(0)]})
    saved = Checkpointer(tmp_path / "job.pt").load()
    again = Ensemble(MODEL, SOLVED, [0], [1e-2], "cpu", states=saved["states"])
    for k, p in again.slices[0].items():
        assert p.device.type == "cpu" and torch.equal(p.detach(), ens.slices[0][k].detach().cpu())
        assert torch.equal(again.opt.state[p]["exp_avg"], ens.opt.state[ens.slices[0][k]]["exp_avg"].cpu())


def test_a_sweep_record_counts_the_runs_that_sweep_stored_not_another_sweeps(tmp_path):
    """Two sweeps on one store may split one job's members (claims): each record counts its own runs only, so a
    sweep that found a member stored by the other while it ran counts the FLOPs of the one it trained."""
    from core.experiments import sweep
    from core.experiments.flops import measured_sweep

    train = TrainConfig(steps=40, eval_every=10, batch_size=8, warmup=5, until="solved", schedule="constant", lr=3e-3)
    model = {"d_model": 16, "n_heads": 2}

    def measured(store, seeds, before=None):
        missing = {}
        jobs = sweep.plan(["standard"], ["reverse"], seeds, train, model)

        def run():
            if before:
                before()  # the other sweep stores seed 0 of the same job meanwhile
            return sweep.run(store, jobs, "cpu", on_job=lambda j, n: missing.update({j: n}))

        return measured_sweep(run, missing, "cpu", 1, runs=lambda: st.load_runs(store))

    counts, both = measured(tmp_path / "a", 2, before=lambda: sweep.run(tmp_path / "a", sweep.plan(
        ["standard"], ["reverse"], 1, train, model), "cpu"))  # fmt: skip
    _, alone = measured(tmp_path / "b", 2)
    assert counts["trained"] == 1 and len(counts["stored"]) == 1 and len(st.load_runs(tmp_path / "a")) == 2
    runs = st.load_runs(tmp_path / "b").set_index("run_id")
    share = runs.loc[counts["stored"], "steps_done"].sum() / runs.steps_done.sum()  # seed 1's steps of both seeds'
    assert both.gflop.iloc[0] == pytest.approx(alone.gflop.iloc[0] * share)


def test_a_cancelled_sweep_records_its_wall_time_and_the_flops_of_the_runs_it_stored(tmp_path):
    """Ctrl-C (or SIGTERM, through core.cli) during the second job: the first job's runs are stored and counted,
    the cancel comes back as counts, not as an exception, and the record says its FLOPs are a floor (cancelled,
    no utilisation); the claims are released."""
    import math

    from core.experiments import sweep
    from core.experiments.flops import measured_sweep

    train = TrainConfig(steps=40, eval_every=10, batch_size=8, warmup=5, until="solved", schedule="constant", lr=3e-3)
    plan = partial(sweep.plan, tasks=["reverse"], n_seeds=1, train=train, model_overrides={"d_model": 16, "n_heads": 2})

    def measured(store, attentions, cancel_at=None):
        missing = {}

        def on_job(job, n):
            if job.model.attention == cancel_at:
                raise KeyboardInterrupt
            missing[job] = n

        run = partial(sweep.run, store, plan(attentions), "cpu", on_job=on_job)
        return measured_sweep(run, missing, "cpu", 1, runs=lambda: st.load_runs(store))

    counts, part = measured(tmp_path / "a", ["standard", "mqa"], cancel_at="mqa")
    _, whole = measured(tmp_path / "b", ["standard"])
    assert counts["cancelled"] and counts["trained"] == 1 and len(st.load_runs(tmp_path / "a")) == 1
    assert not list((tmp_path / "a").glob("claims/*.claim"))
    row = part.iloc[0]
    assert bool(row.cancelled) and not whole.cancelled.iloc[0] and row.seconds > 0
    assert row.gflop == pytest.approx(whole.gflop.iloc[0]) and math.isnan(row.utilisation)
