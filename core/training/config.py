"""One frozen dataclass per concern: model, task, training. Validated on construction.

`key` is a stable content hash (Python's hash() is salted per process), used as the cache key:
the run id is the hash of (model, task, train, seed).
"""

import dataclasses
import hashlib
import json
import math
from dataclasses import dataclass

from . import task_specs
from .criterion import SCHEDULES, UNTIL
from .task_specs import EVAL_SIZE, TEST_SEED, VAL_SEED

# Upper bounds far beyond anything this lab trains, so a typo is one clear error, not an overflow.
MOST = {
    "steps": 10**7,
    "batch_size": 65536,
    "eval_every": 10**7,
    "eval_size": 65536,
    "n_symbols": 4096,
    "length": 1024,
    "n_layers": 256,
    "vocab_size": 10**6,
    "max_len": 65536,
    "d_mlp": 65536,
}


PRECISIONS = ("fp32", "bf16")


def _positive_int(obj, *names: str) -> None:
    for name in names:
        value = getattr(obj, name)
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ValueError(f"{name}: must be a positive integer, got {value!r}")
        if name in MOST and value > MOST[name]:
            raise ValueError(f"{name}: must be at most {MOST[name]}, got {value!r}")


def _positive_float(obj, *names: str) -> None:
    for name in names:
        value = getattr(obj, name)
        if not isinstance(value, int | float) or isinstance(value, bool) or not 0 < value < math.inf:
            raise ValueError(f"{name}: must be a finite positive number, got {value!r}")


def stable_hash(payload: dict, n: int = 16) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:n]


class _Config:
    # Fields added after runs were first stored, with the default they had implicitly before: one rule for
    # every config, so a stored run keeps its id: such a field is hashed (and stored) only off its default.
    LATER: dict = {}

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        return {k: v for k, v in d.items() if k not in self.LATER or v != self.LATER[k]}

    @property
    def key(self) -> str:
        return stable_hash({"type": type(self).__name__, **self.to_dict()})

    @classmethod
    def from_dict(cls, d: dict):
        fields = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in fields})

    def _set(self, name, value):  # frozen: normalise defaults once, in __post_init__
        object.__setattr__(self, name, value)


@dataclass(frozen=True)
class ModelConfig(_Config):
    attention: str = "standard"  # a name in core.attention.VARIANTS
    n_layers: int = 2
    d_model: int = 64
    n_heads: int = 4
    d_head: int | None = None  # None: d_model // n_heads
    n_kv_heads: int | None = None  # None: the parameterization's own (gqa: n_heads // 2, mqa: 1, else n_heads)
    mlp: bool = True  # False: an attention-only model
    d_mlp: int | None = None  # None: 4 * d_model
    vocab_size: int = 64  # set from the task by the sweep
    max_len: int = 64  # learned absolute positions, so W_QK is a single bilinear form (no RoPE)

    def __post_init__(self):
        from ..attention import registry as attention  # deferred: the config itself is torch-free

        _positive_int(self, "n_layers", "vocab_size", "max_len")
        if not isinstance(self.mlp, bool):
            raise ValueError(f"mlp: must be True or False, got {self.mlp!r}")
        D, H, r, G = attention.resolve(self.attention, self.d_model, self.n_heads, self.d_head, self.n_kv_heads)
        self._set("d_head", r)
        self._set("n_kv_heads", G)
        if self.d_mlp is None and 4 * D > MOST["d_mlp"]:
            raise ValueError(f"d_model: must be at most {MOST['d_mlp'] // 4} (the MLP is 4 × d_model wide), got {D}")
        self._set("d_mlp", 4 * D if self.d_mlp is None else self.d_mlp)
        _positive_int(self, "d_mlp")


