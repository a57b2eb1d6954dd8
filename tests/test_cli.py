"""`python -m core sweep` end to end: runs, resumes, measures itself, refuses bad flags cleanly (kills and
concurrent sweeps: test_sweep_interrupts)."""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tiny import TINY_FLAGS, sweep

from core.cli import main
from core.experiments import sweep as sweep_mod
from core.experiments.flops import job_flops, run_flops
from core.results import store as st
from core.training.config import TrainConfig

ROOT = Path(__file__).resolve().parents[1]


def test_sweep_runs_then_resumes_without_rewriting(tmp_path, capsys):
    assert sweep(tmp_path, "--attention", "standard,identity", "--task", "reverse", "--seeds", "2") == 0
    out = capsys.readouterr().out
    assert "trained 4 runs" in out and "identity" in out and "test_acc" in out and "solved" in out
    runs = st.load_runs(tmp_path)
    assert len(runs) == 4 and set(runs.attention) == {"standard", "identity"} and set(runs.seed) == {0, 1}
    assert {st.read_meta(p)["device"] for p in (tmp_path / "runs").glob("*.parquet")} == {"cpu"}
    mtimes = {p: p.stat().st_mtime_ns for p in (tmp_path / "runs").iterdir()}
    sweep(tmp_path, "--attention", "standard,identity,mqa", "--task", "reverse", "--seeds", "2")
    out = capsys.readouterr().out
    assert "trained 2 runs" in out and "skipped 4 already stored" in out
    assert len(st.load_runs(tmp_path)) == 6
    assert all(p.stat().st_mtime_ns == t for p, t in mtimes.items())


def test_sweep_measures_its_own_flops_and_a_sweep_that_trains_nothing_keeps_them(tmp_path, capsys):
    sweep(tmp_path, "--attention", "standard,bilinear", "--task", "reverse", "--seeds", "2", "--workers", "1")
    out = capsys.readouterr().out
    assert "(fp32)" in out and "of the fp32 matmul peak measured here" in out and "training steps alone" in out
    (path,) = (tmp_path / "bench").glob("sweep-*.parquet")  # one record per sweep, never overwritten
    rec = st.load_named(tmp_path, "bench").iloc[0]
    assert (rec.kind, rec.precision, rec.jobs, rec.runs, rec.steps) == ("sweep", "fp32", 2, 4, 20)
    assert rec.seconds > 0 and 0 < rec.gflops < rec.peak_gflops
    assert rec.utilisation == pytest.approx(rec.gflops / rec.peak_gflops)
    assert f"at that peak its FLOPs would still take {rec.gflop / rec.peak_gflops / 60:.1f} min" in out
    tiny_train, tiny_model = TrainConfig(steps=20, eval_every=10), {"d_model": 16, "n_heads": 2}
    tiny = sweep_mod.plan(["standard"], ["reverse"], 1, tiny_train, tiny_model)
    assert rec.gflop > 4 * run_flops(tiny[0]) / 1e9  # standard's two seeds, and bilinear's two, which cost more
    # the steps alone: their FLOPs over the thread-seconds the two ensembles spent in them (evaluations excluded)
    jobs = sweep_mod.plan(["standard", "bilinear"], ["reverse"], 2, tiny_train, tiny_model)
    runs = st.load_runs(tmp_path).drop_duplicates("step_seconds")
    assert len(runs) == 2 and (runs.step_seconds < runs.train_seconds).all()  # one per ensemble
    step_flop = sum(2 * job_flops(j)[0] for j in jobs)
    assert step_flop < rec.gflop * 1e9
    per_thread_peak = rec.peak_gflops * 1e9 / rec.threads
    expected = step_flop / (runs.step_seconds * runs.threads).sum() / per_thread_peak
    assert rec.step_utilisation == pytest.approx(expected)
    assert st.read_meta(path)["provenance"]["versions"]["torch"].startswith("2.13")
    mtime = path.stat().st_mtime_ns
    sweep(tmp_path, "--attention", "standard,bilinear", "--task", "reverse", "--seeds", "2")
    assert "skipped 4 already stored" in capsys.readouterr().out and path.stat().st_mtime_ns == mtime


