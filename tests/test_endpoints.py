"""The criterion runs' endpoints: solved by the cap and steps to solve, against standard, Holm over the table."""

import math
from unittest import mock

import pandas as pd

from core.analysis import endpoints, findings, survival


def runs(cells: dict) -> pd.DataFrame:
    """cells: attention -> list of solve steps (None: censored at the cap, 1000)."""
    rows = []
    for name, solves in cells.items():
        for seed, s in enumerate(solves):
            rows.append(
                {
                    "run_id": f"{name}{seed}",
                    "attention": name,
                    "task": "reverse",
                    "seed": seed,
                    "lr": 1e-3,
                    "steps": 1000,
                    "status": "ok",
                    "until": "solved",
                    "stop": "cap" if s is None else "solved",
                    "solve_step": math.nan if s is None else float(s),
                    "val_loss": 0.1,
                    "test_acc": 0.5 if s is None else 1.0,
                }
            )
    return pd.DataFrame(rows)


CELLS = {
    "standard": [100, 150, 100, 200, 150, 100, 150, 100, 200, 150],
    "stacked": [800, 900, None, 700, None, 850, 900, None, 750, 800],
    "bilinear": [100, 200, 150, 100, 150, 100, 200, 150, 100, 150],
}


def test_each_cell_has_both_endpoints_with_intervals_and_the_family_is_the_table():
    table = endpoints.endpoints(runs(CELLS), list(CELLS), ["reverse"]).set_index("attention")
    assert table.loc["stacked", "solved"] == 7 and table.loc["stacked", "seeds"] == 10
    assert table.loc["stacked", "solved_lo"] < 0.7 < table.loc["stacked", "solved_hi"]
    d = [800, 900, 1000, 700, 1000, 850, 900, 1000, 750, 800]
    assert table.loc["stacked", ["median_steps", "median_lo", "median_hi"]].tolist() == list(
        survival.km_median(d, [x < 1000 for x in d])
    )
    p = table[["fisher_p", "logrank_p"]].loc[["stacked", "bilinear"]].to_numpy().ravel()
    assert (table.loc[["stacked", "bilinear"], ["fisher_holm", "logrank_holm"]].to_numpy().ravel() >= p).all()
    assert endpoints.verdict(table.reset_index().iloc[1]) == "slower"  # 7/10 vs 10/10 is not a difference shown
    assert endpoints.verdict(table.reset_index().iloc[2]) == "no difference shown"


def test_runs_trained_to_a_step_count_have_no_endpoints():
    old = runs(CELLS).assign(until="steps")
    assert endpoints.endpoints(old, list(CELLS), ["reverse"]).empty


def test_a_cell_whose_censored_seeds_were_still_improving_at_the_cap_is_open_not_a_failure():
    df = runs(CELLS).assign(val_loss_drop=0.0, val_acc_gain=0.0)
    stuck = (df.attention == "stacked") & (df.stop == "cap")
    flat = endpoints.endpoints(df, list(CELLS), ["reverse"]).set_index("attention")
    assert flat.loc["stacked", "censored"] == 3 and flat.loc["stacked", "improving"] == 0
    assert endpoints.verdict(flat.reset_index().iloc[1]) == "slower"  # flat at the cap: a result
    df.loc[stuck & (df.seed == 2), "val_acc_gain"] = 0.05  # one of three still climbing: over a tenth
    table = endpoints.endpoints(df, list(CELLS), ["reverse"]).reset_index(drop=True)
    assert endpoints.verdict(table.iloc[1]) == "slower; open: 1 of 3 censored seeds still improving"
    assert endpoints.verdict(table.iloc[0]) == "reference" and not endpoints.is_open(table.iloc[2])


