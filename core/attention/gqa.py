"""`gqa`: grouped-query attention (Ainslie et al. 2023): G key/value heads, each shared by H/G query heads."""

from .base import Attention, init_param


class GQA(Attention):
    takes_kv_heads = True

    @classmethod
    def default_kv_heads(cls, n_heads):
        return max(1, n_heads // 2)

    def __init__(self, d_model, n_heads, d_head, n_kv_heads):
        super().__init__(d_model, n_heads, d_head, n_kv_heads)
        D, H, r, G = d_model, n_heads, d_head, n_kv_heads
        self.W_Q = init_param(H, D, r, std=D**-0.5)
        self.W_K = init_param(G, D, r, std=D**-0.5)  # (G, D, r)
        self.W_V = init_param(G, D, r, std=D**-0.5)  # (G, D, r)
        self.W_O = init_param(H, r, D, std=(H * r) ** -0.5)

    @staticmethod
    def count_params(d_model, n_heads, d_head, n_kv_heads):
        return 2 * d_model * n_heads * d_head + 2 * d_model * n_kv_heads * d_head

    def forward(self, x, causal=True):
        q, k, v = self._project(x, self.W_Q, self.W_K, self.W_V)  # (*lead, B, H, T, r), (*lead, B, G, T, r) x2
        return self._merge(self._attend(q, k, v, causal), self.W_O)  # (*lead, B, T, D)

    def per_head(self):
        group = self.n_heads // self.n_kv_heads  # query head h reads key/value head h // group
        return {
            "W_Q": self.W_Q,
            "W_K": self.W_K.repeat_interleave(group, dim=-3),  # (*lead, H, D, r)
            "W_V": self.W_V.repeat_interleave(group, dim=-3),  # (*lead, H, D, r)
            "W_O": self.W_O,
        }
