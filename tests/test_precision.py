"""bf16 autocast: a bf16 member tracks its fp32 twin, parameters stay float32, and fp32 keeps every run id."""

import itertools
import json

import pytest
import torch

from core.experiments import sweep
from core.results import packs
from core.results import runfile as rf
from core.training.config import ModelConfig, TaskConfig, TrainConfig, run_id
from core.training.tasks import make_task
from core.training.train import train_ensemble

# Tolerance of the agreement check, per evaluation over the first 100 steps: |val loss bf16 - fp32| <= 0.02 nats
# + 2% of the fp32 loss, and validation accuracy within 0.05. Measured here: at most 0.002 nats.
ABS_TOL, REL_TOL, ACC_TOL = 0.02, 0.02, 0.05


def _curves(result, metric):
    return [v for _, k, v in result.metrics if k == metric]


@pytest.mark.parametrize("attention", ["standard", "tied_qk"])
def test_a_bf16_member_tracks_its_fp32_twin_over_the_first_100_steps(attention):
    task = TaskConfig("reverse", length=6)
    t = make_task(task)
    model = ModelConfig(
        attention=attention, d_model=16, n_heads=2, n_layers=1, vocab_size=t.vocab_size, max_len=t.seq_len
    )
    out = {}
    for precision in ("fp32", "bf16"):
        cfg = TrainConfig(steps=100, eval_every=20, batch_size=8, lr=1e-2, precision=precision)
        out[precision] = train_ensemble(model, task, cfg, [0])[0]
    fp32, bf16 = (_curves(out[p], "val_loss") for p in ("fp32", "bf16"))
    assert len(fp32) == len(bf16) == 6 and fp32[-1] < fp32[0] - 0.3  # it learned something
    for a, b in zip(fp32, bf16):
        assert abs(a - b) <= ABS_TOL + REL_TOL * a
    assert fp32 != bf16  # autocast really ran the matmuls in bf16
    for a, b in zip(_curves(out["fp32"], "val_acc"), _curves(out["bf16"], "val_acc")):
        assert abs(a - b) <= ACC_TOL
    assert all(w.dtype == torch.float32 for hw in out["bf16"].head_weights for w in hw.values())


def test_precision_is_part_of_the_run_id_and_fp32_keeps_every_stored_id():
    m, t = ModelConfig(), TaskConfig()
    assert "precision" not in TrainConfig().to_dict()
    assert run_id(m, t, TrainConfig(precision="bf16"), 0) != run_id(m, t, TrainConfig(), 0)
    for _, meta, _ in itertools.islice(packs.all_metas("data"), 20):
        cfgs = ModelConfig.from_dict(meta["model"]), TaskConfig.from_dict(meta["task"])
        assert run_id(*cfgs, TrainConfig.from_dict(meta["train"]), meta["seed"]) == meta["run_id"]
        assert rf.run_row(meta)["precision"] == "fp32"


def test_bad_precision_is_one_line_naming_the_field():
    with pytest.raises(ValueError, match=r"^precision: unknown 'fp16'; allowed: fp32, bf16$"):
        TrainConfig(precision="fp16")


def test_task_size_flows_into_the_plan_and_max_len_follows_the_sequence():
    jobs = sweep.plan(["standard"], ["associative_recall"], 1, TrainConfig(), task_overrides={"length": 32})
    assert jobs[0].task.length == 32 and jobs[0].model.max_len == 128
    default = sweep.plan(["standard"], ["associative_recall"], 1, TrainConfig())[0]
    assert (
        default.run_ids()
        == sweep.plan(["standard"], ["associative_recall"], 1, TrainConfig(), task_overrides={"length": 8})[0].run_ids()
    )
    assert json.dumps(default.task.to_dict(), sort_keys=True).count("length") == 1


def test_duplicate_names_train_once():
    jobs = sweep.plan(["standard", "standard"], ["reverse", "reverse"], 1, TrainConfig())
    assert len(jobs) == 1
