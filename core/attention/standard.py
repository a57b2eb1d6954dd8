"""`standard`: per-head W_Q, W_K, W_V (D x r) and W_O (r x D), as in Vaswani et al. (2017).

W_Q, W_K and W_V are stored as one parameter W_QKV (D, 3, H, r), as nn.MultiheadAttention stores
its in_proj_weight: the input projection is then one matmul on the parameter as it lies, with no
per-call concatenation of three weights (forward) or splitting of their gradient (backward).
W_Q, W_K, W_V stay available as TransformerLens-shaped (H, D, r) views of it.
"""

import torch
import torch.nn as nn

from .base import Attention, init_param


class Standard(Attention):
    def __init__(self, d_model, n_heads, d_head, n_kv_heads):
        super().__init__(d_model, n_heads, d_head, n_kv_heads)
        D, H, r = d_model, n_heads, d_head
        W_Q, W_K, W_V = (torch.randn(H, D, r) * D**-0.5 for _ in range(3))  # the draws of three init_param calls
        self.W_QKV = nn.Parameter(torch.stack([W_Q, W_K, W_V], dim=1).transpose(0, 2).contiguous())  # (D, 3, H, r)
        self.W_O = init_param(H, r, D, std=(H * r) ** -0.5)

    def _view(self, i: int) -> torch.Tensor:
        return self.W_QKV[..., i, :, :].transpose(-3, -2)  # (*lead, H, D, r)

    W_Q = property(lambda self: self._view(0))
    W_K = property(lambda self: self._view(1))
    W_V = property(lambda self: self._view(2))

    @staticmethod
    def count_params(d_model, n_heads, d_head, n_kv_heads):
        return 4 * d_model * n_heads * d_head

    def forward(self, x, causal=True):
        *lead, B, T, D = x.shape
        H, r = self.n_heads, self.d_head
        y = x.reshape(*lead, B * T, D) @ self.W_QKV.flatten(-3)  # (*lead, B T, 3 H r)
        q, k, v = (t.transpose(-3, -2) for t in y.view(*lead, B, T, 3, H, r).unbind(-3))  # (*lead, B, H, T, r) each
        return self._merge(self._attend(q, k, v, causal), self.W_O)  # (*lead, B, T, D)

    def per_head(self):
        return {"W_Q": self.W_Q, "W_K": self.W_K, "W_V": self.W_V, "W_O": self.W_O}
