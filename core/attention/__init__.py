"""Every attention parameterization from the seed questions, behind one registry.

Adding a variant is one class (a subclass of `Attention`) and one line in `ATTENTION`;
the parametrized tests pick it up with no other edit.
May import: nothing else in core (it is the bottom layer).
"""

from .base import Attention
from .bilinear import Bilinear
from .gqa import GQA
from .identity import Identity
from .mqa import MQA
from .stacked import Stacked
from .standard import Standard
from .tied_qk import TiedQK
from .tied_qkv import TiedQKV

# Insertion order is the legend order on every page.
ATTENTION: dict[str, type[Attention]] = {
    "standard": Standard,
    "stacked": Stacked,
    "bilinear": Bilinear,
    "tied_qk": TiedQK,
    "tied_qkv": TiedQKV,
    "identity": Identity,
    "mqa": MQA,
    "gqa": GQA,
}


def get(name: str) -> type[Attention]:
    if name not in ATTENTION:
        raise ValueError(f"attention: unknown {name!r}; allowed: {', '.join(ATTENTION)}")
    return ATTENTION[name]


def resolve(name: str, d_model: int, n_heads: int, d_head: int | None = None, n_kv_heads: int | None = None):
    """Validated (d_model, n_heads, d_head, n_kv_heads) with defaults filled in."""
    return get(name).resolve(d_model, n_heads, d_head, n_kv_heads)


def build(name: str, d_model: int, n_heads: int, d_head: int | None = None, n_kv_heads: int | None = None) -> Attention:
    return get(name)(*resolve(name, d_model, n_heads, d_head, n_kv_heads))


def count_params(
    name: str, d_model: int, n_heads: int, d_head: int | None = None, n_kv_heads: int | None = None
) -> int:
    """The analytic attention parameter count; equals sum(p.numel()) of `build(...)`."""
    return get(name).count_params(*resolve(name, d_model, n_heads, d_head, n_kv_heads))


__all__ = ["ATTENTION", "Attention", "build", "count_params", "get", "resolve"]
