"""Training to a criterion: the schedule, the stopping rule and the lr selection rule, torch-free.

A run under `until="solved"` stops when it has solved its task on validation, or at `steps` (the cap).
The schedule must then not depend on the cap (`schedule="constant"`: linear warmup, then a constant lr),
so a run capped at 6,400 steps is the same run as one capped at 3,200, up to step 3,200: stopping early
changes nothing before the stop, and a longer cap extends a stored run instead of retraining it.

The lr a cell is reported at is chosen on validation by `lr_score`, and an lr that can no longer be chosen
stops training (`hopeless`); both live here so the engine and the analysis share one definition.
"""

import math

SOLVED = 0.95  # validation accuracy on the answer positions that counts as solving the task
# Consecutive evaluations at or above SOLVED before a member stops: one evaluation can touch 0.95 by a
# fluctuation of a few answer positions (256 sequences) and fall back; two in a row rarely do.
PATIENCE = 2
SCHEDULES = ("cosine", "constant")
UNTIL = ("steps", "solved")
STOPS = ("solved", "cap", "pruned", "diverged")  # why a member stopped


def lr_at(step: int, steps: int, warmup: int, lr_min_ratio: float, schedule: str) -> float:
    """Multiplier on the lr: linear warmup, then cosine decay to lr_min_ratio at `steps`, or constant."""
    if step < warmup:
        return (step + 1) / warmup
    if schedule == "constant":
        return 1.0
    progress = (step - warmup) / max(1, steps - warmup)
    return lr_min_ratio + (1 - lr_min_ratio) * 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))


class Criterion:
    """One member's stopping state: its first evaluation at or above SOLVED (the solve step) and the run of
    consecutive evaluations there. `update` returns True when the member has met the criterion."""

    def __init__(self, solve_step: int | None = None, streak: int = 0):
        self.solve_step, self.streak = solve_step, streak

    def update(self, step: int, val_acc: float) -> bool:
        if val_acc >= SOLVED:
            self.streak += 1
            self.solve_step = step if self.solve_step is None else self.solve_step
        else:
            self.streak = 0
        return self.streak >= PATIENCE

    def state(self) -> tuple:
        return self.solve_step, self.streak


# ---- choosing an lr on validation, and dropping an lr that cannot be chosen --------------------------
def lr_score(solve_steps: list, val_loss: float = math.nan) -> tuple:
    """An lr's rank key (larger is better): seeds solved on validation, then the sum of their solve steps
    (fewer steps is better), then the mean final validation loss. solve_steps: one per seed, None if unsolved.
    Ties after all three go to the smaller lr (the caller sorts on lr last)."""
    solved = [s for s in solve_steps if s is not None]
    return len(solved), -sum(solved), -val_loss if math.isfinite(val_loss) else -math.inf


def best_possible(solve_steps: list, bounds: list[int]) -> tuple:
    """The best first two keys of lr_score an lr can still reach: every running member solves as early as it
    still can. solve_steps: the settled members' (None: unsolved); bounds: per running member, the earliest
    solve step it can still record (its first evaluation at SOLVED if it had one, else its next evaluation)."""
    solved = [s for s in solve_steps if s is not None]
    return len(solved) + len(bounds), -(sum(solved) + sum(bounds))


def hopeless(candidate: tuple, finished: list[tuple]) -> bool:
    """An lr whose best_possible is strictly below the first two keys of a finished lr's score can never be
    chosen, whatever its members do next: it may stop. A tie is never hopeless (the last key could decide)."""
    return any(candidate < score[:2] for score in finished)
