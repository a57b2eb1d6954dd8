"""A raised cap replaces the shorter runs of its lineage: `prune --superseded` deletes them, and a sweep of the
replaced line trains nothing (the store holds each member's steps in its longer run). Fixed-budget runs have no
lineage: a cosine schedule ends at its cap, so a longer run is another experiment."""

import shutil

from tiny import criterion_argv, criterion_sweep, sweep

from core.cli import build_parser, main
from core.cli.sweep import plan_jobs
from core.experiments.outlook import outlook
from core.results import runfile as rf
from core.results import store as st
from core.results.superseded import superseded
from core.training.config import lineage_id


def test_prune_superseded_deletes_the_runs_a_higher_cap_replaced_and_only_those(extension, tmp_path, capsys):
    """Each member's run at 60 is replaced by its run at 150 (one lineage: the same configs but the cap, the id
    a sweep takes it up by), its weights with it; a run at 60 whose member has no longer run stays."""
    store = tmp_path / "a"
    shutil.copytree(extension[0], store)
    criterion_sweep(store, 60, lrs="3e-3")  # a third lr, only at 60
    runs = st.load_runs(store)
    (job,) = plan_jobs(build_parser().parse_args(criterion_argv(store, 150, "1e-3,1e-2")), None)
    for rid in runs.run_id:  # the id read back from a run file is the one the sweep computes for its member
        meta = rf.read_run_meta(rf.run_path(store, rid))
        if meta["train"]["lr"] in job.lrs:
            assert lineage_id(meta["model"], meta["task"], meta["train"], meta["seed"]) == job.lineage(
                (meta["train"]["lr"], meta["seed"])
            )
    replaced = runs[(runs.steps == 60) & (runs.lr != 3e-3)]
    junk = store / "runs" / "0000000000000000.parquet"
    junk.write_bytes(b"not a run")  # no run of the store: it replaces nothing, and is left as it is
    assert len(replaced) == 4 and superseded(store) == sorted(replaced.run_id)
    assert main(["prune", "--store", str(store), "--superseded"]) == 0
    out = capsys.readouterr()
    assert "deleted 4 runs a higher cap replaced" in out.out and f"skipping {junk}" in out.err
    junk.unlink()
    left = st.load_runs(store)
    assert set(left.run_id) == set(runs.run_id) - set(replaced.run_id) and superseded(store) == []
    assert not any(rf.weights_path(store, r).exists() for r in replaced.run_id)


def _pruned(extension, store):
    """Store a with its runs at 60 that a run at 150 replaced deleted, and a third lr's runs at 60 only."""
    shutil.copytree(extension[0], store)
    criterion_sweep(store, 60, lrs="3e-3")
    assert main(["prune", "--store", str(store), "--superseded"]) == 0
    return st.load_runs(store)


def test_a_sweep_of_a_line_a_higher_cap_replaced_trains_nothing_it_holds_longer(extension, tmp_path, capsys):
    """After the prune, the line at 60 finds each member of its two replaced lrs held at 150 and trains only
    what the store lacks at any cap: the one run at 60 deleted by hand, whose member has no longer run."""
    store = tmp_path / "a"
    runs = _pruned(extension, store)
    gone = runs[(runs.steps == 60)].run_id.iloc[0]
    rf.run_path(store, gone).unlink()
    argv = criterion_argv(store, 60, "1e-3,1e-2,3e-3")
    (job,) = plan_jobs(build_parser().parse_args(argv), None)
    row = outlook(store, [job]).iloc[0]
    assert (row["stored"], row["held longer"], row["from step 0"], row["member-steps"]) == (1, 4, 1, 60)
    capsys.readouterr()
    assert main(argv) == 0
    assert (
        "trained 1 runs" in (out := capsys.readouterr().out) and "skipped 1 already stored, 4 held at a higher" in out
    )
    after = st.load_runs(store)
    assert set(after.run_id) == set(runs.run_id) and superseded(store) == []


def test_fixed_budget_runs_of_two_caps_are_two_experiments(tmp_path, capsys):
    """A cosine run at 20 is not the first steps of one at 40: the shorter is trained after the longer, and
    `prune --superseded` keeps both."""
    flags = ["--task", "reverse", "--attention", "standard", "--seeds", "1", "--lr", "1e-3"]
    assert sweep(tmp_path, *flags, "--steps", "40") == 0
    capsys.readouterr()
    assert sweep(tmp_path, *flags, "--steps", "20") == 0
    assert "trained 1 runs" in capsys.readouterr().out
    assert superseded(tmp_path) == []
    assert main(["prune", "--store", str(tmp_path), "--superseded"]) == 0
    assert sorted(st.load_runs(tmp_path).steps) == [20, 40]
