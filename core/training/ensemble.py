"""The members of one configuration as one vectorized model: stacking, re-stacking, the loss, one step.

A member is one (seed, learning rate). Members of one lr share one slice of stacked parameters, each
slice (E_lr, ...) its own pair of AdamW param groups, so the optimizer (fused AdamW), the schedule and
clipping act per member exactly as alone. `keep` re-stacks the members still training, their parameters
and AdamW state sliced out, so a stopped member costs nothing afterwards. A member's state
(`member_state`) is plain tensors: a checkpoint, or the start of a longer run, is a list of them.
"""

import torch
import torch.nn as nn
from torch.func import functional_call, stack_module_state

from .config import ModelConfig, TrainConfig
from .criterion import lr_at
from .device import precision_context
from .model import Transformer
from .updates import HeadWeights

MOMENTS = ("exp_avg", "exp_avg_sq")


def init_model(cfg: ModelConfig, seed: int) -> Transformer:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return Transformer(cfg)


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


def masked_ce(logits, targets, mask):
    """Mean cross-entropy over the answer positions; logits (*lead, B, T, V) -> (*lead,), one per member."""
    ce = torch.nn.functional.cross_entropy(logits.flatten(0, -2), targets.flatten(), reduction="none")
    ce = ce.view_as(targets)
    m = mask.to(ce.dtype)  # float32 under bf16 autocast too: counts of answer positions stay exact
    return (ce * m).sum((-2, -1)) / m.sum((-2, -1))


def masked_acc(logits, targets, mask):
    """Accuracy over the answer positions (evaluation only: training steps never need it)."""
    dtype = torch.promote_types(logits.dtype, torch.float32)  # never sum 0/1 hits in bf16
    m = mask.to(dtype)
    return ((logits.argmax(-1) == targets).to(dtype) * m).sum((-2, -1)) / m.sum((-2, -1))


