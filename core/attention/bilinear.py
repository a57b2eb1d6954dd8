"""`bilinear`: one full D x D score matrix per head, scores = x W_i x^T (seed 001).

The factored pair W_Q W_K^T has rank at most r; this one can reach rank D, at H D^2 parameters
instead of 2 H D r. Values and output are as in `standard`.
"""

from .base import Attention, init_param


class Bilinear(Attention):
    def __init__(self, d_model, n_heads, d_head, n_kv_heads):
        super().__init__(d_model, n_heads, d_head, n_kv_heads)
        D, H, r = d_model, n_heads, d_head
        # standard's scale * W_Q W_K^T has entries of std 1/D; with the softmax scale 1/sqrt(r)
        # applied in forward, sqrt(r)/D here gives the same.
        self.W_bilinear = init_param(H, D, D, std=r**0.5 / D)  # (H, D, D), unscaled
        self.W_V = init_param(H, D, r, std=D**-0.5)
        self.W_O = init_param(H, r, D, std=(H * r) ** -0.5)

    @staticmethod
    def count_params(d_model, n_heads, d_head, n_kv_heads):
        return n_heads * d_model**2 + 2 * d_model * n_heads * d_head

    def forward(self, x, causal=True):
        *lead, B, T, D = x.shape
        q, v = self._project(x, self.W_bilinear, self.W_V)  # (*lead, B, H, T, D), (*lead, B, H, T, r)
        k = x.unsqueeze(-3)  # (*lead, B, 1, T, D): the keys are the raw inputs, one key head for all
        return self._merge(self._attend(q, k, v, causal), self.W_O)  # (*lead, B, T, D)

    def per_head(self):
        return {"W_QK": self.scale * self.W_bilinear, "W_V": self.W_V, "W_O": self.W_O}
