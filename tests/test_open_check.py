"""The open rule checked against what a raised cap showed next (core.analysis.open_check)."""

import math

import pandas as pd
import pytest

from core.analysis import open_check
from core.training.recorder import late_trend

CAP = open_check.FIRST_CAP


def run(rid: str, lr: float, steps: int, solve: float | None, stop: float | None = None) -> dict:
    return {
        "run_id": rid,
        "attention": "standard",
        "task": "reverse",
        "d_model": 64,
        "lr": lr,
        "steps": steps,
        "status": "ok",
        "until": "solved",
        "stop": "cap" if solve is None else "solved",
        "solve_step": math.nan if solve is None else float(solve),
        "stop_step": float(stop or solve or steps),
        "test_acc": 0.5 if solve is None else 1.0,
    }


def curve(rid: str, acc) -> list[dict]:
    """Evaluations every CAP/16 steps up to 8 CAP: acc(step) and a flat validation loss."""
    rows = []
    for step in range(0, 8 * CAP + 1, CAP // 16):
        rows += [{"run_id": rid, "step": step, "metric": "val_acc", "value": acc(step)}]
        rows += [{"run_id": rid, "step": step, "metric": "val_loss", "value": 1.0}]
    return rows


def test_the_lower_caps_are_the_protocols_doublings_below_a_cap():
    assert open_check.lower_caps(CAP) == [] and open_check.lower_caps(4 * CAP) == [CAP, 2 * CAP]


def test_each_run_a_raised_cap_trained_past_a_lower_one_unsolved_is_read_there_by_the_rule_and_by_what_followed():
    """rising: still improving at CAP (its accuracy rose 10 points over the last fifth), solved at 1.5 CAP; flat:
    neither, at both lower caps of its 4 CAP run; early: solved before CAP (never censored there); short: a run
    at CAP has no lower cap; pruned: stopped before CAP."""
    rising = lambda s: min(0.5 + 0.1 * s / (0.2 * CAP), 0.99)  # noqa: E731
    runs = pd.DataFrame(
        [
            run("rising", 1e-3, 2 * CAP, solve=1.5 * CAP),
            run("flat", 3e-3, 4 * CAP, solve=None),
            run("early", 1e-3, 2 * CAP, solve=CAP / 2),
            run("short", 1e-3, CAP, solve=None),
            run("pruned", 1e-2, 2 * CAP, solve=None, stop=CAP / 2),
        ]
    )
    curves = pd.DataFrame(
        curve("rising", rising)
        + curve("flat", lambda s: 0.4)
        + curve("early", lambda s: 0.99)
        + curve("short", lambda s: 0.4)
        + curve("pruned", lambda s: 0.4)
    )
    pairs = open_check.at_lower_caps(runs, curves).set_index(["run_id", "cap"])
    assert sorted(pairs.index) == [("flat", CAP), ("flat", 2 * CAP), ("rising", CAP)]
    assert pairs.loc[("rising", CAP), ["improving", "solved_next"]].tolist() == [True, True]
    assert not pairs.loc["flat"].improving.any() and not pairs.loc["flat"].solved_next.any()
    table = open_check.check(pairs.reset_index()).set_index(["unit", "said"])
    assert table.loc[("seeds", "still improving"), ["n", "solved_next"]].tolist() == [1, 1]
    assert table.loc[("seeds", "not improving"), ["n", "solved_next"]].tolist() == [2, 0]
    assert table.loc[("cells", "open"), ["n", "solved_next"]].tolist() == [1, 1]  # rising's lr at CAP
    assert table.loc[("cells", "closed"), ["n", "solved_next"]].tolist() == [2, 0]  # flat's lr at CAP and 2 CAP
    assert table.loc[("seeds", "still improving"), "p"] == pytest.approx(1 / 3)  # Fisher: 1 of 1 against 0 of 2


@pytest.mark.parametrize("cap", [CAP, 2 * CAP])
def test_a_run_is_read_at_a_lower_cap_from_its_curve_up_to_there_as_a_run_stopped_there_stored_it(cap):
    """The longer run's curve up to C is the run to C (the schedule does not depend on the cap), so the rule reads
    it as late_trend read the run stopped at C: a jump at 1.8 C is not seen at C, and is at 2 C (in its last fifth)."""
    jump = lambda s: 0.4 if s <= 1.8 * cap else 0.9  # noqa: E731
    runs = pd.DataFrame([run("r", 1e-3, 8 * CAP, solve=None)])
    rows = curve("r", jump)
    pairs = open_check.at_lower_caps(runs, pd.DataFrame(rows)).set_index("cap")
    stopped = late_trend([(r["step"], r["metric"], r["value"]) for r in rows if r["step"] <= cap], cap)
    assert stopped == {"val_loss_drop": 0.0, "val_acc_gain": 0.0} and not pairs.loc[cap, "improving"]
    assert pairs.loc[2 * cap, "improving"]
