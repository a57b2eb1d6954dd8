"""The plain loop: one model, one seed at a time, torch.optim.AdamW on an nn.Module.

The ensemble engine (core.training.train) must reproduce its losses exactly; the benchmark compares speed.
It evaluates both held-out sets (validation and test) at the engine's steps (0, every eval_every, the
last), as every sweep run is evaluated, so the two do the same training and evaluation work (the
engine also stores each run, its weights and attention patterns, which this loop skips). Under
until="solved" it stops as the engine does (core.training.criterion): this loop is the specification.
"""

import torch

from .config import ModelConfig, TaskConfig, TrainConfig
from .criterion import Criterion
from .tasks import make_task
from .train import data_generator, init_model, lr_at, masked_acc, masked_ce, param_groups


@torch.no_grad()
def evaluate(model, x, y, m, chunk: int = 256) -> tuple[float, float]:
    """Mean loss and accuracy over chunks of the held-out set."""
    parts = [(x[i : i + chunk], y[i : i + chunk], m[i : i + chunk]) for i in range(0, len(x), chunk)]
    logits = [(model(a), b, c) for a, b, c in parts]
    loss = torch.stack([masked_ce(lg, b, c) for lg, b, c in logits]).mean().item()
    return loss, torch.stack([masked_acc(lg, b, c) for lg, b, c in logits]).mean().item()


def train_plain(model_cfg: ModelConfig, task_cfg: TaskConfig, train_cfg: TrainConfig, seed: int, device="cpu"):
    """Trained the textbook way; returns (per-step training losses, {split: [(step, loss), ...]}) with a
    list for each held-out split ("val", "test"), and "val_acc": [(step, accuracy), ...]."""
    task = make_task(task_cfg)
    model = init_model(model_cfg, seed).to(device)
    named = dict(model.named_parameters())
    opt = torch.optim.AdamW(param_groups(named, train_cfg.weight_decay, 0), lr=train_cfg.lr, betas=(0.9, 0.98))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_at(s, train_cfg))
    gen = data_generator(seed)
    held_out = {split: tuple(t.to(device) for t in xym) for split, xym in task.held_out().items()}
    losses, evals, criterion = [], {"val": [], "test": [], "val_acc": []}, Criterion()

    def log(step: int) -> bool:  # True: the criterion is met
        for split, xym in held_out.items():
            loss, acc = evaluate(model, *xym)
            evals[split].append((step, loss))
            if split == "val":
                evals["val_acc"].append((step, acc))
        return criterion.update(step, evals["val_acc"][-1][1]) and train_cfg.until == "solved"

    if log(0):
        return losses, evals
    for step in range(1, train_cfg.steps + 1):
        x, y, m = (t.to(device) for t in task.sample_train(train_cfg.batch_size, gen))
        loss = masked_ce(model(x), y, m)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if train_cfg.grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), train_cfg.grad_clip)
        opt.step()
        sched.step()
        losses.append(loss.item())
        if not torch.isfinite(loss):
            break
        if (step % train_cfg.eval_every == 0 or step == train_cfg.steps) and log(step):
            break
    return losses, evals
