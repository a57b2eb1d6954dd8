"""Training to a criterion: stopping, re-stacking, the lr that cannot be chosen (checkpoints: test_resume)."""

import random
from dataclasses import replace

import pandas as pd
import pytest
import torch
from tiny import REVERSE_MODEL, REVERSE_TASK, SOLVED, close

from core.analysis import findings
from core.training import criterion
from core.training.config import TrainConfig
from core.training.recorder import Recorder, RunResult
from core.training.reference import train_plain
from core.training.tasks import make_task
from core.training.train import train_ensemble

TASK, MODEL = REVERSE_TASK, REVERSE_MODEL
T = make_task(TASK)


def curve(result, metric: str) -> list[float]:
    return [v for _, k, v in result.metrics if k == metric]


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
