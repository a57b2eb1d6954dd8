"""The training engine: every member of one configuration trains at once, as one vectorized ensemble.

A member is one (seed, learning rate). The members' parameters are stacked to (E, ...)
(torch.func.stack_module_state) and swapped into one module with functional_call; every layer takes that
leading member dim as batched kernels (core.training.model), so E members cost one pass of batched matmuls instead of E
passes. (torch.func.vmap gives the same numbers but, on CPU, loops over members in attention and decomposes
LayerNorm and biases: slower than training the members one by one.) Each member gets exactly the updates it
would get alone: AdamW is elementwise with one param group per learning rate, the loss is a sum of per-member
losses, and gradient clipping is done per member (tests/test_train.py checks against training alone).

The pieces: core.training.ensemble (stacking, re-stacking, the step), core.training.recorder (metrics,
divergence, stopping), core.training.checkpoint (saving and resuming a training); this module is the loop.
"""

import time
from collections.abc import Callable
from dataclasses import asdict

import torch

from .checkpoint import Checkpointer
from .config import ModelConfig, TaskConfig, TrainConfig
from .criterion import lr_at as _lr_at
from .device import default_device
from .ensemble import Ensemble, clip_per_member, init_model, masked_acc, masked_ce, param_groups, single_model
from .recorder import Recorder, RunResult, late_trend
from .tasks import make_task
from .updates import UpdateMeter

__all__ = [
    "RunResult",
    "train_ensemble",
    "init_model",
    "data_generator",
    "lr_at",
    "masked_ce",
    "masked_acc",
    "param_groups",
    "clip_per_member",
    "late_trend",
]