class Ensemble:
    """lrs[i] is member i's lr; states[i] its member_state (None: freshly initialised from seeds[i]).
    Members are kept in lr slices: `order` maps ensemble position -> the caller's member index."""

    def __init__(self, model_cfg: ModelConfig, train_cfg: TrainConfig, seeds, lrs, device, states=None):
        self.model_cfg, self.train_cfg, self.device = model_cfg, train_cfg, device
        states = states or [None] * len(seeds)
        by_lr: dict[float, list[int]] = {}
        for i, lr in enumerate(lrs):
            by_lr.setdefault(lr, []).append(i)
        self.order = [i for idx in by_lr.values() for i in idx]
        models = [init_model(model_cfg, seeds[i]).to(device) for i in self.order]
        for model, i in zip(models, self.order):
            if states[i] is not None:
                model.load_state_dict({k: v.to(device) for k, v in states[i]["params"].items()})
        stacks, n = [], 0
        for lr, idx in by_lr.items():
            stacks.append((lr, stack_module_state(models[n : n + len(idx)])[0]))
            n += len(idx)
        self.buffers = stack_module_state(models)[1]
        self.base = models[0].to("meta")
        self.head_view = HeadWeights(self.base)
        self.autocast = precision_context(train_cfg.precision, device)
        saved = [states[i] for i in self.order] if any(s is not None for s in states) else None
        self._build(stacks, saved and self._slice_states(stacks, saved))

    def __len__(self) -> int:
        return len(self.order)

    def _slice_states(self, stacks, members: list[dict]) -> list[dict]:
        """Members' saved AdamW states (member_state, in order) as one per slice: {name: {step, moments}}."""
        out, n = [], 0
        for _, params in stacks:
            part = members[n : n + _size(params)]
            for s in part:
                for m in MOMENTS:
                    self.base.upgrade_state(s[m])
            out.append(
                {
                    k: {"step": part[0]["step"], **{m: torch.stack([s[m][k] for s in part]) for m in MOMENTS}}
                    for k in params
                    if all(k in s[MOMENTS[0]] for s in part)
                }
            )
            n += len(part)
        return out

    def _build(self, stacks: list[tuple[float, dict]], states: list[dict] | None) -> None:
        """Slices of leaf parameters and a fresh AdamW over them; states (per slice, as _slice_states) restore it."""
        self.lrs = [lr for lr, _ in stacks]
        self.slices = [{k: v.detach().clone().requires_grad_(True) for k, v in p.items()} for _, p in stacks]
        groups = []
        for lr, params in zip(self.lrs, self.slices):
            groups += [{**g, "lr": lr, "base_lr": lr} for g in param_groups(params, self.train_cfg.weight_decay, 1)]
        # fused: one kernel for all parameters (5x faster than foreach on CPU here); same update up to rounding
        self.opt = torch.optim.AdamW(groups, lr=self.train_cfg.lr, betas=(0.9, 0.98), fused=True)
        for params, state in zip(self.slices, states or []):
            for k, p in params.items():
                if state.get(k):
                    self.opt.state[p] = {m: v.clone().to(self.device) for m, v in state[k].items()}

    def stacked(self) -> dict[str, torch.Tensor]:
        """Every member's parameters as (E, ...): one cat per parameter, autograd splits it back."""
        if len(self.slices) == 1:
            return self.slices[0]
        return {k: torch.cat([s[k] for s in self.slices]) for k in self.slices[0]}

    def logits(self, x: torch.Tensor) -> torch.Tensor:  # (E, B, T) -> (E, B, T, V)
        return functional_call(self.base, (self.stacked(), self.buffers), (x,))

    def loss(self, x, y, m) -> torch.Tensor:  # (E, B, T) each -> (E,)
        with self.autocast():
            return masked_ce(self.logits(x), y, m)

    @torch.no_grad()
    def evaluate(self, x, y, m) -> tuple[torch.Tensor, torch.Tensor]:
        """One eval set (N, T), every member on it: (E,) losses and (E,) accuracies, in chunks of 64 rows."""
        losses, accs = [], []
        for i in range(0, x.shape[0], 64):  # small enough that a chunk's activations stay in cache
            xs, ys, ms = (t[i : i + 64].expand(len(self), -1, -1) for t in (x, y, m))
            with self.autocast():
                logits = self.logits(xs)
                losses.append(masked_ce(logits, ys, ms))
                accs.append(masked_acc(logits, ys, ms))
        return torch.stack(losses).mean(0).cpu(), torch.stack(accs).mean(0).cpu()

    @torch.no_grad()
    def effective(self) -> list:
        """Per layer, (W_QK, W_OV) of every member, (E, H, D, D) each."""
        named = {**self.stacked(), **self.buffers}
        return functional_call(self.head_view, {f"model.{k}": v for k, v in named.items()}, ())

    def step(self, step: int, x, y, m, loss_fn=None) -> torch.Tensor:
        """One optimizer step (1-based) of every member; their training losses, (E,), detached."""
        loss = (loss_fn or self.loss)(x, y, m)
        self.opt.zero_grad(set_to_none=True)
        loss.sum().backward()
        if self.train_cfg.grad_clip is not None:
            for params in self.slices:
                clip_per_member(list(params.values()), self.train_cfg.grad_clip)
        cfg = self.train_cfg
        mult = lr_at(step - 1, cfg.steps, cfg.warmup, cfg.lr_min_ratio, cfg.schedule)
        for g in self.opt.param_groups:
            g["lr"] = g["base_lr"] * mult  # as LambdaLR sets it
        self.opt.step()
        return loss.detach().cpu()

    def member_state(self, pos: int) -> dict:
        """The member at ensemble position pos: its parameters and AdamW state, detached, on the CPU."""
        s, row = self._locate(pos)
        params = self.slices[s]
        state = {"params": {k: v[row].detach().cpu().clone() for k, v in params.items()}}
        # a parameter that has had no gradient yet has no AdamW state: it stays out, as AdamW leaves it
        live = {k: self.opt.state[v] for k, v in params.items() if self.opt.state.get(v)}
        state["step"] = next(iter(live.values()))["step"].detach().cpu().clone() if live else torch.zeros(())
        for m in MOMENTS:
            state[m] = {k: st[m][row].detach().cpu().clone() for k, st in live.items()}
        return state

    def _locate(self, pos: int) -> tuple[int, int]:
        for s, params in enumerate(self.slices):
            if pos < _size(params):
                return s, pos
            pos -= _size(params)
        raise IndexError(pos)

    def keep(self, positions: list[int]) -> None:
        """Re-stack with only the members at these ensemble positions (in order), AdamW state included."""
        if not positions:  # every member stopped: nothing left to train
            self.order, self.slices, self.lrs = [], [], []
            return
        keep, stacks, states, n = set(positions), [], [], 0
        for lr, params in zip(self.lrs, self.slices):
            rows = [r for r in range(_size(params)) if n + r in keep]
            if rows:
                index = torch.tensor(rows, device=self.device)
                stacks.append((lr, {k: v.detach().index_select(0, index) for k, v in params.items()}))
                states.append(
                    {
                        k: {
                            m: v if m == "step" else v.index_select(0, index)
                            for m, v in self.opt.state.get(p, {}).items()
                        }
                        for k, p in params.items()
                    }
                    if self.opt.state
                    else None
                )
            n += _size(params)
        self.order = [self.order[p] for p in sorted(keep)]
        self.buffers = {k: v[: len(self.order)] for k, v in self.buffers.items()}
        self._build(stacks, None if None in states else states)


def _size(params: dict) -> int:
    """Members in one slice of stacked parameters."""
    return next(iter(params.values())).shape[0]


def single_model(model_cfg: ModelConfig, params: dict, device) -> nn.Module:
    """One member's parameters in a plain Transformer."""
    model = Transformer(model_cfg).to(device)
    model.load_state_dict({k: v.to(device) for k, v in params.items()})
    return model
