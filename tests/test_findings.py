"""Statistics the app and docs/results.md state: best lr on validation, intervals, verdicts, sentences."""

import math
import re

import numpy as np
import pandas as pd
import pytest

from core.analysis import curves, findings, sensitivity, stats, words


def runs(rows, lr=3e-3, val_shift=0.0):
    """rows: (attention, task, test losses per seed, test accuracies per seed)."""
    out = []
    for attention, task, losses, accs in rows:
        for seed, (loss, acc) in enumerate(zip(losses, accs)):
            out.append(
                {
                    "run_id": f"{attention}-{task}-{lr}-{seed}",
                    "attention": attention,
                    "task": task,
                    "seed": seed,
                    "lr": lr,
                    "status": "ok",
                    "val_loss": loss + val_shift,
                    "test_loss": loss,
                    "test_acc": acc,
                    "val_loss_drop": 0.0,
                    "val_acc_gain": 0.0,
                    "params_attention": 1,
                    "params_total": 2,
                    "seconds_per_member_step": 0.01,
                    "d_model": 64,
                    "steps": 800,
                }
            )
    return pd.DataFrame(out)


DATA = runs(
    [
        ("standard", "a", [0.10, 0.12, 0.11, 0.10, 0.11], [0.99, 0.99, 0.98, 0.99, 0.99]),
        ("standard", "b", [0.01, 0.01, 0.012, 0.011, 0.01], [1.0] * 5),
        ("stacked", "a", [0.11, 0.10, 0.12, 0.11, 0.10], [0.99, 0.98, 0.99, 0.99, 0.99]),  # equivalent
        ("stacked", "b", [1.50, 1.40, 1.60, 1.45, 1.55], [0.30, 0.35, 0.32, 0.31, 0.33]),  # clearly worse
        ("identity", "a", [0.02, 0.02, 0.03, 0.02, 0.025], [1.0] * 5),  # clearly better
    ]
)


def test_each_verdict_from_data_built_for_it():
    cmp = findings.compare_to(DATA).set_index(["attention", "task"]).verdict
    assert cmp[("stacked", "a")] == "equivalent"
    assert cmp[("stacked", "b")] == "worse"
    assert cmp[("identity", "a")] == "better"


def test_noisy_n3_with_close_means_is_inconclusive_not_equivalent():
    noisy = runs([("standard", "a", [0.2, 0.5, 0.05], [0.9] * 3), ("stacked", "a", [0.3, 0.05, 0.45], [0.9] * 3)])
    row = findings.compare_to(noisy).iloc[0]
    assert 1 / findings.RATIO_MARGIN < row.ratio < findings.RATIO_MARGIN  # the geometric means are close...
    assert row.verdict == "inconclusive" and row.eq_lo < 1 / findings.RATIO_MARGIN  # ...but the interval is wide
    assert row.n == row.ref_n == 3


def test_two_solved_cells_ten_times_apart_are_not_equivalent():
    """Both solve every seed at losses near 0 (a difference in nats of 0.009 calls them same); on the log
    scale a tenfold loss is a difference, and equal cells are equivalent."""
    std = [0.001, 0.0012, 0.0009, 0.0011, 0.001]
    data = runs(
        [
            ("standard", "a", std, [1.0] * 5),
            ("tied_qk", "a", [10 * v for v in std[::-1]], [1.0] * 5),
            ("stacked", "a", [v * 1.02 for v in std[1:] + std[:1]], [1.0] * 5),
        ]
    )
    cmp = findings.compare_to(data).set_index("attention")
    assert abs(cmp.loc["tied_qk", "diff"]) < 0.05  # the old margin in nats would have said "equivalent"
    assert cmp.loc["tied_qk", "verdict"] == "worse" and cmp.loc["tied_qk", "ratio"] == pytest.approx(10, rel=1e-6)
    assert cmp.loc["stacked", "verdict"] == "equivalent"
    assert 1 / 1.5 < cmp.loc["stacked", "eq_lo"] < cmp.loc["stacked", "eq_hi"] < 1.5


