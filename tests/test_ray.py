"""The Ray engine against a real Ray, kept on loopback: every test runs Ray inside a network namespace that
holds only `lo` (`unshare -n`), because Ray binds the machine's primary interface even when told 127.0.0.1.
Outside CI a machine without `unshare -n` skips them; under CI=true that is a failure."""

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from core import cli
from core.experiments import sweep
from core.results import store as st
from core.training.config import TrainConfig

ROOT = Path(__file__).resolve().parents[1]
TINY = [
    "--attention",
    "standard,mqa",
    "--task",
    "reverse",
    "--seeds",
    "2",
    "--lr",
    "1e-3,3e-3",
    "--steps",
    "15",
    "--eval-every",
    "5",
    "--batch-size",
    "8",
    "--d-model",
    "16",
    "--n-heads",
    "2",
    "--quiet",
]
ONLY_LOOPBACK = 'ip link set lo up && test "$(ip -o link show | wc -l)" = 1'  # refuse to run if anything else is there


def _namespaced(script: str, timeout: int = 300) -> subprocess.CompletedProcess:
    usable = shutil.which("unshare") and shutil.which("ip")
    if usable:
        usable = subprocess.run(["unshare", "-n", "sh", "-c", ONLY_LOOPBACK], capture_output=True).returncode == 0
    if not usable:
        reason = "needs `unshare -n` and `ip` (root or user namespaces) to keep Ray on loopback"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    token = secrets.token_hex(16)  # token auth on, as every cluster should run
    env = {
        **os.environ,
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": token,
        "PYTHONPATH": str(ROOT),
    }
    return subprocess.run(
        ["unshare", "-n", "sh", "-c", f"{ONLY_LOOPBACK} && {script}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _local_engine(store: Path) -> None:
    jobs = sweep.plan(
        ["standard", "mqa"],
        ["reverse"],
        2,
        TrainConfig(steps=15, eval_every=5, batch_size=8),
        {"d_model": 16, "n_heads": 2},
        [1e-3, 3e-3],
    )
    assert sweep.run(store, jobs, "cpu")["trained"] == 8


def _same_runs(ray_store: Path, local_store: Path) -> None:
    a, b = (st.load_runs(s).set_index("run_id").sort_index() for s in (ray_store, local_store))
    assert len(a) == 8 and list(a.index) == list(b.index)  # the same run ids
    for col in ("val_loss", "test_loss", "train_loss", "test_acc"):
        assert (a[col] - b[col]).abs().max() < 1e-4, col  # the engines' tolerance (tests/test_workers.py)
    ma, mb = (st.load_metrics(s).sort_values(["run_id", "metric", "step"]) for s in (ray_store, local_store))
    assert len(ma) == len(mb) and (ma.metric.values == mb.metric.values).all()


def _sweep(store: Path, address: str) -> str:
    return f"{sys.executable} -m core sweep {' '.join(TINY)} --store {store} --ray {address}"


def test_ray_local_sweep_stores_what_the_local_engine_stores(tmp_path):
    out = _namespaced(_sweep(tmp_path / "ray", "local"))
    assert out.returncode == 0, out.stderr[-2000:]
    assert "trained 8 runs" in out.stdout
    _local_engine(tmp_path / "local")
    _same_runs(tmp_path / "ray", tmp_path / "local")
    rerun = _namespaced(_sweep(tmp_path / "ray", "local"))  # resume: nothing left to train
    assert "trained 0 runs" in rerun.stdout and "skipped 8 already stored" in rerun.stdout


def test_a_sweep_on_a_running_cluster_stores_what_the_local_engine_stores(tmp_path):
    with socket.socket() as s:  # a free port (in this namespace; the cluster's namespace has no other user)
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    start = (
        f"ray start --head --port {port} --num-cpus 2 --include-dashboard=false --disable-usage-stats "
        f"--object-store-memory 100000000 > {tmp_path}/start.log 2>&1"
    )
    script = f"{start} && {_sweep(tmp_path / 'ray', f'127.0.0.1:{port}')}; rc=$?; ray stop --force >/dev/null; exit $rc"
    out = _namespaced(script)
    assert out.returncode == 0, out.stderr[-2000:] + (tmp_path / "start.log").read_text()[-2000:]
    assert "trained 8 runs" in out.stdout
    _local_engine(tmp_path / "local")
    _same_runs(tmp_path / "ray", tmp_path / "local")


def test_a_job_that_fails_is_retried_once_then_reported_while_the_others_are_stored(tmp_path):
    log = tmp_path / "attempts.log"
    out = _namespaced(f"{sys.executable} tests/ray_failing_job.py {tmp_path / 'store'} {log}")
    assert out.returncode == 0, out.stderr[-2000:]
    counts = json.loads(out.stdout.strip().splitlines()[-1])
    assert {"failed": ["reverse/mqa (RuntimeError: injected failure)"]} in counts
    (stored,) = [c for c in counts if "failed" not in c]
    assert (stored["trained"], stored["diverged"], len(stored["stored"])) == (1, 0, 1)
    assert sorted(log.read_text().split()) == ["mqa", "mqa", "standard"]  # one retry, then given up
    runs = st.load_runs(tmp_path / "store")
    assert list(runs.attention) == ["standard"]


def test_ray_flag_without_ray_installed_is_one_line_naming_the_install(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now raises ImportError
    with pytest.raises(SystemExit) as exit_:
        cli.main(["sweep", *TINY, "--store", "unused", "--ray", "local"])
    err = capsys.readouterr().err.strip()
    assert exit_.value.code == 2 and "\n" not in err
    assert err == "error: --ray: Ray is not installed; install it with: pip install -r requirements-ray.txt"


@pytest.mark.parametrize("bad", ["", "127.0.0.1", "host:port", "host:0", "host:70000", "remote"])
def test_a_bad_ray_address_is_one_line_naming_the_forms(bad, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["sweep", *TINY, "--store", "unused", "--ray", bad])
    err = capsys.readouterr().err.strip()
    assert exit_.value.code == 2 and "\n" not in err
    assert err.startswith("error: argument --ray: must be 'local' or HOST:PORT")