N_PATTERN_EXAMPLES = 2  # eval examples whose attention patterns are kept for the Attention maps page


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Multiplier on cfg.lr at a 0-based step: linear warmup, then cfg.schedule."""
    return _lr_at(step, cfg.steps, cfg.warmup, cfg.lr_min_ratio, cfg.schedule)


def data_generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(1_000_003 * (seed + 1))  # a stream apart from the init's


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
    resume: list[dict] | None = None,
    checkpoint: Checkpointer | None = None,
    settled=(),
    on_stop: Callable[[str, int], None] | None = None,
    prune: bool = True,
) -> list[RunResult] | None:
    """Train one model per member together; member i is (seeds[i], lrs[i]), lrs defaulting to train_cfg.lr.
    Returns one RunResult per member in that order, or None if stopped.

    on_step(n): n members trained one step. on_stop(why, steps_left): a member stopped, steps_left before the cap.
    resume: per member, the `RunResult.resume` of a shorter-capped run it goes on from (all at one step).
    checkpoint: saves the whole training every few minutes and, if one was saved for these members, starts from
    it; at the end it holds the results until the caller, having stored them, clears it.
    settled: (lr, solve step or None) of the cell's members trained before, for the lr-stopping rule.
    prune: under until="solved", stop the members of an lr that can no longer be chosen (False: the tests'
    full run, against which pruning is checked).
    compile: the training loss (forward, and its backward through AOTAutograd) goes through torch.compile;
    `python -m core bench --profile` measures whether that pays, compile time included."""
    device = torch.device(device) if device is not None else default_device()
    lrs = [train_cfg.lr] * len(seeds) if lrs is None else [float(lr) for lr in lrs]
    if len(lrs) != len(seeds):
        raise ValueError(f"lrs: one per seed, got {len(lrs)} for {len(seeds)} seeds")
    start = _start_step(resume)
    task = make_task(task_cfg)
    results = [
        RunResult(seed=s, lr=lr, status="ok", n_ensemble=len(seeds), device=device.type) for s, lr in zip(seeds, lrs)
    ]
    rec = Recorder(results, train_cfg.until, train_cfg.steps, train_cfg.eval_every, settled, prune)
    gens = {s: data_generator(s) for s in dict.fromkeys(seeds)}  # members of one seed see the same batches
    states, alive = [r and r["state"] for r in resume or [None] * len(seeds)], list(range(len(seeds)))
    clock = {"elapsed": 0.0, "steps": 0.0, "seen": 0, "wall_from": {}}
    if resume:
        rec.load(_merge_resumed(resume))
        # a member's wall_time curve goes on from its shorter cap's last reading, on this training's clock
        clock["wall_from"] = {i: _last_wall_time(r.metrics) for i, r in enumerate(results)}
        for s in gens:
            gens[s].set_state(next(r["generator"] for r, seed in zip(resume, seeds) if seed == s))
    saved = checkpoint.load() if checkpoint else None
    if saved and saved.get("members") != [(lr, s) for lr, s in zip(lrs, seeds)]:
        saved = None  # another set of members: not this training's
    if saved and saved.get("done"):  # finished, not yet stored when it was stopped: no steps taken here
        return [RunResult(**{**r, "steps_from": r["steps_done"]}) for r in saved["results"]]
    if saved:
        start, states, alive = saved["step"], saved["states"], saved["alive"]
        rec.load(saved["recorder"])
        clock.update(saved["clock"])
        for s, g in gens.items():
            g.set_state(saved["generators"][s])
        _restore_stopped(results, saved["stopped"])
    for i, r in enumerate(results):  # a member stopped before the checkpoint took no step in this process
        r.steps_from = start if i in alive else r.steps_done
    ens = Ensemble(
        model_cfg, train_cfg, [seeds[i] for i in alive], [lrs[i] for i in alive], device, [states[i] for i in alive]
    )
    ens.order = [alive[j] for j in ens.order]
    held_out = {k: tuple(t.to(device) for t in v) for k, v in task.held_out().items()}
    loss_fn = torch.compile(ens.loss, dynamic=False) if compile else None
    meter = UpdateMeter(ens.effective, model_cfg.n_layers, len(ens))
    t0 = time.perf_counter() - clock["elapsed"]

    def evaluate(step: int) -> list[int]:
        values = {}
        for split, xym in held_out.items():
            values[f"{split}_loss"], values[f"{split}_acc"] = ens.evaluate(*xym)
        elapsed = time.perf_counter() - t0
        tokens = [(step, "tokens_per_s", clock["seen"] / elapsed)] if step else []

        def timing(pos: int) -> list:
            wall = clock["wall_from"].get(ens.order[pos], 0.0) + elapsed
            return [(step, "wall_time", wall), *tokens, *meter.metrics(step, pos)]

        stop = rec.evaluated(step, ens.order, values, timing)
        meter.reset()
        return stop

    def drop(members: list[int], step: int) -> None:
        nonlocal meter, loss_fn
        if not members:  # most evaluations stop nobody: the ensemble stays as it is
            return
        for i in members:
            _finish_member(results[i], rec, ens, ens.order.index(i), model_cfg, held_out["test"][0], train_cfg)
            if results[i].resume is not None:
                results[i].resume["generator"] = gens[seeds[i]].get_state()
            if on_stop:
                on_stop(results[i].stop, train_cfg.steps - step)
        ens.keep([p for p, i in enumerate(ens.order) if i not in members])
        meter = UpdateMeter(ens.effective, model_cfg.n_layers, len(ens))
        loss_fn = torch.compile(ens.loss, dynamic=False) if compile and len(ens) else None

    if start == 0 and not saved:
        drop(evaluate(0), 0)
    elif not saved:  # going on from a shorter cap: an lr ruled out at that evaluation stops there
        drop(rec.hopeless_now(ens.order, start), start)
    step = start
    while len(ens) and step < train_cfg.steps:
        step += 1
        t_step = time.perf_counter()
        meter.before_step(step)
        x, y, m = _batch(task, train_cfg.batch_size, gens, [seeds[i] for i in ens.order], device)
        loss = ens.step(step, x, y, m, loss_fn)
        clock["seen"] += x.numel()
        meter.after_step()
        diverged = rec.after_step(step, ens.order, loss)
        clock["steps"] += time.perf_counter() - t_step
        if on_step:
            on_step(len(ens))
        if diverged:
            drop(diverged, step)
        if len(ens) and (step % train_cfg.eval_every == 0 or step == train_cfg.steps):
            drop(evaluate(step), step)
            if should_stop and should_stop():
                return None
            if checkpoint and len(ens) and checkpoint.due():
                clock["elapsed"] = time.perf_counter() - t0
                checkpoint.save({**_snapshot(step, ens, rec, gens, clock, results), "members": list(zip(lrs, seeds))})
    seconds = time.perf_counter() - t0
    for r in results:
        r.train_seconds, r.step_seconds, r.tokens_per_s = seconds, clock["steps"], clock["seen"] / max(seconds, 1e-9)
        r.threads = torch.get_num_threads()
    if checkpoint:  # kept until the caller has stored every result (Checkpointer.clear)
        checkpoint.save({"done": True, "members": list(zip(lrs, seeds)), "results": [asdict(r) for r in results]})
    return results


def _start_step(resume) -> int:
    steps = {r["step"] for r in resume or [] if r is not None}
    if resume and (None in resume or len(steps) != 1):
        raise ValueError("resume: every member must go on from one step")
    return steps.pop() if steps else 0


def _merge_resumed(resume: list[dict]) -> dict:
    """One recorder state from the members' saved ones (each a recorder state of one member)."""
    parts = [r["recorder"] for r in resume]
    return {
        "criteria": [p["criteria"][0] for p in parts],
        "running": {},
        "n_running": 0,
        "results": [p["results"][0] for p in parts],
    }


