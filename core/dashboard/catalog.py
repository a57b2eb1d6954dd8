"""What the pages name from the lower layers: the registries' order, formulas, task descriptions, the lr grid.

Pages import this (and the rest of core.dashboard), never core.attention or core.training directly, so the
one-way flow is checked by tests/test_layout.py.
"""

from ..attention import ATTENTION
from ..training.config import LR_GRID, PRECISIONS, TrainConfig
from ..training.tasks import TASKS

ATTENTION_NAMES = list(ATTENTION)  # the registry's order: every legend, table and facet uses it
TASK_NAMES = list(TASKS)
FORMULAS = {name: cls.formula for name, cls in ATTENTION.items()}  # attention parameters per layer
TASK_DESCRIPTIONS = {name: cls.description for name, cls in TASKS.items()}
TASK_LENGTHS = {name: cls.length for name, cls in TASKS.items()}  # each task's default size
DEFAULT_STEPS = TrainConfig().steps

__all__ = ["ATTENTION_NAMES", "DEFAULT_STEPS", "FORMULAS", "LR_GRID", "PRECISIONS", "TASK_DESCRIPTIONS", "TASK_LENGTHS",
           "TASK_NAMES"]
