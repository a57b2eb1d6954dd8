"""Every attention parameterization from the seed questions, behind one registry, `VARIANTS`.

Adding a variant is one class (a subclass of `core.attention.base.Attention`, in its own module) and one line
in `VARIANTS`; the parametrized tests pick it up with no other edit.

This module is torch-free, so the read-only pages can name, order and describe the variants without loading
torch; `core.attention.registry` imports the classes (ATTENTION, build, count_params, get, resolve).
Holds base (the Attention class and the shared attend step), one module per parameterization (standard,
stacked, bilinear, tied_qk, tied_qkv, identity, mqa, gqa) and fold (stacked folded into standard).
May import: nothing else in core (it is the bottom layer).
"""

from typing import NamedTuple


class Variant(NamedTuple):
    cls: str  # "module.Class" under core.attention
    formula: str  # attention parameters per layer (D=d_model, H=n_heads, r=d_head, G=n_kv_heads), as count_params


# Insertion order is the legend order on every page.
VARIANTS: dict[str, Variant] = {
    "standard": Variant("standard.Standard", "4·D·H·r"),
    "stacked": Variant("stacked.Stacked", "3·D² + 4·D·H·r"),
    "bilinear": Variant("bilinear.Bilinear", "H·D² + 2·D·H·r"),
    "tied_qk": Variant("tied_qk.TiedQK", "3·D·H·r"),
    "tied_qkv": Variant("tied_qkv.TiedQKV", "2·D·H·r"),
    "identity": Variant("identity.Identity", "0"),
    "mqa": Variant("mqa.MQA", "2·D·H·r + 2·D·r"),
    "gqa": Variant("gqa.GQA", "2·D·H·r + 2·D·G·r"),
}
NAMES = tuple(VARIANTS)


def check_name(name: str) -> None:
    if name not in VARIANTS:
        raise ValueError(f"attention: unknown {name!r}; allowed: {', '.join(VARIANTS)}")


__all__ = ["NAMES", "VARIANTS", "Variant", "check_name"]
