"""`tied_qk`: W_Q = W_K per head (Reformer's shared-QK), so every head's scores are symmetric."""

from .base import Attention, init_param


def tied_std(d_model: int, d_head: int) -> float:
    """Init std for a matrix W used as both W_Q and W_K.

    W W^T has a positive diagonal, so its mean square is rho = 1 + (r + 1)/D times that of an
    untied W_Q W_K^T. No single scale matches both W and W W^T to standard's, so we split the
    mismatch evenly in log scale: W is rho^(-1/6) below standard, W_QK rho^(1/6) above.
    """
    rho = 1 + (d_head + 1) / d_model
    return rho ** (-1 / 6) * d_model**-0.5


class TiedQK(Attention):
    def __init__(self, d_model, n_heads, d_head, n_kv_heads):
        super().__init__(d_model, n_heads, d_head, n_kv_heads)
        D, H, r = d_model, n_heads, d_head
        self.W_Q = init_param(H, D, r, std=tied_std(D, r))  # also serves as W_K
        self.W_V = init_param(H, D, r, std=D**-0.5)
        self.W_O = init_param(H, r, D, std=(H * r) ** -0.5)

    @staticmethod
    def count_params(d_model, n_heads, d_head, n_kv_heads):
        return 3 * d_model * n_heads * d_head

    def forward(self, x, causal=True):
        q, v = self._project(x, self.W_Q, self.W_V)  # (*lead, B, H, T, r) each
        return self._merge(self._attend(q, q, v, causal), self.W_O)  # (*lead, B, T, D)

    def per_head(self):
        return {"W_Q": self.W_Q, "W_K": self.W_Q, "W_V": self.W_V, "W_O": self.W_O}
