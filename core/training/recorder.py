"""What a training records of each member, and when each member stops.

Per member: its metrics at every evaluation, its status (ok or diverged), its stopping criterion
(core.training.criterion.Criterion) and, once stopped, why (`STOPS`) and at which step. Per lr: whether
it can still be the one chosen on validation; an lr that cannot (`criterion.hopeless`) stops.
The recorder's state is plain Python, so a checkpoint saves it and a resumed training goes on from it.
"""

from dataclasses import dataclass, field

import torch

from .criterion import Criterion, best_possible, hopeless, lr_score


@dataclass
class RunResult:
    seed: int
    lr: float
    status: str  # "ok" or "diverged"
    metrics: list[tuple[int, str, float]] = field(default_factory=list)  # (step, metric, value)
    final: dict = field(default_factory=dict)  # val/test loss and accuracy where it stopped, solve step, trend
    stop: str = "cap"  # why it stopped (core.training.criterion.STOPS)
    train_seconds: float = 0.0  # wall time of the whole ensemble (all members train together)
    step_seconds: float = 0.0  # the part of it spent in training steps (evaluations and set-up excluded)
    steps_done: int = 0  # optimizer steps this member ran
    # the step this process took it up at (a checkpoint, a shorter cap's end state): a sweep counts the steps after
    steps_from: int = 0
    tokens_per_s: float = 0.0  # training tokens per second of the whole ensemble
    threads: int = 1  # intra-op threads it trained with (a sweep with workers gives each one core)
    n_ensemble: int = 1  # members that really trained together in this ensemble (at its start)
    device: str = "cpu"  # where it trained: its numbers differ from another device's in the last float digits
    head_weights: list = field(default_factory=list)  # per layer, head_weights() of the final model
    state_dict: dict = field(default_factory=dict)  # the final model's, on the CPU: reloadable (core.load_model)
    patterns: torch.Tensor | None = None  # (L, N_PATTERN_EXAMPLES, H, T, T)
    examples: torch.Tensor | None = None  # (N_PATTERN_EXAMPLES, T) the tokens those patterns are for
    resume: dict | None = None  # parameters and AdamW state where it stopped at the cap: a longer cap goes on from it


