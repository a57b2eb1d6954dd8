"""Similarity metrics of learned attention matrices (numpy only, so pages can use them without torch).

Inputs are per-layer dicts in head_weights() form: W_Q, W_K, W_V (H, D, r), W_O (H, r, D) where
defined, and W_QK, W_OV (H, D, D) always.
"""

import numpy as np
import pandas as pd

METRICS = {
    "cos_QK": "cosine of flattened W_Q and W_K",
    "cos_QV": "cosine of flattened W_Q and W_V",
    "cos_KV": "cosine of flattened W_K and W_V",
    "sym_QK": "symmetric share of W_QK, ||sym||^2 / ||W_QK||^2",
    "sym_OV": "symmetric share of W_OV, ||sym||^2 / ||W_OV||^2",
    "overlap_QK": "column-space overlap of W_Q and W_K, mean cos^2 of the principal angles",
    "erank_QK": "effective rank of W_QK (exp of the entropy of its normalised singular values)",
    "erank_OV": "effective rank of W_OV",
}
# Unchanged when a head's basis changes (W_Q A, W_K A^-T; W_V B, W_O B^-1)? Checked by tests/test_analysis.py.
INVARIANT = {
    "cos_QK": False,
    "cos_QV": False,
    "cos_KV": False,
    "sym_QK": True,
    "sym_OV": True,
    "overlap_QK": True,
    "erank_QK": True,
    "erank_OV": True,
}


def _cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = a.reshape(a.shape[0], -1), b.reshape(b.shape[0], -1)
    return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1) + 1e-12)


def sym_share(M: np.ndarray) -> np.ndarray:
    """(H, D, D) -> (H,): 1 for symmetric, 0 for antisymmetric, 1/2 on average for random."""
    sym = (M + M.transpose(0, 2, 1)) / 2
    return (sym**2).sum((1, 2)) / ((M**2).sum((1, 2)) + 1e-12)


