"""The training engine: every member of one configuration trains at once, as one vectorized ensemble.

A member is one (seed, learning rate). The members' parameters are stacked to (E, ...)
(torch.func.stack_module_state) and swapped into one module with functional_call; every layer takes that
leading member dim as batched kernels (core.training.model), so E members cost one pass of batched matmuls instead of E
passes. (torch.func.vmap gives the same numbers but, on CPU, loops over members in attention and decomposes
LayerNorm and biases: slower than training the members one by one.) Each member gets exactly the updates it
would get alone: AdamW is elementwise with one param group per learning rate, the loss is a sum of per-member
losses, and gradient clipping is done per member (tests/test_train.py checks against training alone).
"""

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, stack_module_state

from .config import ModelConfig, TaskConfig, TrainConfig
from .device import default_device, precision_context
from .model import Transformer
from .tasks import make_task
from .updates import HeadWeights, UpdateMeter

N_PATTERN_EXAMPLES = 2  # eval examples whose attention patterns are kept for the Attention maps page


@dataclass
class RunResult:
    seed: int
    lr: float
    status: str  # "ok" or "diverged"
    metrics: list[tuple[int, str, float]] = field(default_factory=list)  # (step, metric, value)
    final: dict = field(default_factory=dict)  # last val/test loss and accuracy, train_loss, late trend
    train_seconds: float = 0.0  # wall time of the whole ensemble (all members train together)
    step_seconds: float = 0.0  # the part of it spent in training steps (evaluations and set-up excluded)
    steps_done: int = 0  # optimizer steps the ensemble ran
    tokens_per_s: float = 0.0  # training tokens per second of the whole ensemble
    threads: int = 1  # intra-op threads it trained with (a sweep with workers gives each one core)
    n_ensemble: int = 1  # members that really trained together in this ensemble
    head_weights: list = field(default_factory=list)  # per layer, head_weights() of the final model
    state_dict: dict = field(default_factory=dict)  # the final model's, on the CPU: reloadable (core.load_model)
    patterns: torch.Tensor | None = None  # (L, N_PATTERN_EXAMPLES, H, T, T)
    examples: torch.Tensor | None = None  # (N_PATTERN_EXAMPLES, T) the tokens those patterns are for


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Multiplier on cfg.lr: linear warmup, then cosine decay to lr_min_ratio."""
    if step < cfg.warmup:
        return (step + 1) / cfg.warmup
    progress = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
    return cfg.lr_min_ratio + (1 - cfg.lr_min_ratio) * 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))


def init_model(cfg: ModelConfig, seed: int) -> Transformer:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return Transformer(cfg)


def data_generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(1_000_003 * (seed + 1))  # a stream apart from the init's


def masked_ce(logits, targets, mask):
    """Mean cross-entropy over the answer positions; logits (*lead, B, T, V) -> (*lead,), one per member."""
    ce = F.cross_entropy(logits.flatten(0, -2), targets.flatten(), reduction="none").view_as(targets)
    m = mask.to(ce.dtype)  # float32 under bf16 autocast too: counts of answer positions stay exact
    return (ce * m).sum((-2, -1)) / m.sum((-2, -1))


def masked_acc(logits, targets, mask):
    """Accuracy over the answer positions (evaluation only: training steps never need it)."""
    dtype = torch.promote_types(logits.dtype, torch.float32)  # never sum 0/1 hits in bf16
    m = mask.to(dtype)
    return ((logits.argmax(-1) == targets).to(dtype) * m).sum((-2, -1)) / m.sum((-2, -1))


def param_groups(named: dict[str, torch.Tensor], weight_decay: float, member_dims: int) -> list[dict]:
    """Decay matrices (ndim >= 2 per member), not norms or biases."""
    decay = [p for p in named.values() if p.dim() - member_dims >= 2]
    rest = [p for p in named.values() if p.dim() - member_dims < 2]
    return [{"params": decay, "weight_decay": weight_decay}, {"params": rest, "weight_decay": 0.0}]


def clip_per_member(params: list[torch.Tensor], max_norm: float) -> None:
    """torch.nn.utils.clip_grad_norm_ applied to each member (dim 0) on its own; as there, parameters
    without a gradient (unused in the step: a profile ablation can make LayerNorm's unused) are skipped."""
    grads = [p.grad for p in params if p.grad is not None]
    norms = torch.stack([g.pow(2).flatten(1).sum(1) for g in grads]).sum(0).sqrt()  # (E,)
    coef = (max_norm / (norms + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(coef.view(-1, *[1] * (g.dim() - 1)))


def _stack_by_lr(models: list[nn.Module], sizes: list[int]) -> list[dict]:
    """One (E_lr, ...) parameter dict per lr slice (consecutive models): each slice is its own param group."""
    slices, n = [], 0
    for size in sizes:
        slices.append(stack_module_state(models[n : n + size])[0])
        n += size
    return slices


def train_ensemble(
    model_cfg: ModelConfig,
    task_cfg: TaskConfig,
    train_cfg: TrainConfig,
    seeds: list[int],
    device: torch.device | str | None = None,
    on_step: Callable[[int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    lrs: list[float] | None = None,
    compile: bool = False,
) -> list[RunResult] | None:
    """Train one model per member together; member i is (seeds[i], lrs[i]), lrs defaulting to train_cfg.lr.
    Returns one RunResult per member in that order, or None if stopped.

    Members of one lr share one slice of the stacked parameters, and each slice is its own AdamW param
    group: the optimizer (fused AdamW), the schedule and clipping act per member exactly as alone.
    compile: the training loss (forward, and its backward through AOTAutograd) goes through torch.compile;
    `python -m core bench --profile` measures whether that pays, compile time included."""
    device = torch.device(device) if device is not None else default_device()
    lrs = [train_cfg.lr] * len(seeds) if lrs is None else [float(lr) for lr in lrs]
    if len(lrs) != len(seeds):
        raise ValueError(f"lrs: one per seed, got {len(lrs)} for {len(seeds)} seeds")
    by_lr: dict[float, list[int]] = {}
    for i, lr in enumerate(lrs):
        by_lr.setdefault(lr, []).append(i)
    order = [i for idx in by_lr.values() for i in idx]  # members sorted into lr slices
    task = make_task(task_cfg)
    models = [init_model(model_cfg, seeds[i]).to(device) for i in order]
    slices = _stack_by_lr(models, [len(idx) for idx in by_lr.values()])  # each (E_lr, ...), leaf tensors
    buffers = stack_module_state(models)[1]
    base = models[0].to("meta")
    head_view = HeadWeights(base)
    E = len(order)

    def stacked():  # every member's parameters as (E, ...): one cat per parameter, autograd splits it back
        return slices[0] if len(slices) == 1 else {k: torch.cat([s[k] for s in slices]) for k in slices[0]}

    autocast = precision_context(train_cfg.precision, device)

    def loss_fn(x, y, m):  # x (E, B, T) -> (E,)
        with autocast():
            return masked_ce(functional_call(base, (stacked(), buffers), (x,)), y, m)

    if compile:
        loss_fn = torch.compile(loss_fn, dynamic=False)

    def eval_fn(x, y, m):  # one eval set (N, T) for all members -> (E,), (E,)
        x, y, m = (t.expand(E, *t.shape) for t in (x, y, m))
        with autocast():
            logits = functional_call(base, (stacked(), buffers), (x,))
            return masked_ce(logits, y, m), masked_acc(logits, y, m)

    def effective():  # per layer, (W_QK, W_OV) of every member, (E, H, D, D) each
        with torch.no_grad():
            return functional_call(head_view, {**{f"model.{k}": v for k, v in stacked().items()},
                                               **{f"model.{k}": v for k, v in buffers.items()}}, ())  # fmt: skip

    groups = []
    for lr, params in zip(by_lr, slices):
        groups += [{**g, "lr": lr} for g in param_groups(params, train_cfg.weight_decay, 1)]
    # fused: one kernel for all parameters (5x faster than foreach on CPU here); same update up to rounding
    opt = torch.optim.AdamW(groups, lr=train_cfg.lr, betas=(0.9, 0.98), fused=True)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_at(s, train_cfg))
    member_seeds = [seeds[i] for i in order]
    distinct = list(dict.fromkeys(member_seeds))  # members of one seed see the same batches: draw them once
    gens = {s: data_generator(s) for s in distinct}
    pick = torch.tensor([distinct.index(s) for s in member_seeds])
    held_out = {k: tuple(t.to(device) for t in v) for k, v in task.held_out().items()}
    results = [RunResult(seed=seeds[i], lr=lrs[i], status="ok", n_ensemble=E) for i in order]
    alive = torch.ones(E, dtype=torch.bool)
    running = torch.zeros(E)  # train loss summed since the last log
    meter = UpdateMeter(effective, model_cfg.n_layers, E)
    n_running, t0, seen, in_steps = 0, time.perf_counter(), 0, 0.0

    def evaluate(step: int):
        nonlocal running, n_running
        values = {}
        with torch.no_grad():
            for split, (ex, ey, em) in held_out.items():
                losses, accs = zip(*(eval_fn(*c) for c in _chunks(ex, ey, em)))
                values[f"{split}_loss"] = torch.stack(losses).mean(0).cpu()
                values[f"{split}_acc"] = torch.stack(accs).mean(0).cpu()
        elapsed = time.perf_counter() - t0
        for i, r in enumerate(results):
            if not alive[i]:
                continue
            r.metrics += [(step, k, v[i].item()) for k, v in values.items()]
            r.metrics.append((step, "wall_time", elapsed))
            if n_running:
                r.metrics.append((step, "train_loss", (running[i] / n_running).item()))
                r.metrics.append((step, "tokens_per_s", seen / elapsed))
            r.metrics += meter.metrics(step, i)
            r.final.update({k: v[i].item() for k, v in values.items()})
        running, n_running = torch.zeros(E), 0
        meter.reset()

    evaluate(0)
    for step in range(1, train_cfg.steps + 1):
        t_step = time.perf_counter()
        meter.before_step(step)
        batch = [task.sample_train(train_cfg.batch_size, gens[s]) for s in distinct]
        x, y, m = (torch.stack(t)[pick].to(device) for t in zip(*batch))  # (E, B, T) each
        loss = loss_fn(x, y, m)  # (E,)
        opt.zero_grad(set_to_none=True)
        loss.sum().backward()
        if train_cfg.grad_clip is not None:
            for params in slices:
                clip_per_member(list(params.values()), train_cfg.grad_clip)
        opt.step()
        sched.step()
        seen += x.numel()
        meter.after_step()
        loss = loss.detach().cpu()
        newly_dead = alive & ~loss.isfinite()
        for i in newly_dead.nonzero().flatten().tolist():
            results[i].status = "diverged"
            results[i].metrics.append((step, "train_loss", float("nan")))
        alive &= ~newly_dead
        running += torch.where(alive, loss, 0.0)
        n_running += 1
        in_steps += time.perf_counter() - t_step
        if on_step:
            on_step(step)
        if not alive.any():
            break
        if step % train_cfg.eval_every == 0 or step == train_cfg.steps:
            evaluate(step)
            if should_stop and should_stop():
                return None
    seconds = time.perf_counter() - t0
    for r in results:
        r.train_seconds, r.step_seconds, r.steps_done, r.tokens_per_s = seconds, in_steps, step, seen / seconds
        r.threads = torch.get_num_threads()
    _finish(results, stacked(), model_cfg, held_out["test"][0])
    back = {i: r for i, r in zip(order, results)}
    return [back[i] for i in range(E)]


def _chunks(*tensors, size: int = 64):  # small enough that a chunk's activations stay in cache
    n = tensors[0].shape[0]
    for i in range(0, n, size):
        yield tuple(t[i : i + size] for t in tensors)


def _finish(results, params, model_cfg, eval_inputs) -> None:  # params: stacked (E, ...), member order
    """Per member: rebuild the module, keep its head weights and a few attention patterns."""
    examples = eval_inputs[:N_PATTERN_EXAMPLES]
    for i, r in enumerate(results):
        model = Transformer(model_cfg).to(eval_inputs.device)
        model.load_state_dict({k: v[i].detach() for k, v in params.items()})
        r.head_weights = [{k: v.cpu() for k, v in hw.items()} for hw in model.head_weights()]
        r.state_dict = {k: v.detach().float().cpu() for k, v in model.state_dict().items()}
        if r.status == "ok":
            r.patterns = model.attention_patterns(examples).cpu()
            r.examples = examples.cpu()
        r.final["train_loss"] = next((v for s, k, v in reversed(r.metrics) if k == "train_loss"), float("nan"))
        r.final.update(_late_trend(r.metrics, r.steps_done))


def _late_trend(metrics, steps: int) -> dict:
    """How validation moved over the last fifth of training (from the evaluation nearest 80% of the
    steps to the last): the evidence that a run which has not solved its task was still improving."""
    val = {k: [(s, v) for s, kk, v in metrics if kk == k] for k in ("val_loss", "val_acc")}
    if len(val["val_loss"]) < 2:
        return {}
    mark = min(val["val_loss"], key=lambda sv: abs(sv[0] - 0.8 * steps))[0]
    at = {k: dict(v) for k, v in val.items()}
    last = val["val_loss"][-1][0]
    return {
        "val_loss_drop": (at["val_loss"][mark] - at["val_loss"][last]) / max(abs(at["val_loss"][mark]), 1e-12),
        "val_acc_gain": at["val_acc"][last] - at["val_acc"][mark],
    }
