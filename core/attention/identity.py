"""`identity`: no projections at all: Q = K = V = X, split into H channel groups (seed 004)."""

import torch

from .base import Attention


class Identity(Attention):
    def __init__(self, d_model, n_heads, d_head, n_kv_heads):
        super().__init__(d_model, n_heads, d_head, n_kv_heads)
        E = torch.eye(d_model).reshape(d_model, n_heads, d_head).transpose(0, 1)  # (H, D, r): channel group h
        self.register_buffer("E", E.contiguous(), persistent=False)  # a buffer so it follows .to(device)

    @classmethod
    def resolve(cls, d_model, n_heads, d_head, n_kv_heads):
        D, H, r, G = super().resolve(d_model, n_heads, d_head, n_kv_heads)
        if r != D // H:
            raise ValueError(f"d_head: identity splits d_model into heads, so it must be {D // H}, got {r}")
        return D, H, r, G

    @staticmethod
    def count_params(d_model, n_heads, d_head, n_kv_heads):
        return 0

    def forward(self, x, causal=True):
        *lead, B, T, D = x.shape
        q = x.reshape(*lead, B, T, self.n_heads, self.d_head).transpose(-3, -2)  # (*lead, B, H, T, r)
        o = self._attend(q, q, q, causal)  # (*lead, B, H, T, r)
        return o.transpose(-3, -2).reshape(*lead, B, T, D)  # concatenating heads is W_O = E_h^T

    def per_head(self):
        return {"W_Q": self.E, "W_K": self.E, "W_V": self.E, "W_O": self.E.mT}