def test_the_open_cells_are_listed_with_every_command_of_their_point():
    df = runs(CELLS | {"mqa": [None] * 5}).assign(val_loss_drop=0.0, val_acc_gain=0.0, n_kv_heads=4, command="all")
    df.loc[df.attention == "mqa", ["n_kv_heads", "command"]] = [1, "mqa"]  # its own sweep, its own n_kv_heads
    assert endpoints.open_cells(df).empty  # nothing improving at the cap
    df.loc[df.attention.isin(["stacked", "mqa"]) & (df.seed == 2), "val_acc_gain"] = 0.05
    cells = endpoints.open_cells(df).set_index("attention")
    assert list(cells.index) == ["stacked", "mqa"] and (cells.cap == 1000).all()
    assert cells.loc["stacked", ["censored", "improving"]].tolist() == [3, 1]
    assert cells.loc["mqa", ["censored", "improving"]].tolist() == [5, 1]
    assert (cells.commands == ("all", "mqa")).all()  # one point: a line that raises it names both sweeps
    assert (cells.trained == ("standard", "stacked", "bilinear", "mqa")).all() and (cells.point_seeds == 10).all()
    assert (cells.lr == 1e-3).all() and (cells.point_lrs == (1e-3,)).all()  # its best lr, and its point's lrs
    longer = df.attention == "mqa"  # raised alone: at its own cap it is a point of its own
    df.loc[longer, ["steps", "command"]] = [2000, "mqa to 2000"]
    cells = endpoints.open_cells(df).set_index("attention")
    assert cells.loc["mqa", "commands"] == ("mqa to 2000",) and cells.loc["mqa", "trained"] == ("mqa",)
    assert cells.loc["stacked", "commands"] == ("all",) and "mqa" not in cells.loc["stacked", "trained"]


def three_lrs() -> pd.DataFrame:
    """CELLS at 1e-3, and two more lrs: standard fastest at 3e-3 (the middle), stacked's best staying at 1e-3 (the
    lowest: nothing else solves), bilinear fastest at 1e-2 (the highest)."""
    fast, never = [50] * 10, [None] * 10
    more = {3e-3: {"standard": fast, "stacked": never, "bilinear": CELLS["bilinear"]}}
    more[1e-2] = {"standard": never, "stacked": never, "bilinear": fast}
    parts = [runs(CELLS)] + [
        runs(c).assign(lr=lr, run_id=lambda d, lr=lr: d.run_id + f"@{lr:g}") for lr, c in more.items()
    ]
    df = pd.concat(parts, ignore_index=True).assign(val_loss_drop=0.0, val_acc_gain=0.0, command="grid")
    return df.assign(stop_step=df.solve_step.fillna(df.steps))


def test_a_cell_whose_best_lr_is_an_end_of_its_points_lrs_is_listed_with_its_point():
    cells = endpoints.edge_cells(three_lrs()).set_index("attention")
    assert list(cells.index) == ["stacked", "bilinear"]  # standard's best, 3e-3, is inside the grid
    assert cells.loc["stacked", "lr"] == 1e-3 and cells.loc["bilinear", "lr"] == 1e-2
    assert (cells.point_lrs == (1e-3, 3e-3, 1e-2)).all() and (cells.commands == ("grid",)).all()
    assert (cells.trained == ("standard", "stacked", "bilinear")).all() and (cells.cap == 1000).all()
    assert endpoints.open_cells(three_lrs()).empty  # an end of the grid is not an open cell
    one_lr = runs(CELLS).assign(command="grid")
    assert endpoints.edge_cells(one_lr).empty  # no grid to sit at the end of


def test_the_protocol_of_each_task_says_criterion_or_fixed_budget_and_the_seeds():
    crit = runs(CELLS)
    fixed = crit.assign(task="sort", until="steps", steps=800).iloc[:25]
    got = endpoints.protocol(pd.concat([crit, fixed])).set_index("task")
    assert got.loc["reverse"].tolist() == ["solved", 1000, 10] and got.loc["sort"].tolist() == ["steps", 800, 10]