@dataclass(frozen=True)
class TaskConfig(_Config):
    name: str = "associative_recall"  # a name in core.training.task_specs.TASK_SPECS
    n_symbols: int | None = None  # None: the task's default alphabet size
    length: int | None = None  # None: the task's default (items per sequence, or key-value pairs)
    # two fixed held-out sets of eval_size examples each (2048-2816 answer positions per task), disjoint
    # from each other and from training: validation picks (best lr, time to solve), test is reported
    eval_size: int = EVAL_SIZE
    val_seed: int = VAL_SEED
    test_seed: int = TEST_SEED

    def __post_init__(self):
        spec = task_specs.get_spec(self.name)
        self._set("n_symbols", spec.n_symbols if self.n_symbols is None else self.n_symbols)
        self._set("length", spec.length if self.length is None else self.length)
        _positive_int(self, "n_symbols", "length", "eval_size")
        for name in ("val_seed", "test_seed"):
            if not isinstance(getattr(self, name), int) or not 0 <= getattr(self, name) < 2**63:
                raise ValueError(f"{name}: must be an integer in [0, 2**63), got {getattr(self, name)!r}")
        if self.val_seed == self.test_seed:
            raise ValueError(f"test_seed: must differ from val_seed={self.val_seed}")
        task_specs.check(self)


@dataclass(frozen=True)
class TrainConfig(_Config):
    steps: int = 800  # standard reaches >= 95% eval accuracy on every task by then
    batch_size: int = 32
    lr: float = 3e-3  # a sweep trains a grid of them (LR_GRID) and compares each parameterization at its best
    warmup: int = 50  # linear warmup steps, then the schedule
    lr_min_ratio: float = 0.1  # cosine: decays to lr_min_ratio * lr at `steps`
    weight_decay: float = 0.01  # AdamW, applied to matrices only (not norms, biases)
    grad_clip: float | None = 1.0  # per-run global grad-norm clip; None turns it off
    eval_every: int = 25
    # "bf16": forward and loss under bfloat16 autocast (matmuls in bf16; softmax, LayerNorm, cross-entropy,
    # parameters, gradients, AdamW state and clipping stay float32). fp32 is the reference.
    precision: str = "fp32"
    # "constant": warmup, then a constant lr: a run's trajectory does not depend on `steps` (core.training.criterion)
    schedule: str = "cosine"
    until: str = "steps"  # "solved": a member stops once it solves its task on validation; `steps` is the cap

    LATER = {"precision": "fp32", "schedule": "cosine", "until": "steps"}

    def __post_init__(self):
        _positive_int(self, "steps", "batch_size", "eval_every")
        for name, allowed in (("precision", PRECISIONS), ("schedule", SCHEDULES), ("until", UNTIL)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name}: unknown {getattr(self, name)!r}; allowed: {', '.join(allowed)}")
        if self.until == "solved" and self.schedule != "constant":
            raise ValueError(
                "schedule: until='solved' needs 'constant' (a cosine decay ends at the cap, so the "
                "run would depend on it)"
            )
        _positive_float(self, "lr", "lr_min_ratio")
        if not isinstance(self.warmup, int) or self.warmup < 0:
            raise ValueError(f"warmup: must be a non-negative integer, got {self.warmup!r}")
        if not isinstance(self.weight_decay, int | float) or not 0 <= self.weight_decay < math.inf:
            raise ValueError(f"weight_decay: must be >= 0, got {self.weight_decay!r}")
        if self.grad_clip is not None:
            _positive_float(self, "grad_clip")
        if self.until == "solved" and self.steps <= self.warmup:
            raise ValueError(f"steps: the cap must be above the warmup ({self.warmup} steps), got {self.steps}")


# The default learning-rate grid (`--lr grid`): half-decade steps from 3e-4 to 1e-2.
LR_GRID = (3e-4, 1e-3, 3e-3, 1e-2)


def run_id(model: ModelConfig, task: TaskConfig, train: TrainConfig, seed: int) -> str:
    return stable_hash({"model": model.to_dict(), "task": task.to_dict(), "train": train.to_dict(), "seed": seed})


def lineage_id(model: dict, task: dict, train: dict, seed: int) -> str:
    """A run's id without its cap (the configs as to_dict gives them, as a run file stores them): runs of one
    lineage differ only in `steps`, and under a schedule that does not depend on the cap, a longer one is the
    shorter one trained on."""
    train = {k: v for k, v in train.items() if k != "steps"}
    return stable_hash({"model": model, "task": task, "train": train, "seed": seed})
