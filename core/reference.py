"""The plain loop: one model, one seed at a time, torch.optim.AdamW on an nn.Module.

The ensemble engine (core.train) must reproduce its losses exactly; the benchmark compares speed.
"""

import torch

from .config import ModelConfig, TaskConfig, TrainConfig
from .tasks import make_task
from .train import data_generator, init_model, lr_at, masked_ce, param_groups


def train_plain(model_cfg: ModelConfig, task_cfg: TaskConfig, train_cfg: TrainConfig, seed: int, device="cpu"):
    """Per-step training losses of one run, trained the textbook way."""
    task = make_task(task_cfg)
    model = init_model(model_cfg, seed).to(device)
    named = dict(model.named_parameters())
    opt = torch.optim.AdamW(param_groups(named, train_cfg.weight_decay, 0), lr=train_cfg.lr, betas=(0.9, 0.98))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_at(s, train_cfg))
    gen = data_generator(seed)
    losses = []
    for _ in range(train_cfg.steps):
        x, y, m = (t.to(device) for t in task.sample(train_cfg.batch_size, gen))
        loss = masked_ce(model(x), y, m)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if train_cfg.grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), train_cfg.grad_clip)
        opt.step()
        sched.step()
        losses.append(loss.item())
    return losses
