"""A tiny trained run for the store's tests: one job of one seed on sort, trained on the CPU in about a second."""

import pandas as pd

from core.cli import main
from core.experiments.run_job import Job
from core.results import store as store_mod
from core.training.config import ModelConfig, TaskConfig, TrainConfig
from core.training.tasks import make_task
from core.training.train import train_ensemble


def tiny_run(attention: str = "stacked", steps: int = 10, eval_every: int = 5):
    """(job, its one RunResult): d_model 16, two heads, 32 held-out sequences."""
    task = TaskConfig("sort", eval_size=32)
    t = make_task(task)
    job = Job(
        ModelConfig(attention=attention, d_model=16, n_heads=2, vocab_size=t.vocab_size, max_len=t.seq_len),
        task,
        TrainConfig(steps=steps, eval_every=eval_every),
        (0,),
    )
    return job, train_ensemble(job.model, job.task, job.train, [0], "cpu")[0]


# reverse, small enough to train to the criterion in about a second (test_criterion, test_resume)
REVERSE_TASK = TaskConfig("reverse", n_symbols=6, length=4, eval_size=64)
_T = make_task(REVERSE_TASK)
REVERSE_MODEL = ModelConfig(vocab_size=_T.vocab_size, max_len=_T.seq_len, d_model=16, n_heads=2)
SOLVED = TrainConfig(steps=150, eval_every=10, batch_size=16, warmup=5, schedule="constant", until="solved")


def close(a: list[float], b: list[float], tol: float = 1e-4) -> bool:
    """Two curves of one length, equal to a relative tolerance."""
    return len(a) == len(b) and all(abs(x - y) <= tol * max(1.0, abs(y)) for x, y in zip(a, b))


# `python -m core sweep`'s flags for a sweep of a few seconds (test_cli, test_summary, test_sweep_interrupts); one
# worker, in the sweep's own process: a pool's workers start a fresh interpreter each (torch's import and first
# optimizer, several seconds), and the pool has its own tests (test_workers, test_sweep_interrupts, test_bench)
TINY_FLAGS = ["--d-model", "16", "--n-heads", "2", "--steps", "20", "--eval-every", "10", "--workers", "1", "--quiet"]


def sweep(store, *extra) -> int:
    """The sweep command, in this process, at TINY_FLAGS (a later flag overrides one of them)."""
    return main(["sweep", "--store", str(store), *TINY_FLAGS, *extra])


def criterion_argv(store, steps: int, lrs: str = "1e-3,1e-2") -> list[str]:
    """A sweep of reverse to the criterion at cap `steps` (REVERSE_TASK, REVERSE_MODEL), two seeds an lr."""
    flags = f"--task reverse --attention standard --seeds 2 --lr {lrs} --until solved --steps {steps} --eval-every 10"
    tiny = "--n-symbols 6 --length 4 --d-model 16 --n-heads 2 --workers 1 --quiet"
    return ["sweep", "--store", str(store), *flags.split(), *tiny.split()]


def criterion_sweep(store, steps: int, lrs: str = "1e-3,1e-2") -> None:
    """criterion_argv's sweep in this process: no interpreter to start where nothing is killed."""
    assert main(criterion_argv(store, steps, lrs)) == 0


def curves(store) -> dict:
    """{(lr, seed, cap): (stop, solve step, [(metric, step, value) of its evaluations])} of a store's runs."""
    runs = store_mod.load_runs(store)
    metrics = store_mod.load_metrics(store, list(runs.run_id))
    val = metrics[metrics.metric.isin(["val_loss", "val_acc", "test_loss", "test_acc"])]
    out = {}
    for row in runs.itertuples():
        m = val[val.run_id == row.run_id].sort_values(["metric", "step"])
        solve = None if pd.isna(row.solve_step) else row.solve_step  # NaN != NaN: compare as None
        out[(row.lr, row.seed, row.steps)] = (row.stop, solve, list(zip(m.metric, m.step, m.value)))
    return out
