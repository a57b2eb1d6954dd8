"""`standard`: per-head W_Q, W_K, W_V (D x r) and W_O (r x D), as in Vaswani et al. (2017)."""

from .base import Attention, init_param


class Standard(Attention):
    formula = "4·D·H·r"

    def __init__(self, d_model, n_heads, d_head, n_kv_heads):
        super().__init__(d_model, n_heads, d_head, n_kv_heads)
        D, H, r = d_model, n_heads, d_head
        self.W_Q = init_param(H, D, r, std=D**-0.5)
        self.W_K = init_param(H, D, r, std=D**-0.5)
        self.W_V = init_param(H, D, r, std=D**-0.5)
        self.W_O = init_param(H, r, D, std=(H * r) ** -0.5)

    @staticmethod
    def count_params(d_model, n_heads, d_head, n_kv_heads):
        return 4 * d_model * n_heads * d_head

    def forward(self, x, causal=True):
        q, k, v = self._project(x, self.W_Q, self.W_K, self.W_V)  # (*lead, B, H, T, r) each
        return self._merge(self._attend(q, k, v, causal), self.W_O)  # (*lead, B, T, D)

    def per_head(self):
        return {"W_Q": self.W_Q, "W_K": self.W_K, "W_V": self.W_V, "W_O": self.W_O}
