"""The tiny transformer: every parameterization trains through it; counts add up; patterns are real."""

import pytest
import torch

from core.attention.registry import ATTENTION
from core.training.config import ModelConfig
from core.training.model import Transformer, count_model_params


@pytest.mark.parametrize("mlp", [True, False])
@pytest.mark.parametrize("name", list(ATTENTION))
def test_param_breakdown_sums_to_total_and_matches_formula(name, mlp):
    cfg = ModelConfig(attention=name, vocab_size=20, max_len=16, d_model=32, n_heads=4, n_layers=3, mlp=mlp)
    model = Transformer(cfg)
    breakdown = model.param_breakdown()
    assert set(breakdown) == {"embeddings", "attention", "mlp", "norms", "unembedding"}
    assert sum(breakdown.values()) == sum(p.numel() for p in model.parameters())
    assert breakdown == count_model_params(cfg)
    assert (breakdown["mlp"] == 0) == (not mlp)


@pytest.mark.parametrize("name", list(ATTENTION))
def test_forward_backward_and_patterns(name):
    torch.manual_seed(0)
    model = Transformer(ModelConfig(attention=name, vocab_size=20, max_len=16, d_model=32, n_heads=4))
    tokens = torch.randint(0, 20, (3, 12))
    logits = model(tokens)
    assert logits.shape == (3, 12, 20)
    logits.sum().backward()
    assert model.embed.weight.grad.abs().sum() > 0
    patterns = model.attention_patterns(tokens)  # (L, B, H, T, T)
    assert patterns.shape == (2, 3, 4, 12, 12)
    torch.testing.assert_close(patterns.sum(-1), torch.ones(2, 3, 4, 12))
    assert torch.all(patterns.triu(1) == 0)  # causal
    # layer 0's pattern is exactly the softmax the attention layer itself computes
    h = model.blocks[0].ln1(model.residual(tokens))
    q = torch.einsum("btd,hde->bhte", h, model.blocks[0].attn.head_weights()["W_QK"])  # (B, H, T, D)
    scores = (q @ h.unsqueeze(1).mT).masked_fill(torch.ones(12, 12, dtype=torch.bool).triu(1), float("-inf"))
    torch.testing.assert_close(patterns[0], scores.softmax(-1), atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("mlp", [True, False])
@pytest.mark.parametrize("name", list(ATTENTION))
def test_stacked_members_compute_what_each_member_computes_alone(name, mlp):
    """The ensemble path (parameters stacked to (E, ...), tokens (E, B, T)) against each model on its own."""
    from torch.func import functional_call, stack_module_state

    cfg = ModelConfig(attention=name, vocab_size=20, max_len=16, d_model=32, n_heads=4, mlp=mlp)
    models = []
    for seed in range(3):
        torch.manual_seed(seed)
        models.append(Transformer(cfg))
    params, buffers = stack_module_state(models)  # (E, ...) each
    tokens = torch.randint(0, 20, (3, 5, 12))  # (E, B, T): each member its own batch
    together = functional_call(models[0], (params, buffers), (tokens,))  # (E, B, T, V)
    assert together.shape == (3, 5, 12, 20)
    for e, model in enumerate(models):
        torch.testing.assert_close(together[e], model(tokens[e]), atol=1e-5, rtol=1e-4)
