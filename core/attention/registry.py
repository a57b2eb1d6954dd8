"""The attention classes behind `core.attention.VARIANTS`, imported from their modules (this loads torch)."""

from importlib import import_module

from . import VARIANTS, check_name
from .base import Attention


def _load(path: str) -> type[Attention]:
    module, cls = path.rsplit(".", 1)
    return getattr(import_module(f"{__package__}.{module}"), cls)


ATTENTION: dict[str, type[Attention]] = {name: _load(v.cls) for name, v in VARIANTS.items()}


def get(name: str) -> type[Attention]:
    check_name(name)
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
