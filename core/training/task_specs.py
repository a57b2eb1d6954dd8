"""The task registry, `TASK_SPECS`: each task's class, default size and description, torch-free.

Adding a task is one class in core.training.tasks and one line here; the parametrized tests pick it up. The
read-only pages name, order and describe tasks from here without loading torch; core.training.tasks imports
the classes (TASKS).
"""

from collections.abc import Callable
from math import comb, factorial, perm
from typing import NamedTuple

EVAL_SIZE, VAL_SEED, TEST_SEED = 256, 12345, 54321  # TaskConfig's defaults for the held-out sets
HELD_OUT_ROOM = 4  # a task must draw this many times eval_size different sequences: held out <= half of them


class TaskSpec(NamedTuple):
    cls: str  # class name in core.training.tasks
    n_symbols: int  # default alphabet size
    length: int  # default items per sequence (key-value pairs for associative_recall)
    description: str
    distinct: bool = False  # a sequence holds `length` different symbols, so length <= n_symbols
    min_length: int = 1  # the smallest length the task can pose a question with
    # (n_symbols, length) -> how many different inputs the task can draw (tests check it against the class)
    sequences: Callable[[int, int], int] = lambda n, L: n**L


# Insertion order is the display order on every page.
TASK_SPECS: dict[str, TaskSpec] = {
    "associative_recall": TaskSpec(
        "AssociativeRecall",
        32,
        8,
        "key-value pairs, then queries whose answers are the values (MQAR)",
        True,
        sequences=lambda n, L: perm(n, L) * n**L * factorial(L),  # keys, values, query order
    ),
    "induction": TaskSpec(
        "Induction",
        32,
        12,
        "distinct tokens, then some of their bigrams [A][B] again: at A, predict B",
        True,
        min_length=4,
        sequences=lambda n, L: perm(n, L) * comb(L - L // 3, L // 3) * factorial(L // 3),
    ),
    "reverse": TaskSpec("Reverse", 16, 10, "a sequence, a separator, the sequence reversed"),
    "sort": TaskSpec("Sort", 16, 10, "a sequence, a separator, the sequence sorted"),
    "histogram": TaskSpec("Histogram", 8, 10, "for each token, how many times it occurs in the sequence"),
}
TASK_NAMES = tuple(TASK_SPECS)


def get_spec(name: str) -> TaskSpec:
    if name not in TASK_SPECS:
        raise ValueError(f"task: unknown {name!r}; allowed: {', '.join(TASK_SPECS)}")
    return TASK_SPECS[name]


def check(cfg) -> None:
    """Raise a one-line ValueError for sizes the task cannot use."""
    spec = get_spec(cfg.name)
    if spec.distinct and cfg.length > cfg.n_symbols:
        raise ValueError(f"length: at most n_symbols={cfg.n_symbols} distinct symbols, got {cfg.length}")
    if cfg.length < spec.min_length:
        raise ValueError(f"length: {cfg.name} needs {spec.min_length} to n_symbols={cfg.n_symbols}, got {cfg.length}")
    # the two held-out sets are drawn apart and training redraws any held-out row: both need room to spare
    need, have = HELD_OUT_ROOM * cfg.eval_size, spec.sequences(cfg.n_symbols, cfg.length)
    if have < need:
        raise ValueError(
            f"n_symbols: {cfg.name} with n_symbols={cfg.n_symbols}, length={cfg.length} has {have} "
            f"different sequences; held-out sets of eval_size={cfg.eval_size} need at least {need} "
            "(raise n_symbols or length, or lower eval_size)"
        )
