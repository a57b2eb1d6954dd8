"""The research library: configs, synthetic tasks, the tiny transformer and its training loop.

Holds config (the frozen dataclasses whose hash is the run id), tasks, model, train (the vectorized
seeds x lrs ensemble), device (device, autocast, bf16 support), updates (per-step update sizes) and
reference (the plain loop it must match).
May import: core.attention. Nothing here reads or writes a store.
"""
