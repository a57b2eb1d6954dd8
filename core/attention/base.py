"""The base class every attention parameterization derives from.

Notation: D = d_model, H = n_heads, r = d_head, G = n_kv_heads. Row-vector convention (q = x W_Q).
Per-head weights use TransformerLens names and shapes: W_Q, W_K, W_V (H, D, r) and W_O (H, r, D).

Ensembles: every forward also accepts one leading member dim E on the weights and the input
(W_Q (E, H, D, r), x (E, B, T, D)), so core.training.train runs all seeds as one batched model through
torch.func.functional_call with stacked parameters; `*lead` below is () or (E,).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

MOST = 65536  # any size beyond this is a typo here, and gets this one-line error rather than an overflow


def _positive(name: str, value) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 < value <= MOST:
        raise ValueError(f"{name}: must be a positive integer at most {MOST}, got {value!r}")


def init_param(*shape: int, std: float) -> nn.Parameter:
    return nn.Parameter(torch.randn(*shape) * std)


# Sequences up to this long attend by explicit batched matmuls (short_attention), longer ones by SDPA.
# CPU flash attention tiles every (sequence, head) pair on its own, and at a few dozen tokens its
# per-tile overhead outweighs the work: forward+backward at T=21-32, d_head 16 took 1.2-1.7x the
# matmul form on one thread, 2.3-3.7x on two (docs/benchmarks.md). Above ~64 tokens the T x T
# scores the matmul form keeps for backward cost more than the tiling saves.
SHORT_SEQ = 64


def short_attention(q, k, v, scale: float, causal: bool) -> torch.Tensor:
    """softmax(q k^T * scale + mask) v as three batched kernels, for short sequences.

    q (N, H, T, r_qk), k (N, G_k, T, r_qk), v (N, G_v, T, r) -> (N, H, T, r). The query heads that
    share a key (or value) head are stacked along the rows of one matmul, so shared heads are
    never copied H / G times."""
    N, H, T, _ = q.shape
    G_k, G_v = k.shape[1], v.shape[1]
    mask = torch.zeros(T, T, device=q.device, dtype=q.dtype)
    if causal:
        mask = mask.masked_fill(torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    q = q.reshape(N * G_k, H // G_k * T, -1)  # (N G_k, H/G_k T, r_qk)
    scores = torch.baddbmm(mask.repeat(H // G_k, 1), q, k.reshape(N * G_k, T, -1).mT, alpha=scale)
    p = scores.softmax(-1).view(N * G_v, H // G_v * T, T)  # (N G_v, H/G_v T, T)
    return torch.bmm(p, v.reshape(N * G_v, T, -1)).view(N, H, T, -1)  # (N, H, T, r)


def _repeat_heads(t: torch.Tensor, n: int) -> torch.Tensor:
    """(N, G, T, r) -> (N, n, T, r), head g repeated n / G times in place (head h reads h // (n / G))."""
    return t if t.shape[1] == n else t.repeat_interleave(n // t.shape[1], dim=1)


class Attention(nn.Module):
    """One multi-head attention layer without biases, so parameter counts are clean formulas.

    Subclasses set their parameters, `forward`, `per_head` and the analytic `count_params`.
    Initialisation rule shared by all: every effective matrix has, in expectation, the same
    RMS as in `standard` with N(0, 1/D) input projections and N(0, 1/(H r)) output projection,
    so init never decides a comparison (tested in tests/test_attention.py).
    """

    takes_kv_heads = False  # only grouped-query variants choose their number of key/value heads

    def __init__(self, d_model: int, n_heads: int, d_head: int, n_kv_heads: int):
        super().__init__()
        self.d_model, self.n_heads, self.d_head, self.n_kv_heads = d_model, n_heads, d_head, n_kv_heads
        self.scale = d_head**-0.5

    # ---- shape rules -------------------------------------------------------------------
    @classmethod
    def default_kv_heads(cls, n_heads: int) -> int:
        return n_heads

    @classmethod
    def resolve(cls, d_model: int, n_heads: int, d_head: int | None, n_kv_heads: int | None):
        """Validate sizes and fill defaults; returns (D, H, r, G) or raises a one-line ValueError."""
        _positive("d_model", d_model)
        _positive("n_heads", n_heads)
        if d_model % n_heads:
            raise ValueError(f"n_heads: must divide d_model={d_model}, got {n_heads}")
        d_head = d_model // n_heads if d_head is None else d_head
        _positive("d_head", d_head)
        default_g = cls.default_kv_heads(n_heads)
        if n_kv_heads is None:
            n_kv_heads = default_g
        _positive("n_kv_heads", n_kv_heads)
        if not cls.takes_kv_heads and n_kv_heads != default_g:
            raise ValueError(f"n_kv_heads: this parameterization fixes it to {default_g}, got {n_kv_heads}")
        if n_heads % n_kv_heads:
            raise ValueError(f"n_kv_heads: must divide n_heads={n_heads}, got {n_kv_heads}")
        return d_model, n_heads, d_head, n_kv_heads

    @staticmethod
    def count_params(d_model: int, n_heads: int, d_head: int, n_kv_heads: int) -> int:
        raise NotImplementedError

    @staticmethod
    def upgrade_state(state: dict, prefix: str) -> None:
        """Rename or re-lay out, in place, the entries under prefix of a state saved by an older version of
        this class (a state dict, or AdamW moments keyed the same way); load_state_dict calls it."""

    # ---- the per-head view -------------------------------------------------------------
    def per_head(self) -> dict[str, torch.Tensor]:
        """W_Q, W_K, W_V (H, D, r) and W_O (H, r, D) wherever this parameterization defines them."""
        raise NotImplementedError

    @torch.no_grad()
    def head_weights(self) -> dict[str, torch.Tensor]:
        """Detached per-head effective matrices; W_QK (H, D, D) includes the softmax scale.

        Contract: out = sum_h softmax(X W_QK[h] X^T + mask) X W_OV[h] equals forward(X).
        """
        w = {k: v.detach().clone() for k, v in self.per_head().items()}
        if "W_QK" not in w:
            w["W_QK"] = self.scale * w["W_Q"] @ w["W_K"].mT  # (H, D, D)
        if "W_OV" not in w:
            w["W_OV"] = w["W_V"] @ w["W_O"]  # (H, D, D)
        return w

    # ---- shared building blocks --------------------------------------------------------
    @staticmethod
    def _project(x: torch.Tensor, *weights: torch.Tensor) -> list[torch.Tensor]:
        """One matmul for several per-head projections (*lead, n_i, D, r_i); each out as (*lead, B, n_i, T, r_i)."""
        *lead, B, T, D = x.shape
        flat = [w.transpose(-3, -2).reshape(*lead, D, -1) for w in weights]  # (*lead, D, n_i * r_i)
        y = x.reshape(*lead, B * T, D) @ torch.cat(flat, dim=-1)  # (*lead, B T, sum n_i r_i)
        sizes = [f.shape[-1] for f in flat]
        return [
            part.reshape(*lead, B, T, w.shape[-3], w.shape[-1]).transpose(-3, -2)  # (*lead, B, n_i, T, r_i)
            for part, w in zip(y.split(sizes, dim=-1), weights)
        ]

    def _attend(self, q, k, v, causal: bool) -> torch.Tensor:
        """q (*lead, B, H, T, r_qk), k (*lead, B, G_k, T, r_qk), v (*lead, B, G_v, T, r) -> (*lead, B, H, T, r).

        G_k and G_v divide H: query head h reads key head h // (H / G_k) and value head h // (H / G_v)."""
        batch = q.shape[:-3]  # (*lead, B): members fold into the batch, so one call serves the ensemble
        q, k, v = (t.reshape(-1, *t.shape[-3:]) for t in (q, k, v))  # (*lead B, n, T, r)
        if q.device.type == "cpu" and q.shape[-2] <= SHORT_SEQ:
            o = short_attention(q, k, v, self.scale, causal)
        else:
            o = self._flash(q, k, v, causal)
        return o.reshape(*batch, *o.shape[1:])  # (*lead, B, H, T, r)

    def _flash(self, q, k, v, causal: bool) -> torch.Tensor:
        """SDPA (CPU flash attention: memory linear in T) on (N, n, T, r) tensors."""
        H = q.shape[1]
        if k.shape[1] != v.shape[1]:  # SDPA needs as many key heads as value heads
            k, v = _repeat_heads(k, H), _repeat_heads(v, H)  # (N, H, T, r)
        gqa = k.shape[1] != H
        if gqa and q.device.type == "cpu" and q.shape[0] * k.shape[1] < torch.get_num_threads():
            # CPU flash attention's backward shares work out by (batch, key/value head): with fewer
            # such pairs than threads, threads idle (mqa at batch 1, T=1024 took 1.1-1.6x standard's
            # time). Repeating K/V per query head costs one (N, H, T, r) copy and restores the split.
            k, v = _repeat_heads(k, H), _repeat_heads(v, H)  # (N, H, T, r)
            gqa = False
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=self.scale, enable_gqa=gqa)

    @staticmethod
    def _merge(o: torch.Tensor, W_O: torch.Tensor) -> torch.Tensor:
        """o (*lead, B, H, T, r), W_O (*lead, H, r, D) -> (*lead, B, T, D): the sum over heads is one matmul."""
        *lead, B, H, T, r = o.shape
        y = o.transpose(-3, -2).reshape(*lead, B * T, H * r) @ W_O.reshape(*lead, H * r, -1)  # (*lead, B T, D)
        return y.reshape(*lead, B, T, -1)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, n_heads={self.n_heads}, d_head={self.d_head}, n_kv_heads={self.n_kv_heads}"
