"""A tiny trained run for the store's tests: one job of one seed on sort, trained on the CPU in about a second."""

from core.experiments.run_job import Job
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
