"""The research library: configs, synthetic tasks, the tiny transformer and its training loop.

Holds config (the frozen dataclasses whose hash is the run id), task_specs (the torch-free task registry),
tasks, model, criterion (the schedule, the stopping rule, the lr choice), ensemble (stacking, re-stacking,
one step), recorder (metrics, divergence, stopping), checkpoint (a training's saved state), train (the
loop), device (device, autocast, bf16 support), updates (per-step update sizes) and reference (the plain
loop it must match).
May import: core.attention. Nothing here reads or writes a store.
"""
