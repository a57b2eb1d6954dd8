"""What a sweep still has to train, and how long it takes here: core.report.pending's member-steps per job
(checked against the recorder that applies the same stopping rule) and core.experiments.pace's timing."""

import pytest
import torch


def test_each_job_trains_its_censored_and_new_members_to_the_cap_and_jobs_are_taken_longest_first():
    """job_steps: per parameterization, what a scratch store trains with --carry-from the point's store: its members
    censored at the cap and the ones it lacks, from step 0 to the new cap; one that stopped before the cap is
    carried. wall_hours: jobs longest first, each to the worker free first, as the sweep's pool takes them."""
    from test_endpoints import CELLS, runs

    from core.experiments.pace import wall_hours
    from core.report.pending import job_steps, new_steps, raise_steps

    point = runs(CELLS).assign(stop_step=lambda d: d.solve_step.fillna(d.steps))
    names = ("standard", "stacked", "bilinear")
    fresh = [new_steps(point[point.attention == n], 1000, 2000, 11, (1e-3,), 50) for n in names]
    assert fresh == [2000] * 3  # one new seed each, at the stored lr: to the cap
    steps = job_steps(point, 1000, 2000, names, fresh)
    assert steps == ((0 + 1) * 2000, (3 + 1) * 2000, (0 + 1) * 2000)  # stacked: 3 censored; each: 1 new seed
    extended, from_zero = raise_steps(point, 1000, 2000, sum(fresh))
    assert sum(steps) == extended + 3 * 1000 < from_zero  # the censored from 0, not from 1000; no stop repeated
    assert wall_hours((3.0, 2.0, 2.0, 1.0), 2) == 4.0 and wall_hours((3.0, 2.0, 2.0, 1.0), 1) == 8.0
    assert wall_hours((5.0, 1.0, 1.0), 2) == 5.0  # one long job sets the wall time, not the sum over two


def _new_lr(stored: dict, new: list, every: int = 50, cap: int = 3000) -> int:
    """The member-steps the recorder trains a new lr's members for (they reach accuracy 1 at `new`'s steps, None:
    never), beside one lr of the cell that trains nothing (`stored`: seed -> solve step, None: unsolved)."""
    from core.training.recorder import Recorder, RunResult

    results = [RunResult(seed=s, lr=3e-2, status="ok") for s in range(len(new))]
    rec = Recorder(results, "solved", cap, every, settled=[(1e-2, t) for t in stored.values()])
    members = list(range(len(new)))
    for step in range(0, cap + 1, every):
        acc = [1.0 if new[i] is not None and step >= new[i] else 0.5 for i in members]
        values = {"val_acc": torch.tensor(acc), "val_loss": torch.ones(len(members))}
        for i in rec.evaluated(step, members, values, lambda pos: []):
            members.remove(i)
        if not members:
            break
    return sum(r.steps_done for r in results)


@pytest.mark.parametrize("trial", range(30))
def test_a_new_lrs_member_steps_are_bounded_by_the_rule_that_stops_a_hopeless_lr_as_the_recorder_applies_it(trial):
    """new_steps: a new lr of n seeds, beside a stored lr of the cell that trains nothing, stops at step 0 where that
    lr solved more than n seeds and, where it solved n, by the time its seeds have spent that lr's summed solve steps
    (plus an evaluation each); otherwise its seeds run to the cap. Checked against the recorder itself, on random
    curves, and tight (within two evaluations a seed) where no new seed solves."""
    import random

    import pandas as pd

    from core.report.pending import new_steps

    rng = random.Random(trial)
    k, n = rng.choice([(4, 4), (4, 3), (4, 4), (3, 4), (4, 4)])
    stored = {s: rng.randrange(100, 1500, 50) if s < k else None for s in range(4)}
    new = [rng.choice([None, rng.randrange(0, 3000, 50)]) for _ in range(n)]
    own = pd.DataFrame({"lr": 1e-2, "stop": ["solved" if t else "cap" for t in stored.values()]})
    own["solve_step"] = [float(t) if t else float("nan") for t in stored.values()]
    bound = new_steps(own, 3000, 3000, n, (1e-2, 3e-2), 50)
    trained = _new_lr(stored, new)
    assert trained <= bound
    never = _new_lr(stored, [None] * n)
    assert never <= bound < never + 2 * n * 50 if k >= n else bound == never == n * 3000
    assert bound == 0 if k > n else True


def test_the_pace_of_a_job_is_its_step_time_here_per_member_plus_its_share_of_evaluation():
    """member_step_seconds trains a few steps of the job here and divides by member-steps: a job of twice the
    model's width costs more per member-step than its narrow twin, timed the same way."""
    from core.experiments.pace import member_step_seconds
    from core.experiments.sweep import plan
    from core.training.config import TrainConfig

    train = TrainConfig(steps=400, eval_every=50, batch_size=8, until="solved", schedule="constant")
    narrow, wide = (plan(["standard"], ["reverse"], 2, train, {"d_model": d, "n_heads": 2})[0] for d in (16, 128))
    paces = [member_step_seconds(job, "cpu", steps=6, members=2) for job in (narrow, wide)]
    assert 0 < paces[0] < paces[1] < 1
