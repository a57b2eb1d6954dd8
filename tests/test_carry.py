"""`sweep --carry-from STORE`: the runs another store holds that a line would train again, carried over, not
trained, and every run ending as the straight sweep trains it (core.experiments.run_job.stopped_elsewhere)."""

import numpy as np
from tiny import close, criterion_argv, criterion_sweep, curves

from core.results import store as st
from core.results.weights import stored_tensors


def test_a_raise_carries_the_members_another_store_holds_stopped_before_its_cap_and_trains_the_rest_from_0(
    extension, tmp_path, capsys
):
    """`--carry-from P`: a scratch store with no lineage records raises a line that P (data/, say) holds at a
    shorter cap. A member P holds stopped before that cap is stored again as it was, not trained; a member P holds
    censored at the cap trains from step 0. Every run ends as the straight sweep to the higher cap trained it."""
    from core.cli import main

    _, straight = extension
    criterion_sweep(tmp_path / "p", 60)  # the shorter cap's runs, in a store of their own
    prior = st.load_runs(tmp_path / "p").set_index(["lr", "seed"])
    stopped = int((prior.stop != "cap").sum())
    assert 0 < stopped < len(prior)
    argv = [*criterion_argv(tmp_path / "s", 150), "--carry-from", str(tmp_path / "p")]
    assert main([*argv, "--dry-run"]) == 0
    assert f"would train {len(prior) - stopped} of {len(prior)} members" in capsys.readouterr().out
    assert main(argv) == 0
    runs = st.load_runs(tmp_path / "s").set_index(["lr", "seed"])
    for member, r in runs.iterrows():
        before = prior.loc[member]
        assert r.steps_from == (r.steps_done if before.stop != "cap" else 0)  # carried: no step taken here
    carried = runs[runs.steps_from > 0].index
    assert len(carried) == stopped and (runs.loc[carried, "stop_step"] == prior.loc[carried, "stop_step"]).all()
    for member in carried:  # whole: its weights, patterns and model as P kept them (prune then drops P's run)
        here, there = (
            stored_tensors(s, df.loc[member, "run_id"]) for s, df in ((tmp_path / "s", runs), (tmp_path / "p", prior))
        )
        assert here.keys() == there.keys() >= {"head_weights", "patterns", "examples", "state_dict"}
        assert all(np.array_equal(a[k], b[k]) for a, b in zip(here["head_weights"], there["head_weights"]) for k in b)
        assert [len(x) for x in here["head_weights"]] == [len(x) for x in there["head_weights"]] != []
        assert all(np.array_equal(here["state_dict"][k], v) for k, v in there["state_dict"].items())
        assert np.array_equal(here["patterns"], there["patterns"]) and np.array_equal(
            here["examples"], there["examples"]
        )
    # The carried members count towards the rule that stops a hopeless lr from the start, as a widened grid's
    # stored runs do: an lr they rule out stops at its first evaluation since, not where a straight sweep, still
    # training them, learnt it. So each run ends as the straight one did, or as its beginning, where ruled out.
    here, there = curves(tmp_path / "s"), curves(straight)
    assert here.keys() == there.keys()
    for key, (stop, solve, rows) in there.items():
        assert here[key][:2] == (stop, solve)  # the same stop, at the same solve step where solved
        steps = {r[:2] for r in here[key][2]}
        assert steps == {r[:2] for r in rows} or stop == "pruned" and steps < {r[:2] for r in rows}
        assert close([r[2] for r in here[key][2]], [r[2] for r in rows if r[:2] in steps])


def test_more_seeds_carry_every_run_another_store_holds_at_the_cap_and_train_only_the_new_seeds(tmp_path, capsys):
    """`--carry-from P` at P's own cap with more seeds (a point where a threshold is decided, at 10 seeds): each
    member P holds is stored again as it was, censored at the cap or not; only the new seed trains, and it ends
    as a sweep adding it to P itself trains it."""
    import shutil

    from core.cli import main

    criterion_sweep(tmp_path / "p", 60)
    prior = st.load_runs(tmp_path / "p")
    assert (prior.stop == "cap").any() and (prior.stop != "cap").any()
    shutil.copytree(tmp_path / "p", tmp_path / "q")

    def three_seeds(store):
        argv = criterion_argv(store, 60)
        argv[argv.index("--seeds") + 1] = "3"
        return argv

    argv = [*three_seeds(tmp_path / "s"), "--carry-from", str(tmp_path / "p")]
    assert main([*argv, "--dry-run"]) == 0
    assert f"would train 2 of {len(prior) + 2} members" in capsys.readouterr().out
    assert main(argv) == 0
    runs = st.load_runs(tmp_path / "s").set_index("run_id")
    assert set(prior.run_id) < set(runs.index)
    assert (runs.loc[prior.run_id, "steps_from"].to_numpy() == prior.steps_done.to_numpy()).all()  # not trained
    assert (runs.loc[~runs.index.isin(prior.run_id), "seed"] == 2).all()
    assert main(three_seeds(tmp_path / "q")) == 0
    here, there = curves(tmp_path / "s"), curves(tmp_path / "q")
    assert here.keys() == there.keys()
    for key, (stop, solve, rows) in there.items():
        assert here[key][:2] == (stop, solve) and [r[:2] for r in here[key][2]] == [r[:2] for r in rows]
        assert close([r[2] for r in here[key][2]], [r[2] for r in rows])


def test_a_run_carried_from_a_store_that_kept_no_tensors_is_stored_with_none(tmp_path):
    """prune keeps only the tensors the pages read: a run carried from a store without them gets no weights file,
    so an empty one cannot pass for its weights (`land --weights` checks for the files)."""
    from core.cli import main
    from core.results import runfile as rf

    criterion_sweep(tmp_path / "p", 60)
    prior = st.load_runs(tmp_path / "p")
    for rid in prior.run_id:
        rf.weights_path(tmp_path / "p", rid).unlink()
        rf.model_path(tmp_path / "p", rid).unlink(missing_ok=True)
    assert main([*criterion_argv(tmp_path / "s", 60), "--carry-from", str(tmp_path / "p")]) == 0
    runs = st.load_runs(tmp_path / "s")
    assert set(runs.run_id) == set(prior.run_id) and (runs.steps_from == runs.steps_done).all()  # all carried
    assert not any(rf.weights_path(tmp_path / "s", rid).exists() for rid in runs.run_id)