def test_holm_changes_a_borderline_family():
    """One comparison alone at p ~ 0.03 is a difference; among four it no longer survives Holm."""
    ref = list(np.exp([0.0, 0.3, -0.3, 0.15, -0.15, 0.05]))
    worse = list(np.exp(np.array([0.1, -0.2, 0.35, -0.1, 0.2, -0.25]) + 0.35))  # Welch p = 0.021 on log loss
    base = runs([("standard", "a", ref, [1.0] * 6), ("stacked", "a", worse, [1.0] * 6)])
    alone = findings.compare_to(base).iloc[0]
    assert 0.01 < alone.p < 0.05 and alone.p_holm == alone.p and alone.verdict == "worse"
    others = runs([(n, "a", ref[1:] + ref[:1], [1.0] * 6) for n in ("mqa", "gqa", "bilinear")])
    family = findings.compare_to(pd.concat([base, others])).set_index("attention")
    assert family.loc["stacked", "p"] == pytest.approx(alone.p)
    assert family.loc["stacked", "p_holm"] == pytest.approx(min(1, 4 * alone.p))
    assert family.loc["stacked", "verdict"] == "inconclusive"


def test_tost_at_5_percent_is_the_90_percent_interval_inside_the_margin():
    rng = np.random.default_rng(1)
    for _ in range(20):
        a, b = np.exp(rng.normal(0, 0.4, 5)), np.exp(rng.normal(rng.normal(0, 0.2), 0.4, 5))
        la, lb = np.log(a), np.log(b)
        _, lo, hi, _ = stats.welch_ci(la, lb, level=0.90)
        inside = -np.log(1.5) < lo and hi < np.log(1.5)
        assert (stats.tost_p(la, lb, np.log(1.5)) < 0.05) == inside


def test_lr_sensitivity_counts_the_lrs_that_solve():
    data = pd.concat(
        [
            runs([("standard", "a", [0.01] * 5, [1.0] * 5)], lr=1e-3),
            runs([("standard", "a", [0.01] * 5, [1.0] * 4 + [0.5])], lr=3e-3),
            runs([("standard", "a", [0.01] * 5, [1.0] + [0.5] * 4)], lr=1e-2),
        ]
    )
    row = sensitivity.lr_sensitivity(data).iloc[0]
    assert (row.lrs, row.lrs_solving) == (3, 2) and row.per_lr == "0.001: 5/5, 0.003: 4/5, 0.01: 1/5"


def test_lr_sensitivity_marks_a_pruned_lr_as_a_lower_bound():
    """Under the criterion an lr stopped once it could no longer be chosen: its count is a lower bound, said so."""
    solved = runs([("standard", "a", [0.01] * 2, [1.0] * 2)], lr=1e-3).assign(until="solved", stop="solved")
    pruned = runs([("standard", "a", [0.01] * 2, [1.0] * 2)], lr=3e-3).assign(until="solved", stop="pruned")
    pruned["stop_step"] = [300, 500]
    row = sensitivity.lr_sensitivity(pd.concat([solved, pruned])).iloc[0]
    assert (row.lrs, row.lrs_solving, row.lrs_pruned) == (2, 1, 1)
    assert row.per_lr == "0.001: 2/2, 0.003: 0/2 (pruned by step 500)"


def test_best_lr_is_chosen_on_validation_never_on_test():
    good_val = runs([("standard", "a", [0.5, 0.5], [0.5, 0.5])], lr=1e-3, val_shift=-0.4)  # val 0.1, test 0.5
    good_test = runs([("standard", "a", [0.1, 0.1], [0.9, 0.9])], lr=3e-3, val_shift=0.3)  # val 0.4, test 0.1
    best = findings.best_lr(pd.concat([good_val, good_test]))
    assert len(best) == 1 and best.lr.iloc[0] == 1e-3
    tie = pd.concat([runs([("standard", "a", [0.2], [0.9])], lr=1e-2), runs([("standard", "a", [0.2], [0.9])], 1e-3)])
    assert findings.best_lr(tie).lr.iloc[0] == 1e-3  # ties go to the smaller lr


def test_a_diverged_seed_makes_its_lr_lose():
    a = runs([("standard", "a", [0.1, 0.1], [1.0, 1.0])], lr=1e-2)
    a.loc[1, "status"] = "diverged"
    b = runs([("standard", "a", [0.3, 0.3], [0.9, 0.9])], lr=1e-3)
    assert findings.best_lr(pd.concat([a, b])).lr.iloc[0] == 1e-3
    assert len(findings.at_best_lr(pd.concat([a, b]))) == 2


