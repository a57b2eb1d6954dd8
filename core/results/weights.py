"""A run's final weights as stored: per-head W_Q, W_K, W_V, W_O (TransformerLens shapes), their W_QK and W_OV,
a few attention patterns, and checks that a file is whole run weights before anything reads it."""

import re

import numpy as np
from safetensors.numpy import load_file

from .runfile import model_path, weights_path


def load_head_weights(store, run_id: str) -> list[dict[str, np.ndarray]]:
    """Per layer: W_Q, W_K, W_V (H, D, r), W_O (H, r, D) where defined, and always W_QK, W_OV (H, D, D).

    Raises ValueError naming what is wrong when the file is not whole run weights: no blocks.* tensors, no
    d_head in its metadata, a layer without its factors, mismatched shapes, or a non-finite value."""
    from safetensors import safe_open

    path = weights_path(store, run_id)
    with safe_open(str(path), "np") as f:
        d_head = (f.metadata() or {}).get("d_head", "")
    if not d_head.isdigit() or int(d_head) == 0:
        raise ValueError(f"{path.name}: no d_head in its metadata")
    blocks = _by_layer({k: v.astype(np.float32) for k, v in load_file(str(path)).items()})
    if not blocks or sorted(blocks) != list(range(len(blocks))):
        raise ValueError(f"{path.name}: no blocks.<layer>.W_* tensors for layers 0..n")
    return [_layer(blocks[i], int(d_head) ** -0.5, f"{path.name} layer {i}") for i in sorted(blocks)]


def _by_layer(tensors: dict) -> dict[int, dict[str, np.ndarray]]:
    """{layer: {name: tensor}} of a weights file's blocks.<layer>.W_* tensors."""
    layers = sorted({int(k.split(".")[1]) for k in tensors if re.fullmatch(r"blocks\.\d+\.W_\w+", k)})
    return {i: {k.split(".", 2)[2]: v for k, v in tensors.items() if k.startswith(f"blocks.{i}.")} for i in layers}


def _layer(hw: dict, scale: float, where: str) -> dict[str, np.ndarray]:
    try:
        if "W_QK" not in hw:
            hw["W_QK"] = scale * hw["W_Q"] @ hw["W_K"].transpose(0, 2, 1)  # (H, D, D)
        if "W_OV" not in hw:
            hw["W_OV"] = hw["W_V"] @ hw["W_O"]  # (H, D, D)
    except (KeyError, ValueError) as err:
        raise ValueError(f"{where}: W_QK and W_OV cannot be formed ({err})") from None
    for name in ("W_QK", "W_OV"):
        m = hw[name]
        if m.ndim != 3 or m.shape[1] != m.shape[2] or m.shape != hw["W_QK"].shape:
            raise ValueError(f"{where}: {name} has shape {m.shape}, not (H, D, D)")
    if not all(np.isfinite(v).all() for v in hw.values()):
        raise ValueError(f"{where}: holds a non-finite value")
    return hw


def weights_problem(store, run_id: str) -> str | None:
    """None when the run's weights load whole (load_head_weights' checks), "missing" when there is no file,
    else the reason it cannot be used."""
    if not weights_path(store, run_id).is_file():
        return "missing"
    try:
        load_head_weights(store, run_id)
    except Exception as err:  # noqa: BLE001 - truncated, foreign, crafted: each is one named reason
        return str(err).splitlines()[0][:200] or type(err).__name__
    return None


def drop_weights(store, run_ids) -> int:
    """Delete these runs' weights and model files (their metrics stay); returns how many runs lost weights."""
    removed = 0
    for rid in run_ids:
        model_path(store, rid).unlink(missing_ok=True)
        path = weights_path(store, rid)
        if path.exists():
            path.unlink()
            removed += 1
    return removed


def drop_models(store, run_ids) -> int:
    """Delete these runs' whole models (their head weights and metrics stay); returns how many were deleted."""
    removed = 0
    for rid in run_ids:
        path = model_path(store, rid)
        if path.exists():
            path.unlink()
            removed += 1
    return removed


def load_patterns(store, run_id: str):
    """(patterns (L, N, H, T, T), example tokens (N, T)), or (None, None) when not stored."""
    tensors = load_file(str(weights_path(store, run_id)))
    if "patterns" not in tensors:
        return None, None
    return tensors["patterns"].astype(np.float32), tensors["examples"]


def stored_tensors(store, run_id: str) -> dict:
    """A run's stored tensors as RunResult fields, exactly as kept (float16 head weights, patterns, examples; the
    float32 model), so a run stored again under another id (a raised cap's carried member) is written whole.
    Empty where the store kept none (prune drops all but the ones the pages read)."""
    out = {}
    path = weights_path(store, run_id)
    if path.is_file():
        tensors = load_file(str(path))
        out["head_weights"] = [layer for _, layer in sorted(_by_layer(tensors).items())]
        if "patterns" in tensors:
            out["patterns"], out["examples"] = tensors["patterns"], tensors["examples"]  # (L, N, H, T, T), (N, T)
    if model_path(store, run_id).is_file():
        out["state_dict"] = load_file(str(model_path(store, run_id)))
    return out
