"""The plain loop: one model, one seed at a time, torch.optim.AdamW on an nn.Module.

The ensemble engine (core.train) must reproduce its losses exactly; the benchmark compares speed.
It evaluates on the task's eval set at the engine's steps (0, every eval_every, the last), so the
two do the same work.
"""

import torch

from .config import ModelConfig, TaskConfig, TrainConfig
from .tasks import make_task
from .train import data_generator, init_model, lr_at, masked_ce, param_groups


@torch.no_grad()
def eval_loss(model, x, y, m, chunk: int = 256) -> float:
    losses = [masked_ce(model(x[i : i + chunk]), y[i : i + chunk], m[i : i + chunk]) for i in range(0, len(x), chunk)]
    return torch.stack(losses).mean().item()


def train_plain(model_cfg: ModelConfig, task_cfg: TaskConfig, train_cfg: TrainConfig, seed: int, device="cpu"):
    """Trained the textbook way; returns (per-step training losses, [(step, test loss), ...])."""
    task = make_task(task_cfg)
    model = init_model(model_cfg, seed).to(device)
    named = dict(model.named_parameters())
    opt = torch.optim.AdamW(param_groups(named, train_cfg.weight_decay, 0), lr=train_cfg.lr, betas=(0.9, 0.98))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_at(s, train_cfg))
    gen = data_generator(seed)
    ex, ey, em = (t.to(device) for t in task.eval_set("test"))
    losses, evals = [], [(0, eval_loss(model, ex, ey, em))]
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
        if step % train_cfg.eval_every == 0 or step == train_cfg.steps:
            evals.append((step, eval_loss(model, ex, ey, em)))
    return losses, evals