class Recorder:
    """results[i], criteria[i] for member i (the caller's order). `settled`: (lr, solve step or None) of
    members of the same cell decided outside this training (stored runs), which the lr rule counts too."""

    def __init__(self, results: list[RunResult], until: str, cap: int, eval_every: int, settled=(), prune=True):
        self.results, self.until, self.cap, self.eval_every, self.prune = results, until, cap, eval_every, prune
        self.criteria = [Criterion() for _ in results]
        self.settled = list(settled)
        self.running: dict[int, float] = {}  # member -> training loss summed since the last evaluation
        self.n_running = 0

    # ---- state for checkpoints --------------------------------------------------------------------
    def state(self, members: list[int] | None = None) -> dict:
        """Everything to go on from here; of some members only (a run's end state), without the running sums."""
        idx = range(len(self.results)) if members is None else members
        results, whole = [self.results[i] for i in idx], members is None
        return {
            "criteria": [self.criteria[i].state() for i in idx],
            "running": dict(self.running) if whole else {},
            "n_running": self.n_running if whole else 0,
            "results": [
                {
                    "status": r.status,
                    "metrics": list(r.metrics),
                    "final": dict(r.final),
                    "stop": r.stop,
                    "steps_done": r.steps_done,
                }
                for r in results
            ],
        }

    def load(self, state: dict) -> None:
        self.criteria = [Criterion(*c) for c in state["criteria"]]
        self.running, self.n_running = dict(state["running"]), state["n_running"]
        for r, s in zip(self.results, state["results"]):
            r.status, r.metrics, r.final, r.stop = s["status"], list(s["metrics"]), dict(s["final"]), s["stop"]
            r.steps_done = s["steps_done"]

    # ---- per step ---------------------------------------------------------------------------------
    def after_step(self, step: int, members: list[int], loss: torch.Tensor) -> list[int]:
        """Add each member's training loss; returns the members that diverged (a non-finite loss) at this step."""
        diverged = []
        for i, value in zip(members, loss.tolist()):
            if value != value or value in (float("inf"), float("-inf")):
                r = self.results[i]
                r.status, r.stop, r.steps_done = "diverged", "diverged", step
                r.metrics.append((step, "train_loss", float("nan")))
                self.running.pop(i, None)
                diverged.append(i)
            else:
                self.running[i] = self.running.get(i, 0.0) + value
        self.n_running += 1
        return diverged

    def evaluated(self, step: int, members: list[int], values: dict, extra) -> list[int]:
        """Record an evaluation of these members (values: metric -> (E,) in members' order; extra(pos) more
        rows); returns the members that stop now (solved, at the cap, or at an lr that cannot be chosen)."""
        stopping = []
        for pos, i in enumerate(members):
            r = self.results[i]
            r.metrics += [(step, k, v[pos].item()) for k, v in values.items()]
            if self.n_running and i in self.running:
                r.metrics.append((step, "train_loss", self.running[i] / self.n_running))
            r.metrics += extra(pos)
            r.final.update({k: v[pos].item() for k, v in values.items()})
            r.steps_done = step
            met = self.criteria[i].update(step, r.final["val_acc"]) if "val_acc" in r.final else False
            if self.until == "solved" and met:
                r.stop = "solved"
                stopping.append(i)
            elif step >= self.cap:
                r.stop = "cap"
                stopping.append(i)
        self.running, self.n_running = {}, 0
        still = [i for i in members if i not in stopping]
        if self.until == "solved" and self.prune:
            stopping += self._hopeless(still, step)
        return stopping

    def hopeless_now(self, members: list[int], step: int) -> list[int]:
        """At a resumed run's first step: the members whose lr the cell's settled members already rule out,
        as they would have been at this evaluation had the run not stopped at its old cap."""
        return self._hopeless(list(members), step) if self.until == "solved" and self.prune else []

    def _hopeless(self, still: list[int], step: int) -> list[int]:
        """Members of every lr that can no longer be chosen on validation (criterion.hopeless)."""
        by_lr: dict[float, list[int]] = {}
        for i, r in enumerate(self.results):
            by_lr.setdefault(r.lr, []).append(i)
        finished, open_ = [], {}
        settled_by_lr: dict[float, list] = {}
        for lr, s in self.settled:
            settled_by_lr.setdefault(lr, []).append(s)
        for lr, idx in by_lr.items():
            solve = settled_by_lr.get(lr, []) + [self.solve_step(i) for i in idx if i not in still]
            running = [i for i in idx if i in still]
            if any(self.results[i].stop == "pruned" for i in idx):
                continue
            if running:
                bounds = [self.criteria[i].solve_step or step + self.eval_every for i in running]
                open_[lr] = (best_possible(solve, bounds), running)
            else:
                finished.append(lr_score(solve))
        finished += [lr_score(solve) for lr, solve in settled_by_lr.items() if lr not in by_lr]  # trained before
        out = []
        for candidate, running in open_.values():
            if hopeless(candidate, finished):
                for i in running:
                    self.results[i].stop = "pruned"
                out += running
        return out

    def solve_step(self, i: int) -> int | None:
        """The member's solve step if it met the criterion (counts as solved), else None."""
        return self.criteria[i].solve_step if self.results[i].stop == "solved" else None

    def finish(self, i: int) -> None:
        """A stopped member's final numbers: its solve step (NaN: not solved) and where it stopped."""
        r, solve = self.results[i], self.solve_step(i)
        r.final["train_loss"] = next((v for s, k, v in reversed(r.metrics) if k == "train_loss"), float("nan"))
        r.final["solve_step"] = float("nan") if solve is None else float(solve)
        r.final["stop_step"] = float(r.steps_done)
        r.final.update(late_trend(r.metrics, r.steps_done))


def late_trend(metrics, steps: int) -> dict:
    """How validation moved over the last fifth of training (from the evaluation nearest 80% of the
    steps to the last): the evidence that a run which has not solved its task was still improving."""
    val = {k: [(s, v) for s, kk, v in metrics if kk == k] for k in ("val_loss", "val_acc")}
    if len(val["val_loss"]) < 2:
        return {}
    mark = min(val["val_loss"], key=lambda sv: abs(sv[0] - 0.8 * steps))[0]
    at = {k: dict(v) for k, v in val.items()}
    last = val["val_loss"][-1][0]
    return {
        "val_loss_drop": (at["val_loss"][mark] - at["val_loss"][last]) / max(abs(at["val_loss"][mark]), 1e-12),
        "val_acc_gain": at["val_acc"][last] - at["val_acc"][mark],
    }
