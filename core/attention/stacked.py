"""`stacked`: a shared D x D projection, then a per-head one on top: q_i = x W^Q W_i^Q.

This is the reading of the lecture slides in seeds 000/003. The product of the two factors is
one D x r matrix per head, so the model can express exactly what `standard` can
(`core.attention.fold.fold_stacked` proves it numerically); it only costs 3 D^2 more parameters
and 3 D^2 multiply-adds per token.
"""

import torch

from .base import Attention, init_param


class Stacked(Attention):
    formula = "3·D² + 4·D·H·r"

    def __init__(self, d_model, n_heads, d_head, n_kv_heads):
        super().__init__(d_model, n_heads, d_head, n_kv_heads)
        D, H, r = d_model, n_heads, d_head
        # Both factors N(0, 1/D): the product's entries then have variance D * (1/D) * (1/D) = 1/D,
        # exactly standard's, so the folded W_Q, W_K, W_V start at the same scale.
        self.W_shared = init_param(3, D, D, std=D**-0.5)  # (3, D, D): W^Q, W^K, W^V
        self.W_Q = init_param(H, D, r, std=D**-0.5)
        self.W_K = init_param(H, D, r, std=D**-0.5)
        self.W_V = init_param(H, D, r, std=D**-0.5)
        self.W_O = init_param(H, r, D, std=(H * r) ** -0.5)

    @staticmethod
    def count_params(d_model, n_heads, d_head, n_kv_heads):
        return 3 * d_model**2 + 4 * d_model * n_heads * d_head

    def forward(self, x, causal=True):
        *lead, B, T, D = x.shape
        H, r = self.n_heads, self.d_head
        W_shared = self.W_shared.transpose(-3, -2).reshape(*lead, D, 3 * D)  # (*lead, D, 3D): W^Q | W^K | W^V
        shared = x.reshape(*lead, B * T, D) @ W_shared  # (*lead, B T, 3D)
        per_head = torch.stack([self.W_Q, self.W_K, self.W_V], dim=-4)  # (*lead, 3, H, D, r)
        per_head = per_head.transpose(-3, -2).reshape(*lead, 3, D, H * r)  # (*lead, 3, D, H r)
        y = shared.reshape(*lead, B * T, 3, D).transpose(-3, -2) @ per_head  # (*lead, 3, B T, H r)
        y = y.reshape(*lead, 3, B, T, H, r).transpose(-3, -2)  # (*lead, 3, B, H, T, r)
        q, k, v = y.unbind(dim=-5)  # (*lead, B, H, T, r) each
        return self._merge(self._attend(q, k, v, causal), self.W_O)  # (*lead, B, T, D)

    def per_head(self):
        W_sQ, W_sK, W_sV = self.W_shared  # (D, D) each
        return {"W_Q": W_sQ @ self.W_Q, "W_K": W_sK @ self.W_K, "W_V": W_sV @ self.W_V, "W_O": self.W_O}
