"""`python -m core park`: a line longer than a session keeps its finished jobs in data/parked/ between sessions.
Parked, written back into a fresh scratch store and finished there, the line lands the same runs, curve for curve, as
the line run straight through; an unfinished job is never parked; landing deletes the parked folder; and no reader
of the store sees parked runs."""

import shutil
import sys

import pytest
from tiny import close, criterion_argv, curves

from core.cli import main
from core.cli.land import line_jobs
from core.experiments import parking, recipe
from core.results import packs
from core.results import store as st


def _argv(store) -> list[str]:
    """criterion_argv's sweep with two jobs: one per parameterization."""
    argv = criterion_argv(store, 60, "1e-3,1e-2")
    return [*argv[: argv.index("--attention") + 1], "standard,mqa", *argv[argv.index("--attention") + 2 :]]


LINE = "python -m core " + " ".join(_argv("data"))


@pytest.fixture(scope="module")
def straight(tmp_path_factory):
    """The line run straight through in one scratch store, recording its command. Read only."""
    store = tmp_path_factory.mktemp("park") / "straight"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sys, "argv", ["core", *_argv(store)])
        assert main(_argv(store)) == 0
    return store


def _job(attention: str):
    return next(job for job in line_jobs(LINE) if job.model.attention == attention)


def _cut_short(straight, to):
    """A copy of the straight store as a session's end leaves it: mqa's job unfinished (none of its runs stored)."""
    shutil.copytree(straight, to)
    for rid in _job("mqa").run_ids().values():
        st.run_path(to, rid).unlink()
    return to


def test_a_parked_line_finished_on_a_fresh_machine_lands_the_runs_of_the_line_run_straight(
    straight, tmp_path, monkeypatch, capsys
):
    data = tmp_path / "data"
    cut = _cut_short(straight, tmp_path / "session1")
    assert main(["park", LINE, "--from", str(cut), "--store", str(data)]) == 0
    out = capsys.readouterr().out
    assert "parked 4 runs and 1 sweep records" in out and "4 of the line's 8 members, 1 of its 2 jobs whole" in out
    where = parking.folder(data, LINE)
    assert set(packs.packed(where)) == set(_job("standard").run_ids().values())
    assert st.load_runs(data).empty  # no reader of the store opens the parked folder
    fresh = tmp_path / "session2"  # a fresh machine: no scratch store, only what the repository holds
    todo_line = LINE.replace("--store data", f"--store {fresh}")  # as todo --into prints it: the same line
    assert main(["park", todo_line, "--into", str(fresh), "--store", str(data)]) == 0
    assert "wrote 4 parked runs and 1 sweep records" in capsys.readouterr().out
    assert main(["park", LINE, "--into", str(fresh), "--store", str(data)]) == 0
    assert "wrote 0 parked runs and 0 sweep records" in capsys.readouterr().out  # twice: nothing new
    main(_argv(fresh) + ["--dry-run"])
    assert "would train 4 of 8 members" in capsys.readouterr().out  # only mqa's job is left
    monkeypatch.setattr(sys, "argv", ["core", *_argv(fresh)])  # the command its record holds
    monkeypatch.setattr(st, "sweep_record_name", lambda: "sweep-session2")  # not the first's, within one second
    assert main(_argv(fresh)) == 0
    assert curves(fresh) == curves(straight)  # the same runs, evaluation for evaluation
    monkeypatch.setattr(recipe, "CRITERION_SWEEPS", (*recipe.CRITERION_SWEEPS, LINE))
    assert main(["land", LINE, "--from", str(fresh), "--store", str(data)]) == 0
    assert "deleted the line's parked runs" in (out := capsys.readouterr().out) and "with 0 parked sweep" in out
    assert not (data / parking.PARKED).exists() and curves(data) == curves(straight)
    assert len(list((data / "bench").glob("sweep-*.parquet"))) == 2  # both sessions' records: compute counted


