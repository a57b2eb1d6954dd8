"""`tied_qkv`: one W per head serves as W_Q = W_K = W_V (seed 002), plus W_O."""

from .base import Attention, init_param
from .tied_qk import tied_std


class TiedQKV(Attention):
    def __init__(self, d_model, n_heads, d_head, n_kv_heads):
        super().__init__(d_model, n_heads, d_head, n_kv_heads)
        D, H, r = d_model, n_heads, d_head
        std = tied_std(D, r)
        self.W_Q = init_param(H, D, r, std=std)  # also serves as W_K and W_V
        # W_V is smaller than standard's by std * sqrt(D); W_O makes up for it so W_OV matches.
        self.W_O = init_param(H, r, D, std=(H * r) ** -0.5 / (std * D**0.5))

    @staticmethod
    def count_params(d_model, n_heads, d_head, n_kv_heads):
        return 2 * d_model * n_heads * d_head

    def forward(self, x, causal=True):
        (q,) = self._project(x, self.W_Q)  # (*lead, B, H, T, r)
        return self._merge(self._attend(q, q, q, causal), self.W_O)  # (*lead, B, T, D)

    def per_head(self):
        return {"W_Q": self.W_Q, "W_K": self.W_Q, "W_V": self.W_Q, "W_O": self.W_O}
