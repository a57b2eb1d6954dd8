"""The ensemble engine against training each seed alone, and against the plain textbook loop."""

import math

import pytest
import torch

from core.training.config import ModelConfig, TaskConfig, TrainConfig
from core.training.reference import train_plain
from core.training.tasks import make_task
from core.training.train import lr_at, train_ensemble

TASK = TaskConfig("reverse", eval_size=64)
T = make_task(TASK)


def model_cfg(attention="standard", **kw):
    return ModelConfig(attention=attention, vocab_size=T.vocab_size, max_len=T.seq_len, d_model=32, n_heads=2, **kw)


def step_losses(result) -> list[float]:
    return [v for _, k, v in result.metrics if k == "train_loss"]


def test_ensemble_matches_each_seed_alone_and_the_plain_loop():
    train = TrainConfig(steps=30, eval_every=1, batch_size=16, warmup=5)  # every step: plain records each
    cfg = model_cfg()
    together = train_ensemble(cfg, TASK, train, [0, 1, 2], device="cpu")
    for r in together:
        alone = train_ensemble(cfg, TASK, train, [r.seed], device="cpu")[0]
        plain, plain_evals = train_plain(cfg, TASK, train, r.seed)
        assert len(step_losses(r)) == 30
        assert max(abs(a - b) for a, b in zip(step_losses(r), step_losses(alone))) < 1e-4
        assert max(abs(a - b) for a, b in zip(step_losses(r), plain)) < 1e-4
        for split in ("val", "test"):  # both held-out sets, at every evaluation
            evals = [(s, v) for s, k, v in r.metrics if k == f"{split}_loss"]
            assert [s for s, _ in evals] == [s for s, _ in plain_evals[split]] == list(range(31))
            assert max(abs(a - b) for (_, a), (_, b) in zip(evals, plain_evals[split])) < 1e-4
    # different seeds really are different runs
    assert step_losses(together[0])[0] != step_losses(together[1])[0]


@pytest.mark.parametrize("attention", ["standard", "stacked"])
def test_members_at_different_lrs_train_together_exactly_as_each_alone(attention):
    from dataclasses import replace

    train = TrainConfig(steps=30, eval_every=10, batch_size=16, warmup=5)
    cfg = model_cfg(attention)
    seeds, lrs = [0, 1, 0, 1], [1e-3, 1e-3, 1e-2, 1e-2]
    together = train_ensemble(cfg, TASK, train, seeds, device="cpu", lrs=lrs)
    assert [(r.seed, r.lr) for r in together] == list(zip(seeds, lrs)) and all(r.n_ensemble == 4 for r in together)
    for r in together:
        (alone,) = train_ensemble(cfg, TASK, replace(train, lr=r.lr), [r.seed], device="cpu")
        assert alone.n_ensemble == 1 and len(step_losses(r)) == 3
        assert max(abs(a - b) for a, b in zip(step_losses(r), step_losses(alone))) < 1e-4
        for k in ("val_loss", "test_loss", "update_qk.0"):
            got, want = ([v for _, kk, v in x.metrics if kk == k] for x in (r, alone))
            assert max(abs(a - b) for a, b in zip(got, want)) < 1e-4, k
    assert step_losses(together[0]) != step_losses(together[2])  # a different lr is a different run


def test_update_sizes_are_recorded_and_stacked_moves_further_at_the_same_lr():
    train = TrainConfig(steps=40, eval_every=20, batch_size=16, warmup=5)
    moved = {}
    for name in ("standard", "stacked", "identity"):
        (r,) = train_ensemble(model_cfg(name), TASK, train, [0], device="cpu")
        ups = {k: [v for _, kk, v in r.metrics if kk == k] for k in ("update_qk.0", "update_ov.1")}
        assert all(len(v) == 2 for v in ups.values())
        moved[name] = sum(ups["update_qk.0"])
    assert moved["identity"] == 0  # nothing to move: identity has no attention parameters
    assert moved["stacked"] > 1.5 * moved["standard"] > 0


@pytest.mark.parametrize("attention", ["standard", "identity", "gqa"])
def test_training_reduces_loss_and_reports_everything(attention):
    train = TrainConfig(steps=60, eval_every=20, batch_size=32)
    (r,) = train_ensemble(model_cfg(attention), TASK, train, [0], device="cpu")
    steps = {k: [s for s, kk, _ in r.metrics if kk == k] for k in ("test_loss", "val_acc", "train_loss", "wall_time")}
    assert steps["test_loss"] == steps["val_acc"] == [0, 20, 40, 60] and steps["train_loss"] == [20, 40, 60]
    evals = [v for _, k, v in r.metrics if k == "test_loss"]
    assert evals[-1] < evals[0]
    assert r.status == "ok" and 0 <= r.final["test_acc"] <= 1 and r.steps_done == 60
    assert r.tokens_per_s > 0 and r.train_seconds > 0
    assert len(r.head_weights) == 2 and r.head_weights[0]["W_QK"].shape == (2, 32, 32)
    L, N, H = r.patterns.shape[:3]
    assert (L, H) == (2, 2) and torch.allclose(r.patterns.sum(-1), torch.ones(()))


def test_divergent_member_is_stopped_and_marked():
    train = TrainConfig(steps=30, lr=1e12, grad_clip=None, eval_every=10, weight_decay=0.0)
    results = train_ensemble(model_cfg(), TASK, train, [0, 1], device="cpu")
    assert all(r.status == "diverged" for r in results)
    assert all(math.isnan(step_losses(r)[-1]) for r in results)


def test_should_stop_cancels_without_results():
    assert (
        train_ensemble(model_cfg(), TASK, TrainConfig(steps=40, eval_every=10), [0], "cpu", should_stop=lambda: True)
        is None
    )


def test_lr_schedule_warms_up_then_decays():
    cfg = TrainConfig(steps=100, warmup=10, lr_min_ratio=0.1)
    assert lr_at(0, cfg) == pytest.approx(0.1) and lr_at(9, cfg) == pytest.approx(1.0)
    assert lr_at(100, cfg) == pytest.approx(0.1)
    assert all(lr_at(s, cfg) >= lr_at(s + 1, cfg) for s in range(10, 100))


def test_clip_per_member_is_torchs_clip_on_each_member_and_skips_unused_parameters():
    from core.training.train import clip_per_member

    torch.manual_seed(0)
    stacked = [torch.zeros(3, 4, 5, requires_grad=True), torch.zeros(3, 5, requires_grad=True)]
    unused = torch.zeros(3, 2, requires_grad=True)  # no gradient this step
    for p, scale in zip(stacked, (1.0, 0.1)):
        p.grad = torch.randn_like(p) * scale
    stacked[0].grad[1] *= 1e-3  # member 1 is under the threshold: left as it is
    members = [[torch.zeros(p.shape[1:], requires_grad=True) for p in stacked] for _ in range(3)]
    for e, ps in enumerate(members):
        for p, s in zip(ps, stacked):
            p.grad = s.grad[e].clone()
        torch.nn.utils.clip_grad_norm_(ps, 0.5)
    clip_per_member([*stacked, unused], 0.5)
    assert unused.grad is None
    for e, ps in enumerate(members):
        for p, s in zip(ps, stacked):
            torch.testing.assert_close(s.grad[e], p.grad)
