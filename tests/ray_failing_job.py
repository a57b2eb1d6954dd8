"""Run by tests/test_ray.py inside a loopback-only network namespace: a Ray sweep where one job always raises.

Usage: python tests/ray_failing_job.py STORE ATTEMPTS_LOG. Prints run_ray's counts as JSON.
"""

import json
import sys

from core.experiments import cluster, sweep
from core.training.config import TrainConfig

STORE, LOG = sys.argv[1], sys.argv[2]


def flaky(job, missing, device, progress, index):  # defined in __main__, so Ray ships it by value
    with open(LOG, "a") as f:
        f.write(job.model.attention + "\n")
    if job.model.attention == "mqa":
        raise RuntimeError("injected failure")
    return cluster.train_task(job, missing, device, progress, index)


jobs = sweep.plan(
    ["standard", "mqa"],
    ["reverse"],
    1,
    TrainConfig(steps=10, eval_every=5, batch_size=8),
    {"d_model": 16, "n_heads": 2},
)
print(json.dumps(cluster.run_ray(STORE, [(j, j.members) for j in jobs], "cpu", "test", "local", train=flaky)))
