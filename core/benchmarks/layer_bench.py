"""One attention layer's forward+backward per parameterization, nn.MultiheadAttention and bare SDPA, timed in
paired rounds (part 1 of `python -m core bench`), with its FLOPs and peak memory."""

import pandas as pd
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils import benchmark
from torch.utils.flop_counter import FlopCounterMode

from ..attention import registry as attention

REFERENCE = "nn.MultiheadAttention"
FULL_GRID = {"d_model": [64, 128, 256, 512], "seq_len": [64, 256, 1024], "n_heads": [1, 4, 8]}
QUICK_GRID = {"d_model": [32], "seq_len": [16], "n_heads": [1, 2]}
TOKENS = 1024  # batch = TOKENS // seq_len, so every grid point moves the same number of tokens


class Sdpa(nn.Module):
    """Bare F.scaled_dot_product_attention with the projections as plain matmuls: the floor."""

    def __init__(self, d_model, n_heads):
        super().__init__()
        self.n_heads = n_heads
        self.W_in = nn.Parameter(torch.randn(d_model, 3 * d_model) * d_model**-0.5)
        self.W_out = nn.Parameter(torch.randn(d_model, d_model) * d_model**-0.5)

    def forward(self, x):
        B, T, D = x.shape
        q, k, v = (x @ self.W_in).view(B, T, 3, self.n_heads, -1).permute(2, 0, 3, 1, 4)  # (B, H, T, r) each
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return o.transpose(1, 2).reshape(B, T, D) @ self.W_out


class Mha(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.mha = nn.MultiheadAttention(d_model, n_heads, bias=False, batch_first=True)

    def forward(self, x):
        T = x.shape[1]
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        return self.mha(x, x, x, attn_mask=mask, is_causal=True, need_weights=False)[0]


def layer(name: str, d_model: int, n_heads: int) -> nn.Module:
    if name == REFERENCE:
        return Mha(d_model, n_heads)
    if name == "sdpa":
        return Sdpa(d_model, n_heads)
    return attention.build(name, d_model, n_heads)


def memory_mb(module: nn.Module, x: torch.Tensor) -> float:
    """Peak bytes of one forward+backward: CUDA's allocator peak; on CPU, parameters + gradients +
    the tensors autograd saves for backward + the output (what a forward+backward must hold at once)."""
    if x.is_cuda:
        torch.cuda.reset_peak_memory_stats()
        module(x).sum().backward()
        return torch.cuda.max_memory_allocated() / 2**20
    saved = []

    def pack(t):
        saved.append(t.untyped_storage().nbytes() if t.device.type != "meta" else 0)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = module(x)
    out.sum().backward()
    params = sum(p.numel() * p.element_size() for p in module.parameters())
    return (2 * params + sum(saved) + out.numel() * out.element_size()) / 2**20


def fwd_bwd(module: nn.Module, x: torch.Tensor):
    def step():
        module.zero_grad(set_to_none=True)
        x.grad = None
        module(x).sum().backward()

    return step


def layer_flops(module: nn.Module, x: torch.Tensor) -> int:
    """FLOPs of one forward+backward, counted by torch's FlopCounterMode."""
    with FlopCounterMode(display=False) as counter:
        fwd_bwd(module, x)()
    return counter.get_total_flops()


def round_robin(steps: dict, rounds: int, min_time: float) -> dict[str, list[float]]:
    """Seconds per call of each step, one sample per round; rounds alternate the order so drift hits all alike."""
    timers = {
        n: benchmark.Timer("step()", globals={"step": f}, num_threads=torch.get_num_threads()) for n, f in steps.items()
    }
    number = {n: max(1, int(min_time / t.timeit(2).median)) for n, t in timers.items()}  # also warms up
    names, samples = list(steps), {n: [] for n in steps}
    for r in range(rounds):
        for n in names[r % len(names) :] + names[: r % len(names)]:
            samples[n].append(timers[n].timeit(number[n]).median)
    return samples


def attention_bench(grid: dict, device, rounds: int = 15, min_time: float = 0.03, log=print) -> pd.DataFrame:
    """Every layer at every grid point; `ratio` is the median over rounds of (this layer's time / the reference's
    time in the same round): paired samples cancel the machine's drift, which moves single timings by +-10%."""
    names = [*attention.ATTENTION, "sdpa", REFERENCE]
    rows = []
    for D in grid["d_model"]:
        for T in grid["seq_len"]:
            for H in grid["n_heads"]:
                if D % H:
                    continue
                torch.manual_seed(0)
                x = torch.randn(max(1, TOKENS // T), T, D, device=device, requires_grad=True)
                mods = {n: layer(n, D, H).to(device) for n in names}
                secs = round_robin({n: fwd_bwd(m, x) for n, m in mods.items()}, rounds, min_time)
                ref = torch.tensor(secs[REFERENCE])
                for n, m in mods.items():
                    paired = torch.tensor(secs[n]) / ref  # (rounds,)
                    rows.append(
                        {
                            "kind": "attention",
                            "attention": n,
                            "d_model": D,
                            "seq_len": T,
                            "n_heads": H,
                            "batch": x.shape[0],
                            "ms": 1e3 * float(torch.tensor(secs[n]).quantile(0.5)),
                            "ratio": float(paired.quantile(0.5)),
                            "ratio_q25": float(paired.quantile(0.25)),
                            "ratio_q75": float(paired.quantile(0.75)),
                            "gflop": layer_flops(m, x) / 1e9,
                            "peak_mb": memory_mb(m, x),
                        }
                    )
                ratio = next(r["ratio"] for r in rows[-len(mods) :] if r["attention"] == "standard")
                log(f"attention D={D} T={T} H={H}: standard {ratio:.2f}x {REFERENCE}")
    df = pd.DataFrame(rows)
    key = ["d_model", "seq_len", "n_heads"]
    by_point = df.set_index(key)
    std = by_point[by_point.attention == "standard"]
    # time per FLOP relative to standard's: above 1 means slower than its own arithmetic explains
    df["ms_per_gflop_vs_standard"] = (df.ms / df.gflop) / by_point.index.map(std.ms / std.gflop).to_numpy()
    return df
