"""`python -m core land`: a finished recipe line's runs and sweep records go from the scratch store that trained
it into data/ (the runs as one pack), exactly the members the line plans and only its own records; nothing data/
holds is overwritten; an unfinished or undocumented line, or one that would raise a point's cap for only some of
its parameterizations, is refused in one line with nothing written."""

import sys

import pytest
from tiny import criterion_argv, criterion_sweep

from core.cli import main
from core.cli.land import line_jobs
from core.experiments import recipe
from core.results import packs
from core.results import runfile as rf
from core.results import store as st


def _line(steps: int, lrs: str) -> str:
    """The recipe line of criterion_argv's sweep, as CRITERION_SWEEPS would spell it (its store data/)."""
    return "python -m core " + " ".join(criterion_argv("data", steps, lrs))


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """A scratch store that ran two lines, each sweep recording its own command. Read only."""
    store = tmp_path_factory.mktemp("land") / "scratch"
    with pytest.MonkeyPatch.context() as mp:
        for lrs, name in (("1e-3,1e-2", "sweep-a"), ("3e-3", "sweep-b")):
            mp.setattr(sys, "argv", ["core", *criterion_argv(store, 60, lrs)])  # the command its record holds
            mp.setattr(st, "sweep_record_name", lambda name=name: name)  # two sweeps within one second
            criterion_sweep(store, 60, lrs)
    return store


@pytest.fixture(autouse=True)
def documented(monkeypatch):
    """The first of the scratch store's lines is a recipe line."""
    monkeypatch.setattr(recipe, "CRITERION_SWEEPS", (*recipe.CRITERION_SWEEPS, _line(60, "1e-3,1e-2")))


def _ids(line: str) -> set[str]:
    return {rid for job in line_jobs(line) for rid in job.run_ids().values()}


def test_land_copies_the_lines_runs_and_records_only_and_never_overwrites(scratch, tmp_path, capsys):
    data = tmp_path / "data"
    line, ids = _line(60, "1e-3,1e-2"), _ids(_line(60, "1e-3,1e-2"))
    held = sorted(ids)[0]
    rf.run_path(data, held).parent.mkdir(parents=True)
    rf.run_path(data, held).write_bytes(b"held")  # a file data/ holds stays as it is, whatever it holds
    assert main(["land", line, "--from", str(scratch), "--store", str(data)]) == 0
    assert f"copied {len(ids) - 1} runs into {data} as one pack (1 held there already" in capsys.readouterr().out
    assert set(packs.packed(data)) == ids - {held} and len(ids) == 4 and len(packs.pack_paths(data)) == 1
    assert [p.name for p in (data / "runs").iterdir()] == [f"{held}.parquet"]
    assert rf.run_path(data, held).read_bytes() == b"held"
    assert [p.name for p in (data / "bench").iterdir()] == ["sweep-a.parquet"]  # not the other line's record
    assert not (data / "weights").exists()  # run files only, unless --weights
    assert packs.unpack(data, tmp_path / "back", ids - {held}) == 3
    for rid in ids - {held}:  # each packed run is its scratch file, byte for byte, once written out again
        assert rf.run_path(tmp_path / "back", rid).read_bytes() == rf.run_path(scratch, rid).read_bytes()
    assert main(["land", line, "--from", str(scratch), "--store", str(data)]) == 0  # twice: nothing new
    assert "copied 0 runs" in capsys.readouterr().out and len(list((data / "bench").iterdir())) == 1


def test_land_copies_the_record_of_a_sweep_that_named_the_lines_flags_in_another_order(
    scratch, tmp_path, monkeypatch, capsys
):
    head, *flags = _line(60, "1e-3,1e-2").split(" --")
    line = " --".join([head, *reversed(flags)])  # the same runs: argparse reads flags in any order
    monkeypatch.setattr(recipe, "CRITERION_SWEEPS", (*recipe.CRITERION_SWEEPS, line))
    assert main(["land", line, "--from", str(scratch), "--store", str(tmp_path / "data")]) == 0
    assert "copied 4 runs" in capsys.readouterr().out
    assert [p.name for p in (tmp_path / "data" / "bench").iterdir()] == ["sweep-a.parquet"]