def test_landing_keeps_the_parked_records_that_the_scratch_store_lacks(straight, tmp_path, monkeypatch, capsys):
    data, cut = tmp_path / "data", _cut_short(straight, tmp_path / "cut")
    assert main(["park", LINE, "--from", str(cut), "--store", str(data)]) == 0
    fresh = tmp_path / "fresh"  # the whole line stored, the parked runs not written back: no record of theirs
    shutil.copytree(straight / "runs", fresh / "runs")
    monkeypatch.setattr(recipe, "CRITERION_SWEEPS", (*recipe.CRITERION_SWEEPS, LINE))
    assert main(["land", LINE, "--from", str(fresh), "--store", str(data)]) == 0
    out = capsys.readouterr().out
    assert "0 sweep records" in out and "with 1 parked sweep records" in out and not (data / parking.PARKED).exists()
    assert [p.name for p in (data / "bench").glob("sweep-*.parquet")] == [
        p.name for p in (straight / "bench").glob("sweep-*.parquet")
    ]  # the parked record: its compute is not lost with the parked folder


def test_parking_holds_every_stored_run_of_the_line_and_adds_only_what_is_new(straight, tmp_path, capsys):
    data, cut = tmp_path / "data", _cut_short(straight, tmp_path / "cut")
    st.run_path(cut, sorted(_job("standard").run_ids().values())[0]).unlink()  # no job whole
    assert main(["park", LINE, "--from", str(cut), "--store", str(data)]) == 0
    assert "parked 3 runs and 1 sweep records" in capsys.readouterr().out
    assert set(packs.packed(parking.folder(data, LINE))) < set(_job("standard").run_ids().values())
    elsewhere = LINE.replace("--store data", f"--store {straight}")  # the same line, as another machine runs it
    assert main(["park", elsewhere, "--from", str(straight), "--store", str(data)]) == 0
    assert (parking.folder(data, LINE) / "line.txt").read_text() == LINE + "\n"  # the first park's text stays
    assert "8 of the line's 8 members, 2 of its 2 jobs whole" in capsys.readouterr().out
    assert main(["park", LINE, "--from", str(straight), "--store", str(data)]) == 0
    assert "parked 0 runs and 0 sweep records" in capsys.readouterr().out


def test_a_run_the_store_holds_already_is_not_parked(straight, tmp_path, capsys):
    data = tmp_path / "data"
    shutil.copytree(straight / "runs", data / "runs")
    assert main(["park", LINE, "--from", str(straight), "--store", str(data)]) == 0
    assert "parked 0 runs and 1 sweep records" in capsys.readouterr().out


def test_a_line_run_in_parts_over_sessions_lands_the_runs_of_the_line_run_straight(
    straight, tmp_path, monkeypatch, capsys
):
    """`sweep --part K/N` trains each job's lrs K, K+N, ... with every seed: two sessions of one part each, parked
    between, hold the line's runs, and its records count as the line's. The part trained apart from the other lr
    trains each run at least as far as the line run straight (an lr it would stop as hopeless goes on)."""
    from core.experiments.lines import line_key

    data = tmp_path / "data"
    for k, session in ((1, "session1"), (2, "session2")):
        scratch = tmp_path / session
        assert main(["park", LINE, "--into", str(scratch), "--store", str(data)]) == 0
        argv = [*_argv(scratch), "--part", f"{k}/2"]
        monkeypatch.setattr(sys, "argv", ["core", *argv])
        monkeypatch.setattr(st, "sweep_record_name", lambda session=session: f"sweep-{session}")
        assert main(argv) == 0
        assert main(["park", LINE, "--from", str(scratch), "--store", str(data)]) == 0
        if k == 1:  # lr 1e-3 of each job, every seed
            assert "4 of the line's 8 members, 0 of its 2 jobs whole" in capsys.readouterr().out
    out = capsys.readouterr().out
    assert "8 of the line's 8 members, 2 of its 2 jobs whole" in out and line_key(
        "python -m core " + " ".join(argv)
    ) == line_key(LINE)
    assert "would train 0 of 8 members" in _dry_run(scratch, capsys)
    whole, parts = curves(straight), curves(scratch)
    assert whole.keys() == parts.keys()
    for key, (stop, solve, curve) in whole.items():  # the same run, as far as the line trained it
        assert _prefix(parts[key][2], curve) and (stop == "pruned" or parts[key][:2] == (stop, solve))
    monkeypatch.setattr(recipe, "CRITERION_SWEEPS", (*recipe.CRITERION_SWEEPS, LINE))
    assert main(["land", LINE, "--from", str(scratch), "--store", str(data)]) == 0
    assert len(list((data / "bench").glob("sweep-*.parquet"))) == 2  # both parts' records: compute counted


