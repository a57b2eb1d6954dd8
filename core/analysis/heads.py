"""What each head does, read as the field reads it (Olsson et al. 2022; TransformerLens's head detectors).

On held-out sequences of random tokens repeated once ([r_1 .. r_k, r_1 .. r_k], the model's own vocabulary,
drawn from a seed apart from every task's):
- prev_token: the mean attention a position pays to the position just before it;
- induction (prefix matching): the mean attention a token of the second copy pays to the position just after
  the same token's first occurrence, where an induction head looks; uniform attention over the causal
  window would score about 1 / (its length), so a score near 1 is a head doing induction;
both per layer and head, from the patterns of the model's own attention (Transformer.attention_patterns).
"""

import pandas as pd
import torch

SEED = 271_828  # apart from the tasks' held-out seeds and the sweeps' data streams
N_SEQUENCES = 64
METRICS = ("prev_token", "induction")


def repeated_tokens(vocab_size: int, max_len: int, n: int = N_SEQUENCES, seed: int = SEED) -> torch.Tensor:
    """(n, 2k) sequences of k random tokens repeated, k = max_len // 2; distinct tokens where the vocabulary
    allows it, so each token of the second copy has one earlier occurrence."""
    k = max_len // 2
    gen = torch.Generator().manual_seed(seed)
    if vocab_size >= k:
        first = torch.rand(n, vocab_size, generator=gen).argsort(-1)[:, :k]
    else:
        first = torch.randint(0, vocab_size, (n, k), generator=gen)
    return torch.cat([first, first], 1)


def scores_from_patterns(patterns: torch.Tensor) -> dict[str, torch.Tensor]:
    """patterns (L, B, H, 2k, 2k) on repeated sequences -> {metric: (L, H)}."""
    T = patterns.shape[-1]
    k = T // 2
    t = torch.arange(1, T)
    prev = patterns[..., t, t - 1].mean((1, -1))  # (L, H)
    second = torch.arange(k, T)
    induction = patterns[..., second, second - k + 1].mean((1, -1))  # (L, H): the token after the first copy's
    return {"prev_token": prev, "induction": induction}


@torch.no_grad()
def head_scores(model, **labels) -> pd.DataFrame:
    """Per layer and head: prev_token and induction scores (layer, head, metric, value, **labels)."""
    cfg = model.cfg
    tokens = repeated_tokens(cfg.vocab_size, cfg.max_len).to(next(model.parameters()).device)
    scores = scores_from_patterns(model.attention_patterns(tokens).float().cpu())
    rows = [
        {"layer": layer, "head": head, "metric": m, "value": float(s[layer, head]), **labels}
        for m, s in scores.items()
        for layer in range(s.shape[0])
        for head in range(s.shape[1])
    ]
    return pd.DataFrame(rows)