def test_the_smallest_attainable_holm_p_says_when_a_table_cannot_show_a_difference():
    """Five seeds a side over 28 comparisons cannot reach Holm p < 0.05 even for fully separated groups (the
    log-rank p of 5 against 5 is 0.0018); ten seeds can. The note says so only where it bites."""
    import pandas as pd

    from core.analysis import endpoint_words, endpoints

    def table(n, cells):
        rows = [{"attention": "standard", "seeds": n, "ref_seeds": float("nan")}]
        return pd.DataFrame(rows + [{"attention": f"v{i}", "seeds": n, "ref_seeds": n} for i in range(cells)])

    assert endpoints.smallest_holm_p(table(5, 14)) > 0.05 and "0.052" in endpoint_words.power_note(table(5, 14))
    assert endpoints.smallest_holm_p(table(10, 14)) < 0.001 and endpoint_words.power_note(table(10, 14)) == ""
    mixed = pd.concat([table(10, 14).assign(task="recall"), table(5, 14).assign(task="copy")])  # 56 comparisons
    note = endpoint_words.power_note(mixed)
    assert "on copy is 0.1" in note and "it can on recall (10 seeds a side)" in note


def test_a_glance_names_only_the_cells_that_part_from_standard():
    import pandas as pd

    from core.analysis import endpoint_words

    def row(task, solved, median, ref_median=400.0, ref_solved=5, censored=0, improving=0):
        return {
            "attention": "x",
            "task": task,
            "solved": solved,
            "ref_seeds": 5,
            "seeds": 5,
            "ref_solved": ref_solved,
            "median_steps": median,
            "ref_median": ref_median,
            "censored": censored,
            "improving": improving,
        }

    table = pd.DataFrame(
        [
            row("a", 5, 2400.0),
            row("b", 5, 450.0),
            row("c", 3, float("inf"), censored=2, improving=2),
            row("d", 5, 300.0, ref_solved=4),
        ]
    )
    assert endpoint_words.glance(table, "x") == "`x` 6× steps on a, 3/5 open on c"  # b: 1.1×; d: more solved
    assert endpoint_words.glance(table.iloc[[1]], "x") == "`x` about standard's steps on every task"
    assert endpoint_words.glance(table, "y") == ""
    # open is one rule (endpoints.is_open): one of 20 censored seeds improving is under a tenth, a result
    few = row("c", 3, float("inf"), censored=20, improving=1)
    assert not endpoints.is_open(pd.Series(few))
    assert endpoint_words.glance(pd.DataFrame([few]), "x") == "`x` 3/5 on c"
    assert endpoint_words.cell(pd.Series(few)) == "3/5"


def test_task_verdicts_join_both_protocols_and_the_verdict_line_names_them():
    """The Overview's per-parameterization verdicts: fixed-budget tasks from compare_to, criterion tasks from
    matrix_verdict, one table; the line names the tasks that differ and counts the rest when short."""
    from core.analysis import endpoint_words

    cmp = pd.DataFrame({"attention": ["tied_qk"], "task": ["sort"], "verdict": ["equivalent"]})
    ends = pd.DataFrame(
        {
            "attention": ["tied_qk", "tied_qk", "standard"],
            "task": ["induction", "reverse", "induction"],
        }
    )
    with mock.patch.object(endpoints, "matrix_verdict", lambda r: "worse" if r.task == "induction" else "inconclusive"):
        table = endpoints.task_verdicts(cmp, ends)
    assert sorted(map(tuple, table.to_numpy().tolist())) == [
        ("standard", "induction", "worse"),
        ("tied_qk", "induction", "worse"),
        ("tied_qk", "reverse", "inconclusive"),
        ("tied_qk", "sort", "equivalent"),
    ]
    assert endpoints.task_verdicts(pd.DataFrame(), pd.DataFrame()).empty
    line = endpoint_words.verdict_line(table, ["tied_qk"])
    assert line == "`tied_qk` worse on induction; inconclusive on reverse; equivalent on sort"
    assert endpoint_words.verdict_line(table, ["tied_qk"], short=True) == (
        "`tied_qk` worse on induction, inconclusive on 1 task, equivalent on 1 task"
    )