def subspace_overlap(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """(H, D, r) x2 -> (H,): mean squared cosine of the principal angles between column spaces."""
    out = []
    for a, b in zip(A, B):
        qa, qb = np.linalg.qr(a)[0], np.linalg.qr(b)[0]
        cos = np.linalg.svd(qa.T @ qb, compute_uv=False)
        out.append(float((cos**2).mean()))
    return np.array(out)


def singular_values(M: np.ndarray) -> np.ndarray:
    return np.linalg.svd(M, compute_uv=False)  # (H, D), descending


def effective_rank(M: np.ndarray) -> np.ndarray:
    s = singular_values(M)
    p = s / (s.sum(-1, keepdims=True) + 1e-12)
    return np.exp(-(p * np.log(p + 1e-12)).sum(-1))


def head_metrics(hw: dict) -> dict[str, np.ndarray]:
    """Each metric as an (H,) array; NaN where the parameterization does not define its matrices."""
    H = hw["W_QK"].shape[0]
    nan = np.full(H, np.nan)
    has = lambda *ks: all(k in hw for k in ks)  # noqa: E731
    return {
        "cos_QK": _cos(hw["W_Q"], hw["W_K"]) if has("W_Q", "W_K") else nan,
        "cos_QV": _cos(hw["W_Q"], hw["W_V"]) if has("W_Q", "W_V") else nan,
        "cos_KV": _cos(hw["W_K"], hw["W_V"]) if has("W_K", "W_V") else nan,
        "sym_QK": sym_share(hw["W_QK"]),
        "sym_OV": sym_share(hw["W_OV"]),
        "overlap_QK": subspace_overlap(hw["W_Q"], hw["W_K"]) if has("W_Q", "W_K") else nan,
        "erank_QK": effective_rank(hw["W_QK"]),
        "erank_OV": effective_rank(hw["W_OV"]),
    }


def metrics_frame(layers: list[dict], **labels) -> pd.DataFrame:
    """Tidy rows (layer, head, metric, value) plus any label columns (run_id, attention, ...)."""
    frames = []
    for layer, hw in enumerate(layers):
        values = head_metrics(hw)
        H = len(next(iter(values.values())))
        frames.append(
            pd.DataFrame(
                {
                    "layer": layer,
                    "head": np.tile(np.arange(H), len(values)),
                    "metric": np.repeat(list(values), H),
                    "value": np.concatenate(list(values.values())).astype(float),
                }
            )
        )
    out = pd.concat(frames, ignore_index=True)
    for i, (k, v) in enumerate(labels.items()):
        out.insert(i, k, v)
    return out


def random_heads(
    d_model: int, d_head: int, n_heads: int, rng: np.random.Generator, bilinear: bool = False, dtype=np.float64
) -> dict:
    """Gaussian matrices of the same shapes as a head_weights() layer."""
    g = lambda *s: rng.standard_normal(s, dtype=dtype)  # noqa: E731
    W_Q, W_K, W_V, W_O = (
        g(n_heads, d_model, d_head),
        g(n_heads, d_model, d_head),
        g(n_heads, d_model, d_head),
        g(n_heads, d_head, d_model),
    )
    hw = {"W_Q": W_Q, "W_K": W_K, "W_V": W_V, "W_O": W_O, "W_QK": W_Q @ W_K.transpose(0, 2, 1), "W_OV": W_V @ W_O}
    if bilinear:
        hw["W_QK"] = g(n_heads, d_model, d_model)
    return hw


def random_baseline(d_model: int, d_head: int, n_heads: int = 8, samples: int = 8, seed: int = 0) -> pd.DataFrame:
    """Each metric's mean and std over random matrices of these shapes: what 'no structure' looks like.
    Every metric is per head, so the n_heads x samples heads are drawn one at a time: at D=576 a whole
    (H, D, D) layer and its temporaries held tens of MB in a served app."""
    rng = np.random.default_rng(seed)
    frame = pd.concat(
        [metrics_frame([random_heads(d_model, d_head, 1, rng, dtype=np.float32)]) for _ in range(n_heads * samples)],
        ignore_index=True,
    )
    out = frame.groupby("metric")["value"].agg(["mean", "std"]).reset_index()
    return out.assign(d_model=d_model, d_head=d_head)


def head_match(a: np.ndarray, b: np.ndarray) -> float:
    """Permutation-free similarity of two layers' (H, D, D) matrices.

    For each head of a, the best |cosine| to any head of b; averaged over a's heads.
    """
    fa, fb = a.reshape(a.shape[0], -1), b.reshape(b.shape[0], -1)
    fa = fa / (np.linalg.norm(fa, axis=1, keepdims=True) + 1e-12)
    fb = fb / (np.linalg.norm(fb, axis=1, keepdims=True) + 1e-12)
    return float(np.abs(fa @ fb.T).max(1).mean())


def change_basis(hw: dict, rng: np.random.Generator) -> dict:
    """The same function with a random invertible per-head basis: W_Q A, W_K A^-T, W_V B, B^-1 W_O."""
    H, _, r = hw["W_Q"].shape
    A = rng.standard_normal((H, r, r)) + 2 * np.eye(r)
    B = rng.standard_normal((H, r, r)) + 2 * np.eye(r)
    out = dict(hw)
    out["W_Q"], out["W_K"] = hw["W_Q"] @ A, hw["W_K"] @ np.linalg.inv(A).transpose(0, 2, 1)
    out["W_V"], out["W_O"] = hw["W_V"] @ B, np.linalg.inv(B) @ hw["W_O"]
    out["W_QK"] = out["W_Q"] @ out["W_K"].transpose(0, 2, 1)
    out["W_OV"] = out["W_V"] @ out["W_O"]
    return out


def spectra_frame(layers: list[dict], **labels) -> pd.DataFrame:
    """Singular values of W_QK and W_OV, normalised by the largest: rows (matrix, layer, head, index, value)."""
    frames = []
    for layer, hw in enumerate(layers):
        for matrix in ("W_QK", "W_OV"):
            s = singular_values(hw[matrix])  # (H, D)
            s = s / (s[:, :1] + 1e-12)
            H, D = s.shape
            frames.append(
                pd.DataFrame(
                    {
                        "matrix": matrix,
                        "layer": layer,
                        "head": np.repeat(np.arange(H), D),
                        "index": np.tile(np.arange(1, D + 1), H),
                        "value": s.ravel().astype(float),
                    }
                )
            )
    out = pd.concat(frames, ignore_index=True)
    for i, (k, v) in enumerate(labels.items()):
        out.insert(i, k, v)
    return out


def analyse_run(layers: list[dict], run_id: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One run's final weights, both analyses: metrics_frame rows (run_id, layer, head, metric, value), and the
    spectra as their mean over layers and heads per (run_id, matrix, index): all a page draws, a tenth of the
    rows. The one definition `baselines` stores and a page computes for a run it has no stored rows for."""
    metrics = metrics_frame(layers, run_id=run_id)
    spectra = spectra_frame(layers, run_id=run_id).groupby(["run_id", "matrix", "index"], as_index=False)["value"]
    return metrics, spectra.mean()


def practice(pre: pd.DataFrame, metrics=("sym_QK", "cos_QK")) -> pd.DataFrame:
    """One row per pretrained model: its kind and shapes and the mean over its heads of each metric (finite
    readings only), for the one-line answer beside the In practice page."""
    pre = pre[np.isfinite(pre.value) & pre.metric.isin(metrics)]
    wide = pre.pivot_table(index=["model", "kind", "d_model", "d_head"], columns="metric", values="value")
    return wide.reindex(columns=list(metrics)).reset_index()


def random_head_match(d_model: int, d_head: int, n_heads: int = 4, draws: int = 8, seed: int = 0) -> float:
    """head_match of two independent random layers of these shapes, averaged over `draws` pairs: what a learned
    pair's match is read against."""
    rng = np.random.default_rng(seed)
    return float(
        np.mean(
            [head_match(*(random_heads(d_model, d_head, n_heads, rng)["W_QK"] for _ in range(2))) for _ in range(draws)]
        )
    )
