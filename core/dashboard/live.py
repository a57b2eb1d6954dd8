"""The Parameters page's live computations (parameter counts of built modules, the two folds), each run in a
child process: they need torch, and the server never imports it (~200 MB and 1.5 s that every visitor of every
page would otherwise pay). The page caches the answers, so each distinct question costs one child.
"""

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd

_ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 120  # seconds; a child that takes longer is stopped and the page says so


def _ask(what: str, **kw):
    """Run `what` with these arguments in a fresh interpreter; its JSON answer, or a one-line RuntimeError."""
    cmd = [sys.executable, "-m", "core.dashboard.live", what, json.dumps(kw)]
    try:
        done = subprocess.run(cmd, cwd=_ROOT, capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{what}: took over {TIMEOUT} s") from None
    if done.returncode:
        raise RuntimeError(f"{what}: " + (done.stderr.strip().splitlines() or ["failed"])[-1])
    return json.loads(done.stdout)


def counts(names: list[str], size: dict, rows: list[dict]) -> tuple[pd.DataFrame, list[int]]:
    """In one child: the formula and measured parameter count per component of each parameterization at `size`,
    and core.attention.registry.count_params for each row (attention, d_model, n_heads)."""
    answer = _ask("counts", names=list(names), size=size, rows=rows)
    return pd.DataFrame(answer["breakdown"]), answer["count_params"]


def fold_check(d_model: int, n_heads: int, seed: int) -> dict[str, float]:
    """Max abs output difference of both folds (core.attention.fold.fold_check)."""
    return _ask("fold_check", d_model=d_model, n_heads=n_heads, seed=seed)


# ---- the child's side: torch is imported only here ------------------------------------------------------
def _breakdown(names, size):
    from ..training.config import ModelConfig
    from ..training.model import count_model_params, measured_breakdown

    rows = []
    for name in names:
        cfg = ModelConfig(attention=name, **size)
        formula, measured = count_model_params(cfg), measured_breakdown(cfg)
        rows += [{"attention": name, "component": k, "formula": v, "measured": measured[k]} for k, v in formula.items()]
    return rows


def _count_params(rows):
    from ..attention.registry import count_params

    return [count_params(r["attention"], r["d_model"], r["n_heads"]) for r in rows]


def _fold_check(d_model, n_heads, seed):
    from ..attention.fold import fold_check

    return fold_check(d_model, n_heads, seed=seed)


def _counts(names, size, rows):
    return {"breakdown": _breakdown(names, size), "count_params": _count_params(rows)}


if __name__ == "__main__":
    answer = {"counts": _counts, "fold_check": _fold_check}[sys.argv[1]]
    print(json.dumps(answer(**json.loads(sys.argv[2]))))
