"""Training to a criterion: stopping, re-stacking, the lr that cannot be chosen, checkpoints and extension."""

import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from unittest import mock

import pandas as pd
import pytest
import torch

from core.analysis import findings
from core.results import store as st
from core.training import criterion
from core.training.config import ModelConfig, TaskConfig, TrainConfig
from core.training.recorder import Recorder, RunResult
from core.training.reference import train_plain
from core.training.tasks import make_task
from core.training.train import train_ensemble

ROOT = Path(__file__).resolve().parents[1]
TASK = TaskConfig("reverse", n_symbols=6, length=4, eval_size=64)
T = make_task(TASK)
MODEL = ModelConfig(vocab_size=T.vocab_size, max_len=T.seq_len, d_model=16, n_heads=2)
SOLVED = TrainConfig(steps=150, eval_every=10, batch_size=16, warmup=5, schedule="constant", until="solved")


def curve(result, metric: str) -> list[float]:
    return [v for _, k, v in result.metrics if k == metric]


def close(a: list[float], b: list[float], tol: float = 1e-4) -> bool:
    return len(a) == len(b) and all(abs(x - y) <= tol * max(1.0, abs(y)) for x, y in zip(a, b))


@pytest.fixture(scope="module")
def grid():
    """One small grid (3 lrs x 2 seeds) to the criterion, with and without dropping hopeless lrs."""
    seeds, lrs = [0, 1] * 3, [1e-3, 1e-3, 1e-2, 1e-2, 3e-2, 3e-2]
    pruned = train_ensemble(MODEL, TASK, SOLVED, seeds, "cpu", lrs=lrs)
    full = train_ensemble(MODEL, TASK, SOLVED, seeds, "cpu", lrs=lrs, prune=False)
    return pruned, full


def test_the_schedule_is_warmup_then_constant_and_does_not_depend_on_the_cap():
    a, b = replace(SOLVED, steps=300), replace(SOLVED, steps=3000)
    mult = lambda cfg, s: criterion.lr_at(s, cfg.steps, cfg.warmup, cfg.lr_min_ratio, cfg.schedule)  # noqa: E731
    assert mult(a, 0) == pytest.approx(0.2) and mult(a, 4) == 1.0
    assert [mult(a, s) for s in range(300)] == [mult(b, s) for s in range(300)]


def test_the_new_fields_keep_every_stored_run_id_and_enter_it_off_their_default():
    assert not {"schedule", "until", "precision"} & set(TrainConfig().to_dict())  # at their defaults: left out
    assert {"schedule", "until"} <= set(SOLVED.to_dict())
    assert TrainConfig().key != replace(TrainConfig(), schedule="constant").key


BAD = [
    ({"until": "never"}, "until"),
    ({"schedule": "linear"}, "schedule"),
    ({"until": "solved"}, "schedule"),
    ({"until": "solved", "schedule": "constant", "steps": 40}, "steps"),
]


@pytest.mark.parametrize("kw, field", BAD)
def test_bad_criterion_settings_are_one_line_naming_the_field(kw, field):
    with pytest.raises(ValueError, match=f"^{field}:") as err:
        TrainConfig(**kw)
    assert "\n" not in str(err.value)


def test_a_stopped_member_follows_its_unstopped_twin_up_to_its_stop(grid):
    pruned, _ = grid
    twins = train_ensemble(
        MODEL, TASK, replace(SOLVED, until="steps"), [0, 1] * 3, "cpu", lrs=[1e-3, 1e-3, 1e-2, 1e-2, 3e-2, 3e-2]
    )
    stopped = [r for r in pruned if r.steps_done < SOLVED.steps]
    assert stopped and any(r.stop == "solved" for r in stopped)
    for r, twin in zip(pruned, twins):
        n = len(curve(r, "val_loss"))
        assert close(curve(r, "train_loss"), curve(twin, "train_loss")[: len(curve(r, "train_loss"))])
        assert close(curve(r, "val_loss"), curve(twin, "val_loss")[:n])
        if r.stop == "solved":  # two evaluations in a row at SOLVED, the first of them its solve step
            acc = dict((s, v) for s, k, v in r.metrics if k == "val_acc")
            assert r.final["solve_step"] == min(s for s, v in acc.items() if v >= criterion.SOLVED)
            assert acc[r.steps_done] >= criterion.SOLVED and acc[r.steps_done - SOLVED.eval_every] >= criterion.SOLVED


def test_after_restacking_the_rest_train_as_each_would_alone(grid):
    _, full = grid
    last = max(full, key=lambda r: r.steps_done)
    assert last.steps_done > min(r.steps_done for r in full)  # others stopped before it: it was re-stacked
    (alone,) = train_ensemble(MODEL, TASK, replace(SOLVED, lr=last.lr), [last.seed], "cpu")
    assert alone.steps_done == last.steps_done and alone.stop == last.stop
    assert close(curve(last, "train_loss"), curve(alone, "train_loss"))
    assert close(curve(last, "val_loss"), curve(alone, "val_loss"))


def test_the_plain_loop_stops_where_the_engine_does():
    (r,) = train_ensemble(MODEL, TASK, replace(SOLVED, lr=1e-2), [0], "cpu")
    losses, evals = train_plain(MODEL, TASK, replace(SOLVED, lr=1e-2), 0)
    assert r.stop == "solved" and len(losses) == r.steps_done
    every = SOLVED.eval_every  # the engine records the mean training loss between evaluations
    assert close([sum(losses[i : i + every]) / every for i in range(0, len(losses), every)], curve(r, "train_loss"))
    assert close([v for _, v in evals["val"]], curve(r, "val_loss"))