def test_a_bf16_sweep_is_measured_against_the_bf16_peak_and_recorded_as_bf16(tmp_path, monkeypatch, capsys):
    """The peak is measured before the sweep has planned anything: it must come from the sweep's own flag."""
    from core.experiments import flops

    real, asked = flops.matmul_peak, []

    def peak(*args, **kw):
        asked.append(kw["precision"])
        return real(*args, **kw)

    monkeypatch.setattr(flops, "matmul_peak", peak)
    sweep(
        tmp_path, "--attention", "standard", "--task", "reverse", "--seeds", "1", "--steps", "4", "--precision", "bf16"
    )
    assert asked == ["bf16", "bf16"]  # the bracket before and after
    rec = st.load_named(tmp_path, "bench").iloc[0]
    assert rec.precision == "bf16" and "of the bf16 matmul peak" in capsys.readouterr().out
    assert (st.load_runs(tmp_path).precision == "bf16").all()


@pytest.mark.parametrize(
    "argv,flag",
    [
        (["--attention", "nope"], "--attention"),
        (["--task", "sorting"], "--task"),
        (["--d-model", "0"], "--d-model"),
        (["--n-heads", "3"], "--n-heads"),
        (["--steps", "-5"], "--steps"),
        (["--seeds", "0"], "--seeds"),
        (["--device", "tpu"], "--device"),
        (["--steps", "many"], "--steps"),
        (["--workers", "0"], "--workers"),
        (["--seeds", "99999999999999999999"], "--seeds"),
        (["--workers", "99999999999999999999"], "--workers"),
        (["--d-model", "99999999999999999999"], "--d-model"),
        (["--lr", "inf"], "--lr"),
        (["--lr", "nan"], "--lr"),
        (["--lr", "1e-3,-1"], "--lr"),
        (["--lr", ""], "--lr"),
        (["bench", "--quick", "--device", "tpu"], "--device"),
        (["bench", "--quick", "--workers", "0"], "--workers"),
        (["bench", "--quick", "--training-rounds", "0"], "--training-rounds"),
        (["prune", "--max-seeds", "0"], "--max-seeds"),
        (["prune", "--model-tasks", "copy"], "--model-tasks"),
        (["--precision", "fp16"], "--precision"),
        (["--length", "0"], "--length"),
        (["--length", "5000"], "--length"),
        (["--n-symbols", "x"], "--n-symbols"),
        (["--task", "induction", "--length", "40"], "--length"),  # more distinct tokens than symbols
        (["--d-model", "20000"], "--d-model"),  # its 4x MLP would be over the bound: named as d_model, not d_mlp
        (["bench", "--quick", "--workers", "100000"], "--workers"),
        (["bench", "--quick", "--store-runs", "100000000"], "--store-runs"),
        (["pretrained", "--cache", "/etc/passwd"], "--cache"),
    ],
)
def test_bad_flags_one_line_exit_2_nothing_written(tmp_path, capsys, argv, flag):
    store = tmp_path / "store"
    # sweep's flags unless the case names another command
    args = argv if argv[0] in ("bench", "prune", "pretrained") else ["sweep", *argv]
    with pytest.raises(SystemExit) as err:
        main([*args, "--store", str(store)])
    assert err.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and flag in lines[0]
    if flag in ("--attention", "--task"):
        assert "allowed:" in lines[0] and ("standard" in lines[0] or "reverse" in lines[0])
    assert not store.exists()


def test_store_that_is_a_file_empty_or_unwritable_is_refused_before_training(tmp_path, capsys):
    afile = tmp_path / "afile"
    afile.write_text("x")
    for bad in (str(afile), "", str(afile / "below")):
        with pytest.raises(SystemExit) as err:
            main(["sweep", "--store", bad, *TINY_FLAGS])
        assert err.value.code == 2
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1 and "--store" in lines[0]
    assert afile.read_text() == "x"