def test_land_with_weights_copies_each_runs_weights_and_model(scratch, tmp_path, capsys):
    data, ids = tmp_path / "data", _ids(_line(60, "1e-3,1e-2"))
    assert main(["land", _line(60, "1e-3,1e-2"), "--from", str(scratch), "--store", str(data), "--weights"]) == 0
    assert f"{2 * len(ids)} weights and model files" in capsys.readouterr().out
    for rid in ids:
        assert rf.weights_path(data, rid).read_bytes() == rf.weights_path(scratch, rid).read_bytes()
        assert rf.model_path(data, rid).exists()
    assert set(st.load_runs(data).run_id) == ids


def test_a_raised_line_whose_scratch_runs_lack_the_kept_weights_is_refused_with_nothing_copied(
    scratch, tmp_path, monkeypatch, capsys
):
    """prune --superseded deletes the shorter run with its weights: a raised run landing without them would leave
    the pages none, so the line is refused until the scratch store holds them; then it lands with them."""
    import shutil

    data, raised, low, high = tmp_path / "data", tmp_path / "raised", _line(60, "1e-3,1e-2"), _line(150, "1e-3,1e-2")
    monkeypatch.setattr(recipe, "CRITERION_SWEEPS", (*recipe.CRITERION_SWEEPS, high))
    assert main(["land", low, "--from", str(scratch), "--store", str(data), "--weights"]) == 0
    shutil.copytree(scratch, raised)
    criterion_sweep(raised, 150)  # each member extended from its 60 end state, or stored again as it stopped
    lost = sorted(_ids(high))[0]
    rf.model_path(raised, lost).unlink()
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main(["land", high, "--from", str(raised), "--store", str(data), "--weights"])
    err = capsys.readouterr().err.strip()
    assert exit_.value.code == 1 and len(err.splitlines()) == 1
    assert f"1 runs (first {lost}) lack in {raised} the weights or model that {data} keeps" in err
    assert set(packs.packed(data)) == _ids(low) and len(list((data / "bench").iterdir())) == 1
    criterion_sweep(tmp_path / "fresh", 150)  # trained again: every run with its weights and model
    assert main(["land", high, "--from", str(tmp_path / "fresh"), "--store", str(data), "--weights"]) == 0
    assert rf.model_path(data, lost).exists() and set(packs.packed(data)) >= _ids(high)


def test_a_line_raising_a_points_cap_for_some_of_its_parameterizations_is_refused_until_it_holds_all(
    scratch, tmp_path, monkeypatch, capsys
):
    """A point is read at its longest training: landing standard alone at a higher cap would drop stacked, trained
    only to the lower one, out of the point, so that line is refused (and sweeping it warns before it trains); the
    line with both lands."""
    both = "--attention standard,stacked"
    data, low, alone, high = (
        tmp_path / "data",
        _line(60, "1e-3").replace("--attention standard", both),
        _line(150, "1e-3"),
        _line(150, "1e-3").replace("--attention standard", both),
    )
    monkeypatch.setattr(recipe, "CRITERION_SWEEPS", (*recipe.CRITERION_SWEEPS, low, alone, high))
    for line in (low, high):  # the scratch store holds every line's members
        main([*line.removeprefix("python -m core ").replace("--store data", f"--store {tmp_path / 's'}").split()])
    assert main(["land", low, "--from", str(tmp_path / "s"), "--store", str(data)]) == 0
    capsys.readouterr()
    for line, warned in ((alone, True), (high, False)):  # a sweep warns before it trains such a line
        main([*line.removeprefix("python -m core ").replace("--store data", f"--store {data}").split(), "--dry-run"])
        err = capsys.readouterr().err
        assert ("warning: this sweep raises a point's cap past every run" in err) is warned
        assert ("of reverse: stacked:" in err) is warned
    with pytest.raises(SystemExit) as exit_:
        main(["land", alone, "--from", str(tmp_path / "s"), "--store", str(data)])
    err = capsys.readouterr().err.strip()
    assert exit_.value.code == 1 and len(err.splitlines()) == 1
    assert f"raise a point's cap past every run {data} holds there of reverse: stacked;" in err
    assert set(packs.packed(data)) == _ids(low)  # nothing copied
    assert main(["land", high, "--from", str(tmp_path / "s"), "--store", str(data)]) == 0
    assert set(packs.packed(data)) == _ids(low) | _ids(high)


