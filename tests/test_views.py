"""The tables the pages show (core.analysis.views): the numbers, computed once, away from the pages."""

import numpy as np
import pandas as pd
import pytest

from core.analysis import views


def _runs(**cols) -> pd.DataFrame:
    base = {"task": "t", "attention": "standard", "d_model": 64, "n_heads": 4, "d_head": 16, "steps": 800}
    return pd.DataFrame([{**base, **row} for row in cols["rows"]])


def test_runtime_bars_count_an_ensemble_once_however_many_seeds_it_trained():
    y = "seconds_per_member_step"
    one = {y: 0.02, "train_seconds": 90.0, "step_seconds": 80.0}
    rows = [{**one, "seed": s, "lr": lr} for s in range(5) for lr in (1e-3, 3e-3)]  # one ensemble
    other = {y: 0.04, "train_seconds": 30.0, "step_seconds": 25.0}  # another, of the same configuration
    rows += [{**other, "seed": s, "lr": 1e-3} for s in range(5)]
    per = views.runtime_bars(_runs(rows=rows), y)
    (row,) = per.itertuples()
    assert row.ensembles == 2 and getattr(row, y) == pytest.approx(0.03) and row.std == pytest.approx(0.01414, 1e-3)
    one = views.runtime_bars(_runs(rows=rows[:10]), y)
    assert one.ensembles.tolist() == [1] and one["std"].tolist() == [0.0]  # one reading: no spread, not NaN


def test_the_best_lr_table_flags_a_best_lr_at_either_edge_of_the_grid_and_keeps_the_order():
    runs = pd.DataFrame({"lr": [1e-4, 1e-3, 1e-2]})
    best = pd.DataFrame(
        {
            "task": ["t", "t", "t"],
            "attention": ["gqa", "standard", "mqa"],
            "lr": [1e-4, 1e-3, 1e-2],
            "val_loss": [0.1, 0.2, 0.3],
            "n": [5, 5, 5],
        }
    )
    table = views.best_lr_table(runs, best, ["t", "standard", "mqa", "gqa"])
    assert table.attention.tolist() == ["standard", "mqa", "gqa"]
    assert table["at the grid's edge"].tolist() == [False, True, True]
    assert not views.best_lr_table(runs.iloc[:1], best.iloc[:1], ["t", "gqa"])["at the grid's edge"].any()


def test_solve_by_lr_counts_the_unsolved_seeds_and_keeps_each_cells_best_lr():
    runs = pd.DataFrame(
        {
            "run_id": list("abcde"),
            "task": "t",
            "attention": "standard",
            "lr": [1e-3, 1e-3, 1e-3, 1e-2, 1e-2],
            "status": ["ok", "ok", "ok", "ok", "diverged"],
        }
    )
    steps = pd.Series({"a": 100.0, "b": np.nan, "c": 300.0, "d": 50.0})
    best = pd.DataFrame({"task": ["t"], "attention": ["standard"], "lr": [1e-3]})
    solve, counts, at_best = views.solve_by_lr(runs, steps, best)
    assert set(solve.run_id) == set("abcd")  # a diverged run is not a finished one
    assert counts.set_index("lr").loc[1e-3, ["solved", "seeds"]].tolist() == [2, 3]
    assert sorted(at_best.run_id) == ["a", "b", "c"] and at_best.time_to_solve.isna().sum() == 1


def test_the_in_practice_summaries_average_over_heads_layers_and_models():
    d = pd.DataFrame(
        {
            "attention": "m",
            "kind": "encoder",
            "metric": "sym_QK",
            "layer": [0, 0, 1, 1],
            "head": [0, 1, 0, 1],
            "value": [0.1, 0.3, 0.5, 0.5],
        }
    )
    layers = views.per_layer(d, "sym_QK")
    assert layers.sym_QK.tolist() == pytest.approx([0.2, 0.5]) and layers["std"].iloc[1] == 0.0
    assert views.per_head(pd.concat([d, d.assign(value=d.value + 0.2)])).value.tolist() == pytest.approx(
        [0.2, 0.4, 0.6, 0.6]
    )
    kinds = views.by_kind(d)
    assert kinds["mean"].tolist() == pytest.approx([0.35])
    assert views.summary(d).sym_QK.tolist() == pytest.approx([0.35])


def test_curve_bands_smooth_each_run_then_take_the_seeds_spread():
    df = pd.DataFrame(
        {
            "task": "t",
            "attention": "standard",
            "run_id": ["a", "a", "b", "b"],
            "step": [0, 1, 0, 1],
            "value": [1.0, 3.0, 3.0, 5.0],
        }
    )
    bands = views.curve_bands(df, "step", 0.0)
    assert bands["mean"].tolist() == [2.0, 4.0] and bands["min"].tolist() == [1.0, 3.0] and bands["count"].max() == 2
    smooth = views.curve_bands(df, "step", 0.5)
    assert smooth["mean"].iloc[1] < 4.0  # the second step pulled toward the first


def test_strongest_heads_takes_each_models_best_head_per_score_and_leaves_models_without_scores_out():
    scores = pd.DataFrame(
        [
            ("a", 0, 0, "induction", 0.1),
            ("a", 1, 2, "induction", 0.9),
            ("a", 0, 1, "prev_token", 0.6),
            ("a", 1, 0, "prev_token", 0.2),
            ("b", 0, 0, "induction", 0.05),
            ("b", 0, 0, "prev_token", 0.3),
        ],
        columns=["run_id", "layer", "head", "metric", "value"],
    )
    runs = pd.DataFrame(
        {"run_id": ["a", "b", "c"], "attention": ["standard", "standard", "gqa"], "n_layers": [2, 1, 2]}
    ).assign(lr=1e-3, test_acc=[1.0, 0.3, 1.0])
    runs = pd.concat([runs, runs.iloc[[0]].assign(run_id="d", attention="bilinear")], ignore_index=True)
    scores = pd.concat([scores, scores[scores.run_id == "a"].assign(run_id="d")], ignore_index=True)
    table = views.strongest_heads(scores, runs, ["standard", "bilinear"]).set_index("run_id")
    assert list(table.index) == ["b", "a", "d"]  # one layer first, then in the order given; c has no scores
    assert table.loc["a", ["induction", "prev_token"]].tolist() == [0.9, 0.6]
    assert table.loc["b", ["induction", "prev_token", "test_acc"]].tolist() == [0.05, 0.3, 0.3]
    assert views.strongest_heads(scores.iloc[:0], runs, ["standard"]).empty
