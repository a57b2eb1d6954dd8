"""What the pages name from the lower layers: the registries' order, formulas, task descriptions, the lr grid.

Pages import this (and the rest of core.dashboard), never core.attention or core.training directly, so the
one-way flow is checked by tests/test_layout.py. Every name here is torch-free (the registries' specs), so a
read-only page never loads torch (tests/test_app.py checks it in a fresh interpreter).
"""

from ..attention import VARIANTS
from ..training.config import LR_GRID, PRECISIONS, TrainConfig
from ..training.task_specs import TASK_SPECS

ATTENTION_NAMES = list(VARIANTS)  # the registry's order: every legend, table and facet uses it
TASK_NAMES = list(TASK_SPECS)
FORMULAS = {name: v.formula for name, v in VARIANTS.items()}  # attention parameters per layer
TASK_DESCRIPTIONS = {name: s.description for name, s in TASK_SPECS.items()}
TASK_LENGTHS = {name: s.length for name, s in TASK_SPECS.items()}  # each task's default size
DEFAULT_STEPS = TrainConfig().steps

__all__ = [
    "ATTENTION_NAMES",
    "DEFAULT_STEPS",
    "FORMULAS",
    "LR_GRID",
    "PRECISIONS",
    "TASK_DESCRIPTIONS",
    "TASK_LENGTHS",
    "TASK_NAMES",
]