def test_an_unfinished_line_is_refused_in_one_line_with_nothing_written(scratch, tmp_path, monkeypatch, capsys):
    line = _line(150, "1e-3,1e-2")  # the line raised: its members are not in the scratch store at 150
    monkeypatch.setattr(recipe, "CRITERION_SWEEPS", (*recipe.CRITERION_SWEEPS, line))
    with pytest.raises(SystemExit) as exit_:
        main(["land", line, "--from", str(scratch), "--store", str(tmp_path / "data")])
    err = capsys.readouterr().err.strip()
    assert exit_.value.code == 1 and len(err.splitlines()) == 1
    assert "4 of 4 members are not stored" in err and not (tmp_path / "data").exists()


def test_a_line_that_would_take_the_bundled_store_past_its_size_limit_is_refused_with_nothing_copied(
    scratch, tmp_path, monkeypatch, capsys
):
    from core.results import size as sz

    data, line = tmp_path / "data", _line(60, "1e-3,1e-2")
    (data / "runs").mkdir(parents=True)
    (data / "runs" / "held.parquet").write_bytes(b"x" * 5000)  # two blocks already on disk
    monkeypatch.setattr("core.cli.land.BUNDLED", data)  # the store the app ships: its limit applies
    monkeypatch.setattr(sz, "LIMIT", 3 * 4096)  # room for one block: the line's pack and its record need two
    with pytest.raises(SystemExit) as exit_:
        main(["land", line, "--from", str(scratch), "--store", str(data), "--weights"])
    err = capsys.readouterr().err.strip()
    assert exit_.value.code == 1 and len(err.splitlines()) == 1
    assert "its pack of" in err and "and 1 records would take" in err and "over its limit of 0.012288 MB" in err
    assert [p.name for p in (data / "runs").iterdir()] == ["held.parquet"] and not (data / "bench").exists()
    assert not (data / "packs").exists() and not (data / "weights").exists()
    monkeypatch.setattr(sz, "LIMIT", 20 * 4096)  # room enough
    assert main(["land", line, "--from", str(scratch), "--store", str(data)]) == 0
    assert [p.name for p in (data / "runs").iterdir()] == ["held.parquet"] and len(packs.packed(data)) == 4
    assert "note:" not in capsys.readouterr().out


def test_landing_weights_that_take_the_bundled_store_past_its_limit_says_so_until_prune(
    scratch, tmp_path, monkeypatch, capsys
):
    """Weights are copied for prune to choose from and not counted before landing: a store they take past its
    limit is named in a note, with what brings it back."""
    from core.results import size as sz

    data, line = tmp_path / "data", _line(60, "1e-3,1e-2")
    monkeypatch.setattr("core.cli.land.BUNDLED", data)
    monkeypatch.setattr(sz, "LIMIT", 8 * 4096)  # room for the pack and its record, not for 8 weights files too
    assert main(["land", line, "--from", str(scratch), "--store", str(data), "--weights"]) == 0
    out = capsys.readouterr().out
    assert "over its 0.032768 MB limit until prune drops the weights and models it does not keep" in out


@pytest.mark.parametrize(
    "argv, flag",
    [
        (["land", _line(60, "1e-3"), "--from", "{scratch}"], "line: not one of the"),  # not in the recipe
        (["land", _line(60, "1e-3,1e-2"), "--from", "{empty}"], "--from: no runs in"),
    ],
)
def test_a_line_not_in_the_recipe_or_a_scratch_store_without_runs_is_exit_2(scratch, tmp_path, capsys, argv, flag):
    argv = [a.format(scratch=scratch, empty=tmp_path) for a in argv]
    with pytest.raises(SystemExit) as exit_:
        main([*argv, "--store", str(tmp_path / "data")])
    err = capsys.readouterr().err.strip()
    assert exit_.value.code == 2 and len(err.splitlines()) == 1 and flag in err
    assert not (tmp_path / "data").exists()
