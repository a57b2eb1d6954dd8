"""A tiny decoder-only transformer: learned absolute positions, pre-LayerNorm blocks.

Every layer also runs as an ensemble: with parameters stacked to (E, ...) by torch.func.stack_module_state
and swapped in by functional_call, tokens (E, B, T) give logits (E, B, T, V), member e computed with
member e's weights only. The layers below are nn.Embedding/LayerNorm/Linear (same parameters, same
init) whose forward also takes that leading member dim, as batched kernels instead of vmap.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..attention import registry as attention
from .config import ModelConfig


class Embedding(nn.Embedding):
    def forward(self, tokens):  # (*lead, B, T) -> (*lead, B, T, D)
        if self.weight.dim() == 2:
            return F.embedding(tokens, self.weight)
        E, V, D = self.weight.shape  # members' tables side by side: one lookup for all
        offset = torch.arange(E, device=tokens.device).view(E, 1, 1) * V
        return F.embedding(tokens + offset, self.weight.reshape(E * V, D))


class LayerNorm(nn.LayerNorm):
    def forward(self, x):  # (*lead, B, T, D)
        if self.weight.dim() == 1:
            return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        # One fused call per member (its affine inside the kernel, forward and backward), as the plain
        # model runs it: a separate per-member affine costs three more passes over the activations backward.
        members = zip(x.unbind(0), self.weight, self.bias)
        return torch.stack([F.layer_norm(m, self.normalized_shape, w, b, self.eps) for m, w, b in members])


class Linear(nn.Linear):
    def forward(self, x):  # (*lead, B, T, in) -> (*lead, B, T, out)
        if self.weight.dim() == 2:
            return F.linear(x, self.weight, self.bias)
        E, B, T, _ = x.shape
        x = x.reshape(E, B * T, -1)
        W = self.weight.mT  # (E, in, out)
        y = x @ W if self.bias is None else torch.baddbmm(self.bias.unsqueeze(1), x, W)  # (E, B T, out)
        return y.reshape(E, B, T, -1)


class MLP(nn.Module):
    def __init__(self, d_model: int, d_mlp: int):
        super().__init__()
        self.fc_in = Linear(d_model, d_mlp)
        self.fc_out = Linear(d_mlp, d_model)

    def forward(self, x):
        return self.fc_out(F.gelu(self.fc_in(x)))


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.ln1 = LayerNorm(cfg.d_model)
        self.attn = attention.build(cfg.attention, cfg.d_model, cfg.n_heads, cfg.d_head, cfg.n_kv_heads)
        self.ln2 = LayerNorm(cfg.d_model) if cfg.mlp else None
        self.mlp = MLP(cfg.d_model, cfg.d_mlp) if cfg.mlp else None

    def forward(self, x, causal=True):
        x = x + self.attn(self.ln1(x), causal=causal)  # (*lead, B, T, D)
        if self.mlp is not None:
            x = x + self.mlp(self.ln2(x))
        return x


class Transformer(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = Embedding(cfg.vocab_size, cfg.d_model)
        self.pos_embed = Embedding(cfg.max_len, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.ln_final = LayerNorm(cfg.d_model)
        self.unembed = Linear(cfg.d_model, cfg.vocab_size, bias=False)
        # Embeddings keep PyTorch's N(0, 1): GPT-2's 0.02 suits d_model=768, but at d_model=64 it makes the
        # embeddings too small for the previous-token head that associative recall needs to form.

    def residual(self, tokens: torch.Tensor) -> torch.Tensor:
        T = tokens.shape[-1]
        pos = self.pos_embed.weight[..., :T, :].unsqueeze(-3)  # (*lead, 1, T, D)
        return self.embed(tokens) + pos  # (*lead, B, T, D)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.residual(tokens)  # (*lead, B, T, D)
        for block in self.blocks:
            x = block(x)
        return self.unembed(self.ln_final(x))  # (*lead, B, T, vocab)

    def param_breakdown(self) -> dict[str, int]:
        """Parameter counts per component; they sum to the total."""
        count = lambda mods: sum(p.numel() for m in mods if m is not None for p in m.parameters())  # noqa: E731
        return {
            "embeddings": count([self.embed, self.pos_embed]),
            "attention": count([b.attn for b in self.blocks]),
            "mlp": count([b.mlp for b in self.blocks]),
            "norms": count([n for b in self.blocks for n in (b.ln1, b.ln2)] + [self.ln_final]),
            "unembedding": count([self.unembed]),
        }

    def upgrade_state(self, state: dict) -> dict:
        """A state keyed by parameter name (a state dict, AdamW moments) saved by an older layout, brought up to
        this one in place (load_state_dict does it for parameters by itself)."""
        for i, block in enumerate(self.blocks):
            block.attn.upgrade_state(state, f"blocks.{i}.attn.")
        return state

    def head_weights(self) -> list[dict[str, torch.Tensor]]:
        """Per layer, the attention layer's head_weights() (TransformerLens names and shapes)."""
        return [b.attn.head_weights() for b in self.blocks]

    @torch.no_grad()
    def attention_patterns(self, tokens: torch.Tensor) -> torch.Tensor:
        """(L, B, H, T, T) attention probabilities, from each layer's W_QK on its real input."""
        T = tokens.shape[-1]
        mask = torch.ones(T, T, dtype=torch.bool, device=tokens.device).triu(1)
        x, patterns = self.residual(tokens), []
        for block in self.blocks:
            h = block.ln1(x)  # (B, T, D): what the attention layer reads
            W_QK = block.attn.head_weights()["W_QK"]  # (H, D, D)
            scores = torch.einsum("btd,hde,bse->bhts", h, W_QK, h).masked_fill(mask, float("-inf"))
            patterns.append(scores.softmax(-1))  # (B, H, T, T)
            x = block(x)
        return torch.stack(patterns)


def count_model_params(cfg: ModelConfig) -> dict[str, int]:
    """The breakdown from formulas, without building the model (for size sweeps on the Parameters page)."""
    D, V, L = cfg.d_model, cfg.vocab_size, cfg.n_layers
    out = {
        "embeddings": (V + cfg.max_len) * D,
        "attention": L * attention.count_params(cfg.attention, D, cfg.n_heads, cfg.d_head, cfg.n_kv_heads),
        "mlp": L * (2 * D * cfg.d_mlp + cfg.d_mlp + D) if cfg.mlp else 0,
        "norms": (2 * L * (2 if cfg.mlp else 1) + 2) * D,
        "unembedding": D * V,
    }
    return out


def measured_breakdown(cfg: ModelConfig) -> dict[str, int]:
    """The breakdown of a built model: sum(p.numel()) per component."""
    return Transformer(cfg).param_breakdown()