def _batch(task, batch_size: int, gens: dict, member_seeds: list[int], device):
    """One training batch per seed with members left, in member order: (E, B, T) each. A seed's stream
    advances one batch a step while any of its members trains, so a member's batches never depend on others."""
    distinct = list(dict.fromkeys(member_seeds))
    batch = [task.sample_train(batch_size, gens[s]) for s in distinct]
    pick = torch.tensor([distinct.index(s) for s in member_seeds])
    return tuple(torch.stack(t)[pick].to(device) for t in zip(*batch))


def _finish_member(r: RunResult, rec: Recorder, ens: Ensemble, pos: int, model_cfg, eval_inputs, train_cfg) -> None:
    """A member that stops: its final numbers, head weights, a few attention patterns, and (stopped at the cap
    of a criterion run) the state a longer cap goes on from."""
    i = ens.order[pos]
    rec.finish(i)
    state = ens.member_state(pos)
    model = single_model(model_cfg, state["params"], eval_inputs.device)
    r.head_weights = [{k: v.cpu() for k, v in hw.items()} for hw in model.head_weights()]
    r.state_dict = {k: v.detach().float().cpu() for k, v in model.state_dict().items()}
    if r.status == "ok":
        examples = eval_inputs[:N_PATTERN_EXAMPLES]
        r.patterns = model.attention_patterns(examples).cpu()
        r.examples = examples.cpu()
    if train_cfg.until == "solved" and r.stop == "cap":
        r.resume = {"step": r.steps_done, "state": state, "recorder": rec.state([i])}


def _last_wall_time(metrics: list[tuple[int, str, float]]) -> float:
    """The last wall_time a member recorded (0 before any)."""
    return next((v for _, name, v in reversed(metrics) if name == "wall_time"), 0.0)


def _snapshot(step, ens, rec, gens, clock, results) -> dict:
    """Everything a training needs to go on from this step, in plain tensors and Python values."""
    stopped = {i: _stopped_state(r) for i, r in enumerate(results) if i not in ens.order}
    return {
        "step": step,
        "alive": list(ens.order),
        "states": _all_states(ens, len(results)),
        "recorder": rec.state(),
        "generators": {s: g.get_state() for s, g in gens.items()},
        "clock": dict(clock),
        "stopped": stopped,
    }


def _all_states(ens: Ensemble, n: int) -> list:
    out = [None] * n
    for pos, i in enumerate(ens.order):
        out[i] = ens.member_state(pos)
    return out


def _stopped_state(r: RunResult) -> dict:
    return {
        "head_weights": r.head_weights,
        "state_dict": r.state_dict,
        "patterns": r.patterns,
        "examples": r.examples,
        "resume": r.resume,
    }


def _restore_stopped(results, saved: dict) -> None:
    for i, fields in saved.items():
        for k, v in fields.items():
            setattr(results[i], k, v)
