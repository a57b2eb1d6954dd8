"""The mechanism behind stacked's smaller best lr, measured cheaply while an ensemble trains: the mean
relative update per step of every member's effective W_QK and W_OV (||ΔW|| / ||W||), per layer."""

from collections.abc import Callable

import torch
import torch.nn as nn

from .model import Transformer

# The per-step relative update of the effective W_QK and W_OV is measured on every UPDATE_EVERY-th step
# (and the first): a sample of the steps, so it costs under 2% of a step (every step: 4-5%).
UPDATE_EVERY = 5


class HeadWeights(nn.Module):
    """Calls model.head_weights() through functional_call, so it reads every member's stacked weights."""

    def __init__(self, model: Transformer):
        super().__init__()
        self.model = model

    def forward(self):
        return [(hw["W_QK"], hw["W_OV"]) for hw in self.model.head_weights()]  # per layer, (E, H, D, D) each


def _rel_change(new: torch.Tensor, old: torch.Tensor) -> torch.Tensor:
    """||new - old|| / ||old|| per member (dim 0), Frobenius over all heads: (E,)."""
    return (new - old).flatten(1).norm(dim=1) / old.flatten(1).norm(dim=1).clamp_min(1e-12)


class UpdateMeter:
    """Mean relative change per step of every member's effective W_QK and W_OV, per layer, over the
    sampled steps since the last evaluation: the mechanism behind stacked's smaller best lr."""

    def __init__(self, effective: Callable[[], list], n_layers: int, n_members: int):
        self.effective, self.shape, self.before = effective, (n_layers, 2, n_members), None
        self.reset()

    def reset(self):
        self.total, self.n = torch.zeros(self.shape), 0  # (L, 2, E), summed over sampled steps

    def before_step(self, step: int):
        if step % UPDATE_EVERY == 0 or step == 1:
            self.before = self.effective()

    def after_step(self):
        if self.before is None:
            return
        for layer, ((qk, ov), (qk0, ov0)) in enumerate(zip(self.effective(), self.before)):
            self.total[layer, 0] += _rel_change(qk, qk0).cpu()
            self.total[layer, 1] += _rel_change(ov, ov0).cpu()
        self.n, self.before = self.n + 1, None

    def metrics(self, step: int, i: int) -> list[tuple[int, str, float]]:
        if not self.n:
            return []
        mean = self.total[..., i] / self.n  # (L, 2)
        return [
            (step, f"update_{m}.{layer}", mean[layer, j].item())
            for layer in range(self.shape[0])
            for j, m in enumerate(("qk", "ov"))
        ]