def test_sentences_quote_n_the_interval_and_the_counts():
    lines = words.sentences(DATA, ["standard", "stacked", "identity"])
    assert len(lines) == 2
    assert lines[0].startswith("**stacked** vs standard (each at its best lr, n = 5 seeds per side): worse on b (")
    assert "95% CI [" in lines[0] and "solved 0/5 vs 5/5, Fisher p = 0.0079" in lines[0]
    assert re.search(r"equivalent within a loss ratio of 1.5× on a \(×[0-9.]+–[0-9.]+\)\.$", lines[0])
    assert "Holm p = " in lines[0]
    assert "better on a" in lines[1]


def test_sentences_name_tasks_in_the_order_asked_whatever_order_the_store_listed_them():
    extra = runs(
        [
            ("standard", "c", [0.1, 0.11, 0.1, 0.12, 0.1], [1.0] * 5),
            ("stacked", "c", [0.1, 0.11, 0.1, 0.12, 0.1], [1.0] * 5),
        ]
    )
    data = pd.concat([DATA, extra])
    data = data[data.task != "b"]  # stacked is equivalent on a and c
    for shuffled in (data, data.iloc[::-1], data.sample(frac=1.0, random_state=3)):
        assert re.search(r"1.5× on a \(.*\), c \(.*\)\.$", words.sentences(shuffled, ["stacked"])[0])
        line = words.sentences(shuffled, ["stacked"], tasks=["c", "a"])[0]
        assert re.search(r"1.5× on c \(.*\), a \(.*\)\.$", line)


def test_summary_counts_solved_with_an_interval_and_diverged_as_unsolved():
    data = DATA.copy()
    data.loc[0, "status"] = "diverged"
    s = findings.summary(data, ["b", "a"], ["standard", "stacked", "identity"])
    assert list(zip(s.task, s.attention))[:2] == [("b", "standard"), ("b", "stacked")]
    row = s[(s.task == "a") & (s.attention == "standard")].iloc[0]
    assert (row.seeds, row.diverged, row.solved) == (5, 1, 4)
    assert (row.solved_lo, row.solved_hi) == pytest.approx(findings.wilson(4, 5))
    assert row.test_loss == pytest.approx(np.mean([0.12, 0.11, 0.10, 0.11]))  # the finished seeds


def test_improving_counts_unsolved_seeds_whose_validation_still_moves():
    data = runs([("stacked", "a", [1.0, 1.0, 0.01], [0.3, 0.4, 1.0])])
    data["val_loss_drop"] = [0.10, 0.001, 0.5]  # the solved seed's drop does not count
    assert findings.improving_share(data) == (1, 2)
    assert findings.summary(data, ["a"], ["stacked"]).improving.iloc[0] == 1


def _updates(rows) -> pd.DataFrame:
    """Tidy update-size metrics: rows (run_id, steps, W_QK size of layer 0, of layer 1)."""
    return pd.DataFrame(
        [
            (rid, step, f"update_qk.{layer}", v)
            for rid, steps, v0, v1 in rows
            for step in steps
            for layer, v in ((0, v0), (1, v1))
        ],
        columns=["run_id", "step", "metric", "value"],
    )


def test_mechanism_pairs_runs_of_one_task_seed_and_lr_over_the_steps_both_trained():
    both = pd.concat(
        [runs([("standard", "a", [0.1] * 2, [1.0] * 2)], 3e-3), runs([("stacked", "a", [0.1] * 2, [1.0] * 2)], 1e-3)]
    )
    both = pd.concat([both, both.assign(lr=0.01, run_id=both.run_id + "-hi")], ignore_index=True)
    metrics = _updates(
        [
            ("standard-a-0.003-0", [50, 100], 0.01, 0.03),  # layers averaged: 0.02
            ("stacked-a-0.001-0", [50, 100, 150, 200], 0.05, 0.07),  # 0.06 while standard trained; 9.0 after it stopped
            ("stacked-a-0.001-0", [250], 9.0, 9.0),
            ("standard-a-0.003-1", [50], 0.01, 0.01),
            ("stacked-a-0.001-1", [50], 0.04, 0.04),
            ("standard-a-0.003-0-hi", [50], 0.01, 0.01),
            ("stacked-a-0.001-0-hi", [50], 0.02, 0.02),
        ]
    )
    got = curves.step_size(metrics, both)
    assert got["pairs"].to_dict() == {0.01: 1} and not got["ratio"].index.isin([1e-3, 3e-3]).any()  # lrs differ
    same_lr = both.assign(lr=both.lr.replace({1e-3: 3e-3}))
    same_lr.loc[(same_lr.attention == "standard") & (same_lr.lr == 0.01), "val_loss"] = 0.01  # its best lr: 0.01
    got = curves.step_size(metrics, same_lr)
    assert got["ratio"][3e-3] == pytest.approx(math.sqrt(3.0 * 4.0))  # seed 0: 0.06/0.02, seed 1: 0.04/0.01
    assert got["ratio"][0.01] == pytest.approx(2.0) and got["pairs"].to_dict() == {3e-3: 2, 0.01: 1}
    text = words.mechanism(metrics, same_lr)
    assert "moves 2.7× as far per step" in text and "range 2.0–3.5×" in text and "3 pairs in all" in text
    assert "0.3× standard's on a." in text  # best lrs: stacked's 3e-3 (a tie: the lower) against 0.01
    assert curves.step_size(metrics[metrics.run_id.str.startswith("standard")], same_lr) is None