def _dry_run(store, capsys) -> str:
    capsys.readouterr()
    main([*_argv(store), "--dry-run"])
    return capsys.readouterr().out


def _prefix(longer, curve) -> bool:
    """`curve`'s evaluations are `longer`'s at the same steps, to rounding."""
    at = {(m, s): v for m, s, v in longer}
    return all((m, s) in at for m, s, _ in curve) and close([at[(m, s)] for m, s, _ in curve], [v for *_, v in curve])


@pytest.mark.parametrize(
    ("part", "message"),
    [("3/2", "--part: must be K/N with 1 <= K <= N"), ("x", "--part: must be K/N"), ("1/3", "at most the 2 learning")],
)
def test_a_part_out_of_range_is_a_one_line_error(tmp_path, capsys, part, message):
    with pytest.raises(SystemExit) as exit_:
        main([*_argv(tmp_path / "s"), "--part", part])
    assert exit_.value.code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "s").exists()


def test_a_line_that_is_no_sweep_is_a_one_line_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["park", "python -m core summary --store data", "--into", str(tmp_path / "s")])
    assert exit_.value.code == 2 and "line: must be a sweep command" in capsys.readouterr().err
    assert not (tmp_path / "s").exists()


def test_a_parked_runs_curve_is_thinned_as_index_slim_thins_data(straight, tmp_path):
    """A long run's curve goes into the parked pack at the steps `index --slim` keeps (runfile.thin_curve), its
    metadata as it was: a parked job takes a few kB a run, and lands as it would have after slimming."""
    import json

    import pandas as pd

    from core.results import runfile as rf

    rid = sorted(_job("standard").run_ids().values())[0]
    meta = rf.read_run_meta(st.run_path(straight, rid))
    steps = range(10, 4010, 10)  # 400 evaluations every 10 steps
    long = pd.DataFrame({"step": [s for s in steps for _ in (0, 1)], "metric": ["val_loss", "val_acc"] * len(steps)})
    long["value"] = [v for s in steps for v in (1 / s, min(1.0, s / 5000))]
    long.insert(0, "run_id", rid)
    scratch = tmp_path / "scratch"
    rf.write_run_table(st.run_path(scratch, rid), long, meta)
    (row,) = parking._table(scratch, [rid]).to_pylist()
    kept = rf.thin_curve(long, 10, [(meta.get("final") or {}).get("solve_step")])
    assert set(zip(row["step"], row["metric"])) == set(zip(kept.step, kept.metric)) and len(kept) < len(long) / 4
    assert json.loads(row["meta"]) == meta


def test_reproduce_states_what_the_parked_lines_take_of_the_stores_room(straight, tmp_path):
    from core.report.reproduce import _size_sentence

    data = tmp_path / "data"
    shutil.copytree(straight / "runs", data / "runs")
    assert "parked" not in _size_sentence(data)
    assert main(["park", LINE, "--from", str(straight), "--store", str(data)]) == 0
    assert "are the stored runs of 1 unfinished line(s) parked in `data/parked/`" in _size_sentence(data)
