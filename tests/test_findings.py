"""The Overview's sentences follow the data they are computed from."""

import pandas as pd

from core import findings


def runs(rows):
    out = []
    for attention, task, losses, accs in rows:
        for seed, (loss, acc) in enumerate(zip(losses, accs)):
            out.append(
                {
                    "attention": attention,
                    "task": task,
                    "seed": seed,
                    "status": "ok",
                    "eval_loss": loss,
                    "eval_acc": acc,
                    "params_attention": 1,
                    "params_total": 2,
                    "seconds_per_step": 0.1,
                }
            )
    return pd.DataFrame(out)


DATA = runs(
    [
        ("standard", "a", [0.10, 0.12, 0.11], [0.99, 0.99, 0.98]),
        ("standard", "b", [0.01, 0.01, 0.01], [1.0, 1.0, 1.0]),
        ("stacked", "a", [0.11, 0.10, 0.12], [0.99, 0.98, 0.99]),  # same within noise
        ("stacked", "b", [1.50, 1.40, 1.60], [0.30, 0.35, 0.32]),  # clearly worse, unsolved
        ("identity", "a", [0.02, 0.02, 0.03], [1.0, 1.0, 1.0]),  # clearly better
        ("identity", "b", [0.015, 0.012, 0.011], [1.0, 1.0, 1.0]),  # within LOSS_TOL of a solved task
    ]
)


def test_sentences_state_what_the_data_shows():
    lines = findings.sentences(DATA, ["standard", "stacked", "identity"])
    assert lines == [
        "**stacked** reaches the same final eval loss as standard within seed noise on 1/2 tasks; worse on b; "
        "below 95% accuracy where standard is above it on b.",
        "**identity** reaches the same final eval loss as standard within seed noise on 1/2 tasks; better on a.",
    ]


def test_summary_orders_and_aggregates_over_seeds():
    s = findings.summary(DATA, ["b", "a"], ["standard", "stacked", "identity"])
    assert list(zip(s.task, s.attention))[:3] == [("b", "standard"), ("b", "stacked"), ("b", "identity")]
    row = s[(s.task == "b") & (s.attention == "stacked")].iloc[0]
    assert row.seeds == 3 and abs(row.eval_loss - 1.5) < 1e-12 and abs(row.eval_loss_std - 0.1) < 1e-12


def test_diverged_runs_are_left_out():
    data = DATA.copy()
    data.loc[0, "status"] = "diverged"
    assert findings.summary(data, ["a", "b"], ["standard"]).iloc[0].seeds == 2
