"""One frozen dataclass per concern: model, task, training. Validated on construction.

`key` is a stable content hash (Python's hash() is salted per process), used as the cache key:
the run id is the hash of (model, task, train, seed).
"""

import dataclasses
import hashlib
import json
from dataclasses import dataclass


def _positive_int(obj, *names: str) -> None:
    for name in names:
        value = getattr(obj, name)
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ValueError(f"{name}: must be a positive integer, got {value!r}")


def _positive_float(obj, *names: str) -> None:
    for name in names:
        value = getattr(obj, name)
        if not isinstance(value, int | float) or isinstance(value, bool) or not value > 0:
            raise ValueError(f"{name}: must be a positive number, got {value!r}")


def stable_hash(payload: dict, n: int = 16) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:n]


class _Config:
    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

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
    attention: str = "standard"  # a name in core.attention.ATTENTION
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
        from . import attention

        _positive_int(self, "n_layers", "vocab_size", "max_len")
        if not isinstance(self.mlp, bool):
            raise ValueError(f"mlp: must be True or False, got {self.mlp!r}")
        D, H, r, G = attention.resolve(self.attention, self.d_model, self.n_heads, self.d_head, self.n_kv_heads)
        self._set("d_head", r)
        self._set("n_kv_heads", G)
        self._set("d_mlp", 4 * D if self.d_mlp is None else self.d_mlp)
        _positive_int(self, "d_mlp")


@dataclass(frozen=True)
class TaskConfig(_Config):
    name: str = "associative_recall"  # a name in core.tasks.TASKS
    n_symbols: int | None = None  # None: the task's default alphabet size
    length: int | None = None  # None: the task's default (items per sequence, or key-value pairs)
    # fixed held-out examples, drawn from eval_seed: 256 gives 2048-2816 answer positions per task;
    # 512, evaluated every 25 steps, added a third to a sweep's time (docs/benchmarks.md)
    eval_size: int = 256
    eval_seed: int = 12345

    def __post_init__(self):
        from .tasks import get_task

        cls = get_task(self.name)
        self._set("n_symbols", cls.n_symbols if self.n_symbols is None else self.n_symbols)
        self._set("length", cls.length if self.length is None else self.length)
        _positive_int(self, "n_symbols", "length", "eval_size")
        cls.check(self)


@dataclass(frozen=True)
class TrainConfig(_Config):
    steps: int = 800  # standard reaches >= 95% eval accuracy on every task by then
    batch_size: int = 32
    lr: float = 3e-3
    warmup: int = 50  # linear warmup steps, then cosine decay to lr_min_ratio * lr
    lr_min_ratio: float = 0.1
    weight_decay: float = 0.01  # AdamW, applied to matrices only (not norms, biases)
    grad_clip: float | None = 1.0  # per-run global grad-norm clip; None turns it off
    eval_every: int = 25

    def __post_init__(self):
        _positive_int(self, "steps", "batch_size", "eval_every")
        _positive_float(self, "lr", "lr_min_ratio")
        if not isinstance(self.warmup, int) or self.warmup < 0:
            raise ValueError(f"warmup: must be a non-negative integer, got {self.warmup!r}")
        if not isinstance(self.weight_decay, int | float) or self.weight_decay < 0:
            raise ValueError(f"weight_decay: must be >= 0, got {self.weight_decay!r}")
        if self.grad_clip is not None:
            _positive_float(self, "grad_clip")


def run_id(model: ModelConfig, task: TaskConfig, train: TrainConfig, seed: int) -> str:
    return stable_hash({"model": model.to_dict(), "task": task.to_dict(), "train": train.to_dict(), "seed": seed})
