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


def round_robin(steps: dict, rounds: int, min_time: float) -> dict[str, float]:
    """Median seconds per call of each step, measured in alternating rounds so drift hits all alike."""
    timers = {
        n: benchmark.Timer("step()", globals={"step": f}, num_threads=torch.get_num_threads()) for n, f in steps.items()
    }
    number = {n: max(1, int(min_time / t.timeit(2).median)) for n, t in timers.items()}  # also warms up
    names, samples = list(steps), {n: [] for n in steps}
    for r in range(rounds):
        for n in names[r % len(names) :] + names[: r % len(names)]:
            samples[n].append(timers[n].timeit(number[n]).median)
    return {n: float(torch.tensor(v).median()) for n, v in samples.items()}


def attention_bench(grid: dict, device, rounds: int = 7, min_time: float = 0.03, log=print) -> pd.DataFrame:
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
                for n, m in mods.items():
                    rows.append({"kind": "attention", "attention": n, "d_model": D, "seq_len": T, "n_heads": H,
                                 "batch": x.shape[0], "ms": 1e3 * secs[n], "gflop": layer_flops(m, x) / 1e9,
                                 "peak_mb": memory_mb(m, x)})  # fmt: skip
                log(f"attention D={D} T={T} H={H}: standard {secs['standard'] / secs[REFERENCE]:.2f}x {REFERENCE}")
    df = pd.DataFrame(rows)
    key = ["d_model", "seq_len", "n_heads"]
    by_point = df.set_index(key)
    ref = by_point[by_point.attention == REFERENCE]["ms"]
    std = by_point[by_point.attention == "standard"]
    df["ratio"] = df.ms / by_point.index.map(ref).to_numpy()
    # time per FLOP relative to standard's: above 1 means slower than its own arithmetic explains
    df["ms_per_gflop_vs_standard"] = (df.ms / df.gflop) / by_point.index.map(std.ms / std.gflop).to_numpy()
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
        masked_ce(model(x), y, m).backward()
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


def profile_training(device, steps: int = 30, rows: int = 12) -> str:
    """torch.profiler's top operators for the default model's training steps: ensemble of 3, then plain."""
    from torch.profiler import ProfilerActivity, profile

    task_cfg = TaskConfig("associative_recall")
    t = make_task(task_cfg)
    cfg = ModelConfig(vocab_size=t.vocab_size, max_len=t.seq_len)
    train = TrainConfig(steps=steps, eval_every=10_000)
    out = []
    runs = {
        "ensemble of 3 (vmap)": lambda: train_ensemble(cfg, task_cfg, train, [0, 1, 2], device),
        "plain loop, 3 runs": lambda: [train_plain(cfg, task_cfg, train, s, device) for s in range(3)],
    }
    for label, fn in runs.items():  # fmt: skip
        fn()  # warm-up
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            fn()
        table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=rows, max_name_column_width=40)
        out.append(f"== {label}, {steps} steps ==\n{table}")
    return "\n".join(out)


def add_bench(sub):
    p = sub.add_parser("bench", help="benchmark attention layers, the training engine and utilisation")
    p.add_argument("--store", default="store", help="store directory for the results (default store/)")
    p.add_argument("--quick", action="store_true", help="a tiny grid (seconds): for tests and a smoke check")
    p.add_argument("--skip-training", action="store_true", help="only the attention micro-benchmark")
    p.add_argument("--profile", action="store_true", help="also print where a training step's time goes")
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda when present)")
    p.set_defaults(func=cmd_bench)


def cmd_bench(args, parser):
    if args.device not in (None, "cpu", "cuda"):
        parser.error(f"--device: unknown {args.device!r}; allowed: cpu, cuda")
    device = torch.device(args.device) if args.device else default_device()
    grid, rounds = (QUICK_GRID, 2) if args.quick else (FULL_GRID, 7)
    meta = {"device": str(device), "threads": torch.get_num_threads(), "quick": args.quick}
    att = attention_bench(grid, device, rounds)
    st.write_named(args.store, "bench", "attention", att, meta)
    g = att[att.attention != REFERENCE].groupby("attention", sort=False)
    table = pd.DataFrame({"median": g.ratio.median(), "worst": g.ratio.max(), "flops_vs_standard": g.gflop.sum()
                          / att[att.attention == "standard"].gflop.sum(), "time_per_flop_vs_standard":
                          g.ms_per_gflop_vs_standard.median()})  # fmt: skip
    print("forward+backward time relative to nn.MultiheadAttention (median and worst over the grid),")
    print("FLOPs relative to standard, and time per FLOP relative to standard (median):")
    print(table.round(2).to_string())
    if not args.skip_training:
        train = TrainConfig(steps=20 if args.quick else 150, eval_every=10_000)
        names = ["standard", "identity"] if args.quick else ["standard", "stacked", "bilinear", "tied_qk", "mqa"]
        tr = training_bench(names, "associative_recall", 3, train, device)
        st.write_named(args.store, "bench", "training", tr, meta)
        cols = ["attention", "engine_runs_per_min", "plain_runs_per_min", "speedup", "max_loss_diff", "utilisation"]
        print(tr[cols].round(4).to_string(index=False))
    if args.profile:
        print(profile_training(device))
