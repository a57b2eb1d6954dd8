"""Head diagnostics: previous-token and induction scores, on hand-built patterns and on trained models."""

import pytest
import torch

from core.analysis.heads import head_scores, repeated_tokens, scores_from_patterns
from core.training.config import ModelConfig, TaskConfig, TrainConfig
from core.training.ensemble import single_model
from core.training.tasks import make_task
from core.training.train import train_ensemble


def test_scores_read_hand_built_patterns():
    T, k = 12, 6
    prev = torch.zeros(T, T)
    prev[0, 0], prev[torch.arange(1, T), torch.arange(T - 1)] = 1.0, 1.0
    induction = torch.eye(T)
    induction[k:] = 0
    induction[torch.arange(k, T), torch.arange(1, k + 1)] = 1.0
    uniform = torch.tril(torch.ones(T, T)) / torch.arange(1, T + 1).unsqueeze(1)
    patterns = torch.stack([prev, induction, uniform]).unsqueeze(0).unsqueeze(0)  # (L=1, B=1, H=3, T, T)
    got = scores_from_patterns(patterns)
    assert got["prev_token"][0].tolist() == pytest.approx([1.0, 0.0, got["prev_token"][0, 2].item()])
    assert got["induction"][0, 1] == 1.0 and got["induction"][0, 0] == 0.0
    assert got["induction"][0, 2] < 0.2 and got["prev_token"][0, 2] < 0.3  # uniform: about 1 / position


def test_repeated_tokens_repeat_distinct_tokens():
    x = repeated_tokens(vocab_size=16, max_len=12, n=5)
    assert x.shape == (5, 12) and torch.equal(x[:, :6], x[:, 6:])
    assert all(len(set(row[:6].tolist())) == 6 for row in x)


def _trained(n_layers: int, steps: int):
    task_cfg = TaskConfig("induction", n_symbols=16, length=8, eval_size=64)
    task = make_task(task_cfg)
    cfg = ModelConfig(vocab_size=task.vocab_size, max_len=task.seq_len, n_layers=n_layers, d_model=32, n_heads=2)
    train = TrainConfig(steps=steps, eval_every=25, lr=3e-3, schedule="constant", until="solved")
    (r,) = train_ensemble(cfg, task_cfg, train, [0], "cpu")
    scores = head_scores(single_model(cfg, r.state_dict, "cpu"))
    return r, scores.pivot_table(index=["layer", "head"], columns="metric", values="value")


def test_a_two_layer_model_that_solves_induction_has_the_circuit_and_one_layer_has_neither():
    two, scores = _trained(2, 600)
    assert two.stop == "solved"
    assert scores.loc[0].prev_token.max() > 0.4  # a previous-token head in layer 0 ...
    assert scores.loc[1].induction.max() > 0.5  # ... read by an induction head in layer 1
    one, scores = _trained(1, two.steps_done)
    assert one.stop == "cap" and one.final["test_acc"] < 0.5
    assert scores.induction.max() < 0.3
