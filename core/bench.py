"""`python -m core bench`: everything compared is measured side by side in one run, so ratios hold.

1. attention: forward+backward of one layer per parameterization, nn.MultiheadAttention and bare SDPA.
2. training: the ensemble engine against the plain per-run loop on the same small sweep.
3. utilisation: achieved FLOP/s of training steps against this machine's measured matmul peak.
"""

import time

import pandas as pd
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils import benchmark
from torch.utils.flop_counter import FlopCounterMode

from . import attention
from . import store as st
from .config import ModelConfig, TaskConfig, TrainConfig
from .reference import train_plain
from .tasks import make_task
from .train import default_device, init_model, masked_ce, train_ensemble

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


def time_fwd_bwd(module: nn.Module, x: torch.Tensor, min_run_time: float) -> float:
    """Median seconds of one forward+backward (torch.utils.benchmark: warm-up, repeats, median)."""

    def step():
        module.zero_grad(set_to_none=True)
        x.grad = None
        module(x).sum().backward()

    timer = benchmark.Timer(stmt="step()", globals={"step": step}, num_threads=torch.get_num_threads())
    return timer.blocked_autorange(min_run_time=min_run_time).median


def attention_bench(grid: dict, device, min_run_time: float = 0.2, log=print) -> pd.DataFrame:
    names = [*attention.ATTENTION, "sdpa", REFERENCE]
    rows = []
    for D in grid["d_model"]:
        for T in grid["seq_len"]:
            for H in grid["n_heads"]:
                if D % H:
                    continue
                torch.manual_seed(0)
                x = torch.randn(max(1, TOKENS // T), T, D, device=device, requires_grad=True)
                for name in names:
                    m = layer(name, D, H).to(device)
                    rows.append({"kind": "attention", "attention": name, "d_model": D, "seq_len": T, "n_heads": H,
                                 "batch": x.shape[0], "ms": 1e3 * time_fwd_bwd(m, x, min_run_time),
                                 "peak_mb": memory_mb(m, x)})  # fmt: skip
                log(f"attention D={D} T={T} H={H} done")
    df = pd.DataFrame(rows)
    ref = df[df.attention == REFERENCE].set_index(["d_model", "seq_len", "n_heads"])["ms"]
    df["ratio"] = df.ms / df.set_index(["d_model", "seq_len", "n_heads"]).index.map(ref).to_numpy()
    return df


def matmul_peak(n: int = 1024, device="cpu") -> float:
    """float32 FLOP/s of a large square matmul, median of repeats, at the thread count in use."""
    a, b = torch.randn(n, n, device=device), torch.randn(n, n, device=device)
    t = benchmark.Timer("a @ b", globals={"a": a, "b": b}, num_threads=torch.get_num_threads())
    return 2 * n**3 / t.blocked_autorange(min_run_time=0.5).median


def step_flops(model_cfg: ModelConfig, task_cfg: TaskConfig, batch: int) -> int:
    """FLOPs of one training step (forward + backward) of one model, counted by torch's FlopCounterMode."""
    task = make_task(task_cfg)
    model = init_model(model_cfg, 0)
    x, y, m = task.sample(batch, torch.Generator().manual_seed(0))
    with FlopCounterMode(display=False) as counter:
        masked_ce(model(x), y, m)[0].backward()
    return counter.get_total_flops()


def training_bench(attentions, task: str, seeds: int, train: TrainConfig, device, log=print) -> pd.DataFrame:
    """Engine vs plain loop on the same sweep: runs/minute, losses, and utilisation of the engine."""
    task_cfg = TaskConfig(task)
    t = make_task(task_cfg)
    peak = matmul_peak(device=device)
    rows = []
    for name in attentions:
        cfg = ModelConfig(attention=name, vocab_size=t.vocab_size, max_len=t.seq_len)
        train_ensemble(cfg, task_cfg, TrainConfig(steps=3, eval_every=3), [0], device)  # warm-up
        t0 = time.perf_counter()
        results = train_ensemble(cfg, task_cfg, train, list(range(seeds)), device)
        engine_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        plain = [train_plain(cfg, task_cfg, train, s, device) for s in range(seeds)]
        plain_s = time.perf_counter() - t0
        # one log at the end: the engine's train_loss is the mean over all steps
        engine_mean = [next(v for _, k, v in r.metrics if k == "train_loss") for r in results]
        diff = max(abs(e - sum(p) / len(p)) for e, p in zip(engine_mean, plain))
        flops = step_flops(cfg, task_cfg, train.batch_size) * seeds * train.steps
        rows.append({"kind": "training", "attention": name, "task": task, "seeds": seeds, "steps": train.steps,
                     "engine_runs_per_min": 60 * seeds / engine_s, "plain_runs_per_min": 60 * seeds / plain_s,
                     "speedup": plain_s / engine_s, "max_loss_diff": diff, "engine_gflops": flops / engine_s / 1e9,
                     "plain_gflops": flops / plain_s / 1e9, "peak_gflops": peak / 1e9,
                     "utilisation": flops / engine_s / peak, "threads": torch.get_num_threads()})  # fmt: skip
        log(f"training {name}: engine {rows[-1]['speedup']:.2f}x the plain loop, max loss diff {diff:.1e}")
    return pd.DataFrame(rows)


def add_bench(sub):
    p = sub.add_parser("bench", help="benchmark attention layers, the training engine and utilisation")
    p.add_argument("--store", default="store", help="store directory for the results (default store/)")
    p.add_argument("--quick", action="store_true", help="a tiny grid (seconds): for tests and a smoke check")
    p.add_argument("--skip-training", action="store_true", help="only the attention micro-benchmark")
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda when present)")
    p.set_defaults(func=cmd_bench)


def cmd_bench(args, parser):
    if args.device not in (None, "cpu", "cuda"):
        parser.error(f"--device: unknown {args.device!r}; allowed: cpu, cuda")
    device = torch.device(args.device) if args.device else default_device()
    grid, min_t = (QUICK_GRID, 0.01) if args.quick else (FULL_GRID, 0.2)
    meta = {"device": str(device), "threads": torch.get_num_threads(), "quick": args.quick}
    att = attention_bench(grid, device, min_t)
    st.write_named(args.store, "bench", "attention", att, meta)
    worst = att[att.attention != REFERENCE].groupby("attention")["ratio"].agg(["median", "max"])
    print("forward+backward time relative to nn.MultiheadAttention (median and worst over the grid):")
    print(worst.round(2).to_string())
    if not args.skip_training:
        train = TrainConfig(steps=20 if args.quick else 150, eval_every=10_000)
        names = ["standard", "identity"] if args.quick else ["standard", "stacked", "bilinear", "tied_qk", "mqa"]
        tr = training_bench(names, "associative_recall", 3, train, device)
        st.write_named(args.store, "bench", "training", tr, meta)
        cols = ["attention", "engine_runs_per_min", "plain_runs_per_min", "speedup", "max_loss_diff", "utilisation"]
        print(tr[cols].round(4).to_string(index=False))
