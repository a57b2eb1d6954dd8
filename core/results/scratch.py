"""A store's scratch folder: what long trainings need to survive and to be extended, never bundled.

    STORE/scratch/checkpoints/<key>.pt    a training in flight (core.training.checkpoint), removed when it ends
    STORE/scratch/lineage/<lineage>.pt    a criterion run's whole result, with the parameters and AdamW state
                                          it stopped at when it reached its cap: a longer cap goes on from it

Plain tensors and Python values, read with torch.load(weights_only=True); every write is atomic. The app
never reads this folder, and `data/scratch/` is git-ignored.
"""

import dataclasses
import os
from pathlib import Path

SCRATCH = "scratch"


def checkpoint_path(store, key: str) -> Path:
    return Path(store) / SCRATCH / "checkpoints" / f"{key}.pt"


def lineage_path(store, lineage: str) -> Path:
    return Path(store) / SCRATCH / "lineage" / f"{lineage}.pt"


def write_lineage(store, lineage: str, cap: int, result) -> None:
    """Keep the run's result under its lineage, unless a longer-capped one is kept there already."""
    import torch

    path = lineage_path(store, lineage)
    old = _read(path)
    if old is not None and old["cap"] >= cap:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    torch.save({"cap": cap, "result": dataclasses.asdict(result)}, tmp)
    os.replace(tmp, path)


def read_lineage(store, lineage: str, cap: int) -> dict | None:
    """{"cap", "result": RunResult} of a run of this lineage that a run capped at `cap` can start from: one
    capped lower, or one that solved or diverged by `cap` (the same run, whatever its cap). Else None."""
    from ..training.recorder import RunResult

    saved = _read(lineage_path(store, lineage))
    if saved is None:
        return None
    result = RunResult(**saved["result"])
    same_run = result.stop in ("solved", "diverged") and result.steps_done <= cap
    if saved["cap"] < cap or same_run:
        return {"cap": saved["cap"], "result": result}
    return None


def _read(path: Path) -> dict | None:
    import torch

    try:
        return torch.load(path, weights_only=True)
    except FileNotFoundError:
        return None
    except Exception:  # torn or foreign: as if absent, so the run trains anew
        return None