def test_each_task_is_read_at_its_longest_training():
    short = runs(
        [("standard", "a", [0.9, 0.9], [0.2, 0.2]), ("stacked", "a", [0.9], [0.2]), ("standard", "b", [0.1], [1.0])]
    )
    long = runs([("standard", "a", [0.1, 0.1], [1.0, 1.0]), ("stacked", "a", [0.2], [0.9])]).assign(steps=1600)
    kept = findings.at_longest(pd.concat([short, long], ignore_index=True))
    assert set(zip(kept.task, kept.steps)) == {("a", 1600), ("b", 800)}  # b was never retrained: it stays
    assert len(kept) == 4 and findings.at_longest(kept.iloc[0:0]).empty


def test_paired_difference_subtracts_the_reference_run_of_the_same_task_seed_and_step():
    runs = pd.DataFrame(
        [
            (a, "sort", s, f"{a}{s}", step, base + s + step)
            for a, base in (("standard", 0.0), ("tied_qk", 2.0))
            for s in (0, 1)
            for step in (0, 10)
        ],
        columns=["attention", "task", "seed", "run_id", "step", "value"],
    )
    d = curves.paired_difference(runs)
    assert set(d.attention) == {"tied_qk"} and len(d) == 4 and (d.value == 2.0).all()
    assert curves.paired_difference(runs[runs.seed == 0].assign(seed=[0, 0, 5, 5])).empty  # no seed pairs


def test_a_wall_clock_restarted_at_each_extension_is_joined_into_one_and_an_unbroken_one_kept():
    restarted = [(0, 1.0), (10, 3.0), (20, 0.5), (30, 1.5), (40, 0.25)]  # extended at 10 and again at 30
    rows = [("a", step, v) for step, v in restarted] + [("b", step, 2.0 * step) for step in (30, 0, 10)]
    wall = curves.joined_wall_time(pd.DataFrame(rows, columns=["run_id", "step", "value"]))
    assert wall[wall.run_id == "a"].value.tolist() == [1.0, 3.0, 3.5, 4.5, 4.75]
    assert wall[wall.run_id == "b"].value.tolist() == [0.0, 20.0, 60.0]


def test_update_sizes_read_one_protocol_and_stop_where_the_first_run_stopped():
    """A mean over runs of different lengths jumps where the shorter ones end (the Parameters page's chart did, at
    step 800): one_protocol keeps the criterion runs (each task at its longest cap) or, without any, the
    fixed-budget runs of the most common length; update_sizes ends each line at its runs' earliest last step."""
    table = pd.DataFrame(
        {
            "run_id": list("abcdefg"),
            "task": ["t"] * 7,
            "steps": [800, 800, 800, 1600, 6400, 6400, 3200],
            "until": ["steps", "steps", "steps", "steps", "solved", "solved", "solved"],
        }
    )
    assert list(findings.one_protocol(table).run_id) == ["e", "f"]
    assert list(findings.one_protocol(table[table.until == "steps"]).run_id) == ["a", "b", "c"]
    metrics = _updates([("e", [50, 100, 150], 0.1, 0.3), ("f", [50, 100], 0.3, 0.5)])
    runs_ef = table[table.run_id.isin(["e", "f"])].assign(attention="standard", lr=1e-3)
    sizes = curves.update_sizes(metrics, runs_ef)
    assert list(sizes.step) == [50, 100] and sizes.value.tolist() == pytest.approx([0.3, 0.3])  # not 0.2 at 150
