"""Folds between parameterizations: the numerical answers to seeds 000/003 and 001.

`fold_stacked`: W^Q W_i^Q is one D x r matrix per head, so a stacked layer *is* a standard one.
`standard_to_bilinear`: W_Q W_K^T is one D x D matrix per head (rank <= r), so bilinear contains standard.
"""

import torch

from .bilinear import Bilinear
from .stacked import Stacked
from .standard import Standard


@torch.no_grad()
def fold_stacked(stacked: Stacked) -> Standard:
    """A standard layer with W_Q = W^Q W_i^Q (and likewise K, V): the same function, 3 D^2 fewer parameters."""
    w = stacked.per_head()
    out = Standard(stacked.d_model, stacked.n_heads, stacked.d_head, stacked.n_kv_heads)
    for name in ("W_Q", "W_K", "W_V", "W_O"):
        getattr(out, name).copy_(w[name])
    return out.to(stacked.W_O.device)


@torch.no_grad()
def standard_to_bilinear(standard: Standard) -> Bilinear:
    """A bilinear layer whose W_i is standard's W_Q W_K^T (the softmax scale stays in forward)."""
    out = Bilinear(standard.d_model, standard.n_heads, standard.d_head, standard.n_kv_heads)
    out.W_bilinear.copy_(standard.W_Q @ standard.W_K.mT)  # (H, D, D), rank <= r
    out.W_V.copy_(standard.W_V)
    out.W_O.copy_(standard.W_O)
    return out.to(standard.W_O.device)


@torch.no_grad()
def fold_check(d_model: int = 64, n_heads: int = 4, seq_len: int = 32, batch: int = 4, seed: int = 0) -> dict:
    """Max abs output difference of both folds on random inputs (float32), for the Parameters page."""
    torch.manual_seed(seed)
    x = torch.randn(batch, seq_len, d_model)
    stacked = Stacked(d_model, n_heads, d_model // n_heads, n_heads)
    standard = Standard(d_model, n_heads, d_model // n_heads, n_heads)
    return {
        "stacked → standard": (stacked(x) - fold_stacked(stacked)(x)).abs().max().item(),
        "standard → bilinear": (standard(x) - standard_to_bilinear(standard)(x)).abs().max().item(),
    }
