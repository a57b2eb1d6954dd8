"""`stacked`: a shared D x D projection, then a per-head one on top: q_i = x W^Q W_i^Q.

This is the reading of the lecture slides in seeds 000/003. The product of the two factors is
one D x r matrix per head, so the model can express exactly what `standard` can
(`core.attention.fold.fold_stacked` proves it numerically); it only costs 3 D^2 more parameters
and 3 D^2 multiply-adds per token.
"""

import torch
import torch.nn as nn

from .base import Attention, init_param


class Stacked(Attention):
    def __init__(self, d_model, n_heads, d_head, n_kv_heads):
        super().__init__(d_model, n_heads, d_head, n_kv_heads)
        D, H, r = d_model, n_heads, d_head
        # Both factors N(0, 1/D): the product's entries then have variance D * (1/D) * (1/D) = 1/D,
        # exactly standard's, so the folded W_Q, W_K, W_V start at the same scale.
        # Stored fused in standard's W_QKV layout (D, 3, H, r), so no call concatenates or transposes
        # weights; the draws are those of init_param(3, D, D) and three init_param(H, D, r).
        W_shared = torch.randn(3, D, D) * D**-0.5  # W^Q, W^K, W^V
        W_Q, W_K, W_V = (torch.randn(H, D, r) * D**-0.5 for _ in range(3))
        self.W_shared = nn.Parameter(W_shared.transpose(0, 1).contiguous())  # (D, 3, D)
        # the per-head factors W_i^Q, W_i^K, W_i^V; a name of their own, since x W_QKV_head is not q
        self.W_QKV_head = nn.Parameter(torch.stack([W_Q, W_K, W_V], dim=1).transpose(0, 2).contiguous())  # (D, 3, H, r)
        self.W_O = init_param(H, r, D, std=(H * r) ** -0.5)

    def _view(self, i: int) -> torch.Tensor:
        return self.W_QKV_head[..., i, :, :].transpose(-3, -2)  # (*lead, H, D, r)

    W_Q = property(lambda self: self._view(0))
    W_K = property(lambda self: self._view(1))
    W_V = property(lambda self: self._view(2))

    @staticmethod
    def count_params(d_model, n_heads, d_head, n_kv_heads):
        return 3 * d_model**2 + 4 * d_model * n_heads * d_head

    def forward(self, x, causal=True):
        *lead, B, T, D = x.shape
        H, r = self.n_heads, self.d_head
        shared = x.reshape(*lead, B * T, D) @ self.W_shared.flatten(-2)  # (*lead, B T, 3D): x W^Q | x W^K | x W^V
        # three matmuls on column slices, not one bmm over a (3, B T, D) view: CPU GEMMs run a batch of
        # three slower than three separate calls (docs/benchmarks.md)
        q, k, v = (
            (part @ self.W_QKV_head[..., i, :, :].flatten(-2)).view(*lead, B, T, H, r).transpose(-3, -2)
            for i, part in enumerate(shared.split(D, dim=-1))
        )  # (*lead, B, H, T, r) each
        return self._merge(self._attend(q, k, v, causal), self.W_O)  # (*lead, B, T, D)

    @staticmethod
    def upgrade_state(state: dict, prefix: str) -> None:
        """Files saved before the per-head factors took standard's layout hold them as W_QKV (3, D, H, r)."""
        old = state.pop(prefix + "W_QKV", None)
        if old is not None:
            state[prefix + "W_QKV_head"] = old.movedim(-4, -3)  # (*lead, D, 3, H, r)

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        self.upgrade_state(state_dict, prefix)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def per_head(self):
        W_sQ, W_sK, W_sV = (w.unsqueeze(-3) for w in self.W_shared.unbind(-2))  # (*lead, 1, D, D) each
        return {"W_Q": W_sQ @ self.W_Q, "W_K": W_sK @ self.W_K, "W_V": W_sV @ self.W_V, "W_O": self.W_O}