def test_lr_grid_trains_every_seed_at_every_lr_and_summary_reports_the_best(tmp_path, capsys):
    assert sweep(tmp_path, "--attention", "standard", "--task", "reverse", "--seeds", "2", "--lr", "1e-3,1e-2") == 0
    runs = st.load_runs(tmp_path)
    assert sorted(zip(runs.lr, runs.seed)) == [(1e-3, 0), (1e-3, 1), (1e-2, 0), (1e-2, 1)]
    assert (runs.n_ensemble == 4).all()
    capsys.readouterr()
    main(["summary", "--store", str(tmp_path)])
    from core.analysis.findings import best_lr

    assert f"lr {best_lr(runs).lr.iloc[0]:g}" in capsys.readouterr().out
    # a resumed member trains alone, and says so
    st.run_path(tmp_path, runs.run_id.iloc[0]).unlink()
    sweep(tmp_path, "--attention", "standard", "--task", "reverse", "--seeds", "2", "--lr", "1e-3,1e-2")
    assert "trained 1 runs" in capsys.readouterr().out
    again = st.load_runs(tmp_path).set_index("run_id")
    assert again.n_ensemble[runs.run_id.iloc[0]] == 1 and (again.n_ensemble.drop(runs.run_id.iloc[0]) == 4).all()


def test_prune_keeps_weights_for_the_best_lr_at_each_tasks_longest_training_lowest_seeds_first(tmp_path, capsys):
    grid = ["--attention", "standard", "--task", "reverse", "--seeds", "3", "--lr", "1e-3,1e-2"]
    sweep(tmp_path, *grid)
    sweep(tmp_path, *grid[:-2], "--lr", "1e-3", "--steps", "30")  # a longer training of one lr
    runs = st.load_runs(tmp_path)
    assert len(runs) == 9 and len(list((tmp_path / "weights").glob("*.safetensors"))) == 9
    main(["prune", "--store", str(tmp_path), "--max-seeds", "2"])
    kept = {p.stem for p in (tmp_path / "weights").glob("*.safetensors")}
    longest = runs[runs.steps == 30]
    assert kept == set(longest[longest.seed < 2].run_id)  # 20-step runs are not what the pages read
    assert "kept the weights of 2 best-lr runs, removed 7" in capsys.readouterr().out
    assert len(st.load_runs(tmp_path)) == 9  # metrics stay
    main(["prune", "--store", str(tmp_path)])  # no cap: nothing more to remove, nothing comes back
    assert {p.stem for p in (tmp_path / "weights").glob("*.safetensors")} == kept
    sweep(tmp_path, "--attention", "standard", "--task", "sort", "--seeds", "1", "--lr", "1e-3")
    main(["prune", "--store", str(tmp_path), "--max-model-seeds", "1", "--model-tasks", "sort"])
    models = {p.stem for p in (tmp_path / "models").glob("*.safetensors")}
    runs = st.load_runs(tmp_path).set_index("run_id")
    assert len(models) == 1 and runs.task[next(iter(models))] == "sort"  # reverse's models went, weights stay
    assert {p.stem for p in (tmp_path / "weights").glob("*.safetensors")} >= kept


def test_a_full_disk_ends_the_sweep_in_one_line_with_finished_runs_kept(tmp_path, monkeypatch, capsys):
    import errno

    from core.results import store

    real, calls = store.write_run, []

    def write_run(store_dir, *a, **kw):
        calls.append(1)
        if len(calls) > 2:
            raise OSError(errno.ENOSPC, "No space left on device", str(store_dir))
        return real(store_dir, *a, **kw)

    monkeypatch.setattr(store, "write_run", write_run)
    with pytest.raises(SystemExit) as err:
        sweep(tmp_path, "--attention", "standard,identity", "--task", "reverse", "--seeds", "2", "--workers", "1")
    assert err.value.code == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: disk full writing ")
    assert "2 runs of this sweep are stored, rerun to resume" in lines[0]
    assert len(st.load_runs(tmp_path)) == 2 and not list((tmp_path / "claims").glob("*.claim"))