def _table(results) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "attention": "standard",
                "task": "reverse",
                "lr": r.lr,
                "seed": r.seed,
                "status": r.status,
                "val_loss": r.final["val_loss"],
                "stop": r.stop,
                "until": "solved",
                "solve_step": r.final["solve_step"],
            }
            for r in results
        ]
    )


def test_dropping_hopeless_lrs_never_changes_the_lr_chosen_on_a_real_grid(grid):
    pruned, full = grid
    assert any(r.stop == "pruned" for r in pruned)
    assert sum(r.steps_done for r in pruned) < sum(r.steps_done for r in full)
    assert findings.best_lr(_table(pruned)).lr.tolist() == findings.best_lr(_table(full)).lr.tolist()


def _simulate(solve_at: dict, prune: bool, cap: int = 400, every: int = 10) -> list[RunResult]:
    """Feed the recorder synthetic validation curves: member (lr, seed) reaches accuracy 1 at solve_at (None: never)."""
    results = [RunResult(seed=s, lr=lr, status="ok") for lr, s in solve_at]
    rec, members = Recorder(results, "solved", cap, every, prune=prune), list(range(len(results)))
    rng = random.Random(0)
    for step in range(0, cap + 1, every):
        acc = [1.0 if (t := solve_at[(r.lr, r.seed)]) is not None and step >= t else 0.5 for r in results]
        values = {
            "val_acc": torch.tensor([acc[i] for i in members]),
            "val_loss": torch.tensor([rng.random() for _ in members]),
        }
        for i in rec.evaluated(step, members, values, lambda pos: []):
            rec.finish(i)
            members.remove(i)
        if not members:
            break
    return results


@pytest.mark.parametrize("trial", range(40))
def test_dropping_hopeless_lrs_never_changes_the_lr_chosen_on_synthetic_curves(trial):
    rng = random.Random(trial)
    lrs = (1e-3, 3e-3, 1e-2)
    solve_at = {(lr, s): rng.choice([None, rng.randrange(0, 400, 10)]) for lr in lrs for s in range(4)}
    pruned, full = _simulate(solve_at, True), _simulate(solve_at, False)
    assert findings.best_lr(_table(pruned)).lr.tolist() == findings.best_lr(_table(full)).lr.tolist()


def _sweep(store: Path, steps: int, env=None, wait=True, lrs="1e-3,1e-2"):
    cmd = [
        sys.executable,
        "-m",
        "core",
        "sweep",
        "--store",
        str(store),
        "--task",
        "reverse",
        "--attention",
        "standard",
        "--seeds",
        "2",
        "--lr",
        lrs,
        "--until",
        "solved",
        "--steps",
        str(steps),
        "--eval-every",
        "10",
        "--n-symbols",
        "6",
        "--length",
        "4",
        "--d-model",
        "16",
        "--n-heads",
        "2",
        "--workers",
        "1",
        "--quiet",
    ]
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env={**os.environ, **(env or {})}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    if wait:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    return proc


def _curves(store: Path) -> dict:
    runs = st.load_runs(store)
    metrics = st.load_metrics(store, list(runs.run_id))
    val = metrics[metrics.metric.isin(["val_loss", "val_acc", "test_loss", "test_acc"])]
    out = {}
    for row in runs.itertuples():
        m = val[val.run_id == row.run_id].sort_values(["metric", "step"])
        solve = None if pd.isna(row.solve_step) else row.solve_step  # NaN != NaN: compare as None
        out[(row.lr, row.seed, row.steps)] = (row.stop, solve, list(zip(m.metric, m.step, m.value)))
    return out


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
    assert _curves(tmp_path / "killed") == _curves(tmp_path / "straight")
    assert not any(checkpoints.glob("*.pt"))  # removed once the training ended


@pytest.fixture(scope="module")
def extension(tmp_path_factory):
    """Store a: swept to cap 60, then extended to 150; store b: swept to 150 straight."""
    tmp = tmp_path_factory.mktemp("extension")
    _sweep(tmp / "a", 60)
    short = st.load_runs(tmp / "a")
    assert (short.stop == "cap").any() and (short.stop != "cap").any()  # some go on from their saved state
    _sweep(tmp / "a", 150)
    _sweep(tmp / "b", 150)
    return tmp / "a", tmp / "b"


def test_a_larger_cap_extends_the_stored_runs_as_a_straight_run_would_train_them(extension):
    a, b = extension
    extended = {k: v for k, v in _curves(a).items() if k[2] == 150}
    straight = _curves(b)
    assert extended.keys() == straight.keys()
    for key, (stop, solve, rows) in straight.items():
        e_stop, e_solve, e_rows = extended[key]
        assert (e_stop, e_solve) == (stop, solve)
        assert [r[:2] for r in e_rows] == [r[:2] for r in rows]
        assert close([r[2] for r in e_rows], [r[2] for r in rows])


def test_an_extension_records_and_counts_only_the_steps_it_took(extension, tmp_path):
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
    for store, caps in ((tmp_path / "c", (60, 150)), (tmp_path / "d", (150,))):
        for cap in caps:
            _sweep(store, cap, lrs=lrs)
    runs = st.load_runs(tmp_path / "c")
    ext = runs[runs.steps == 150]
    assert (runs[runs.steps == 60].stop == "cap").all() and (ext.steps_from == 60).all()
    records = st.load_named(tmp_path / "c", "bench").sort_values("steps")
    (straight,) = st.load_named(tmp_path / "d", "bench").itertuples()
    new_steps, all_steps = (ext.steps_done - 60).sum(), st.load_runs(tmp_path / "d").steps_done.sum()
    assert 0 < new_steps < all_steps and list(records.steps) == [60, 150]
    assert (records.runs.iloc[1], records.carried.iloc[1]) == (4, 0)
    assert records.gflop.iloc[1] == pytest.approx(straight.gflop * new_steps / all_steps)


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