def test_solved_by_the_cap_and_steps_to_solve_count_one_event():
    """Met on validation and confirmed on test (within TEST_MARGIN) is the event of both endpoints; a seed whose
    test accuracy does not confirm is neither solved nor an event, censored where it stopped."""
    df = runs({"standard": [100, 100, 100, 100], "stacked": [200, 200, 300, 400]})
    df["stop_step"] = df.solve_step.fillna(1000) + 50  # stopped at the second evaluation at SOLVED
    df.loc[df.attention == "stacked", "test_acc"] = [0.99, findings.SOLVED - findings.TEST_MARGIN / 2, 0.9, 0.5]
    assert findings.solved(df).tolist() == [True] * 4 + [True, True, False, False]
    row = endpoints.endpoints(df, ["standard", "stacked"], ["reverse"]).set_index("attention").loc["stacked"]
    assert row.solved == 2
    d, e = endpoints.durations(df[df.attention == "stacked"])
    assert d.tolist() == [200, 200, 350, 450] and e.tolist() == [True, True, False, False]


def test_a_step_budget_run_is_solved_only_at_solved_on_test():
    df = runs({"standard": [100, 100]}).assign(until="steps", stop="cap")
    df["test_acc"] = [findings.SOLVED, findings.SOLVED - 0.001]
    assert findings.solved(df).tolist() == [True, False]
    assert not findings.solved(df.assign(status="diverged")).any()


def test_the_layer_control_reads_each_cell_at_its_own_longest_cap_and_counts_improving_seeds():
    """A control cell whose unsolved seeds were still improving is extended to a higher cap alone; the table reads
    it there and every other cell at its own cap, and says how many unsolved seeds still improve."""
    two = runs({"standard": [100] * 3, "tied_qk": [200] * 3}).assign(n_layers=2)
    one = runs({"standard": [None] * 3, "tied_qk": [None] * 3}).assign(n_layers=1, val_loss_drop=0.0)
    longer = one[one.attention == "tied_qk"].assign(steps=2000, run_id=lambda d: d.run_id + "x")
    longer.loc[longer.seed == 0, ["stop", "solve_step", "test_acc"]] = ["solved", 1500.0, 1.0]
    longer.loc[longer.seed == 1, "val_loss_drop"] = 0.5
    table = endpoints.layer_control(pd.concat([two, one, longer]).assign(task="induction"))
    got = table.set_index(["attention", "n_layers"])[["cap", "solved", "seeds", "improving"]]
    assert got.loc[("tied_qk", 1)].tolist() == [2000, 1, 3, 1] and got.loc[("standard", 1)].tolist() == [1000, 0, 3, 0]
    assert got.loc[("standard", 2)].tolist() == [1000, 3, 3, 0]


def test_the_layer_control_sets_beside_it_only_the_two_layer_cells_of_its_own_size():
    """A scan point of another size (two heads) trained to the same cap as the bundled two-layer cells is not
    one of them: the control's two-layer column counts the bundled point's seeds alone."""
    size = {"d_model": 64, "n_heads": 4, "d_head": 16, "mlp": True, "precision": "fp32", "length": 12, "n_symbols": 32}
    two = runs({"standard": [100] * 3}).assign(n_layers=2, **size)
    scan = two.assign(n_heads=2, d_head=32, run_id=lambda d: d.run_id + "h2", stop="cap", solve_step=math.nan)
    one = runs({"standard": [None] * 3}).assign(n_layers=1, val_loss_drop=0.0, **size)
    table = endpoints.layer_control(pd.concat([two, scan, one]).assign(task="induction"))
    got = table.set_index(["attention", "n_layers"])[["solved", "seeds"]]
    assert got.loc[("standard", 2)].tolist() == [3, 3] and got.loc[("standard", 1)].tolist() == [0, 3]