def test_help_documents_every_subcommand():
    out = subprocess.run([sys.executable, "-m", "core", "--help"], cwd=ROOT, capture_output=True, text=True).stdout
    assert "sweep" in out
    sub = subprocess.run([sys.executable, "-m", "core", "sweep", "--help"], cwd=ROOT, capture_output=True, text=True)
    assert "--attention" in sub.stdout and "--store" in sub.stdout and sub.returncode == 0


def test_a_sweep_whose_runs_all_diverge_reports_the_steps_it_took(tmp_path, capsys):
    sweep(tmp_path, "--attention", "standard", "--task", "reverse", "--seeds", "2", "--lr", "1e4", "--workers", "1")
    assert "(2 diverged)" in capsys.readouterr().out
    runs = st.load_runs(tmp_path)
    assert (runs.status == "diverged").all() and (runs.steps_done < 20).all()
    rec = st.load_named(tmp_path, "bench").iloc[0]
    assert 0 < rec.step_utilisation < 1 and 0 < rec.utilisation < 1  # the FLOPs of the steps really taken


@pytest.mark.parametrize(
    "command", ["sweep", "bench", "baselines", "pretrained", "prune", "index", "summary", "export"]
)
@pytest.mark.parametrize("store", ["", "/etc/passwd", "/tmp/" + "a" * 300, "/proc/attention-lab-store", "loop"])
def test_a_store_that_cannot_be_one_is_one_line_exit_2(capsys, command, store, tmp_path, monkeypatch):
    if store == "loop":  # a --store that is a symlink to itself
        monkeypatch.chdir(tmp_path)
        os.symlink("loop", "loop")
    extra = ["--to", "csv", "--out", str(tmp_path / "out")] if command == "export" else []
    with pytest.raises(SystemExit) as err:
        main([command, "--store", store, *extra])
    assert err.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "--store" in lines[0]


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="this machine has a GPU")
@pytest.mark.parametrize("command", ["sweep", "bench"])
def test_cuda_without_a_gpu_is_one_line_exit_2(capsys, command):
    with pytest.raises(SystemExit) as err:
        main([command, "--device", "cuda"])
    assert err.value.code == 2 and "no CUDA GPU" in capsys.readouterr().err


def test_a_ray_address_nothing_answers_at_is_one_line_within_seconds(tmp_path, capsys):
    with socket.socket() as s:  # a loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    start = time.monotonic()
    with pytest.raises(SystemExit) as err:
        sweep(tmp_path / "new", "--ray", f"127.0.0.1:{port}", "--task", "reverse", "--attention", "standard")
    assert err.value.code == 1 and time.monotonic() - start < 30
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == [f"error: cannot reach the Ray cluster at 127.0.0.1:{port}: connection refused within 10 s"]
    assert not (tmp_path / "new").exists()  # refused before the store is created


def test_the_cli_runs_numpys_blas_on_one_thread_and_leaves_torchs_threads():
    """core/analysis/blas.py: in a fresh interpreter numpy's OpenBLAS starts with a thread per core; after the CLI
    it has one (its many small SVDs stall for seconds when those threads spin against another process's); torch's
    own threads, which the sweeps train on, are unchanged."""
    code = """
import torch
from core.analysis.blas import blas_threads as blas
from core.cli import main
before, torch_threads = blas(), torch.get_num_threads()
try:
    main(["--help"])
except SystemExit:
    pass
print("blas", before, blas(), "torch", torch_threads, torch.get_num_threads())
"""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    _, before, after, _, torch_before, torch_after = done.stdout.split()[-6:]
    assert int(after) == 1 and torch_after == torch_before
    assert int(before) > 1 or len(os.sched_getaffinity(0)) == 1  # it had threads to take away
