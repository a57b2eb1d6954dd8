"""A training's checkpoint: its whole state, saved atomically every few minutes, so a job killed at any
moment goes on from its last save and ends bit-identical to an uninterrupted one.

Saved at evaluation steps only, where the per-step accumulators are empty: the state is then the members'
parameters and AdamW state, the data generators, the recorder and the clock. Plain tensors and Python
values, read back to the CPU with torch.load(weights_only=True), so a job resumes on any device. The file
lives in the store's scratch folder (core.results.stores: never bundled) and is removed when the training ends.
"""

import os
import time
from pathlib import Path

import torch

# At most this much training is lost to a kill; a save takes well under a second. The environment variable
# sets it for every worker of a sweep (the kill tests save at every evaluation with 0).
EVERY_SECONDS, EVERY_ENV = 300.0, "ATTENTION_LAB_CHECKPOINT_SECONDS"


class Checkpointer:
    def __init__(self, path: Path | str, every_seconds: float | None = None):
        every = float(os.environ.get(EVERY_ENV, EVERY_SECONDS)) if every_seconds is None else every_seconds
        self.path, self.every = Path(path), every
        self._last = time.monotonic()
        self._read: dict | None = None  # what members() read, until load() takes it

    def due(self) -> bool:
        return time.monotonic() - self._last >= self.every

    def save(self, state: dict) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        torch.save(state, tmp)
        os.replace(tmp, self.path)  # a kill mid-save leaves the previous checkpoint whole
        self._last, self._read = time.monotonic(), None

    def members(self) -> list | None:
        """The (lr, seed) members the saved training trains, or None. The state read is kept for load()."""
        self._read = self._read or self._from_disk()
        return self._read.get("members") if self._read else None

    def load(self) -> dict | None:
        """The saved state, or None if there is none or it cannot be read (then the training starts over).
        Read once: what members() read is handed over, not kept (it is tens of MB)."""
        saved, self._read = self._read or self._from_disk(), None
        return saved

    def _from_disk(self) -> dict | None:
        try:
            # read to the CPU: the training moves each tensor to its device, so a GPU job resumes on a CPU
            return torch.load(self.path, weights_only=True, map_location="cpu")
        except FileNotFoundError:
            return None
        except Exception:  # a torn or foreign file: start over rather than fail the job
            return None

    def clear(self) -> None:
        self._read = None
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass
