"""Reload a trained run as a model: `core.load_model(store, run_id)`."""

import torch
from safetensors.torch import load_file

from ..training.config import ModelConfig, TaskConfig, TrainConfig
from ..training.model import Transformer
from .packs import run_meta
from .runfile import model_path


def load_model(store, run_id: str) -> tuple[Transformer, dict]:
    """The run's trained Transformer (eval mode, on the CPU) and its configs {"model", "task", "train"} as the
    frozen dataclasses. ValueError naming the file when the run keeps no model (a pruned run, or one stored
    before models were kept)."""
    path = model_path(store, run_id)
    if not path.is_file():
        raise ValueError(f"run_id: {run_id!r} keeps no model (no models/{path.name}; prune drops them)")
    meta = run_meta(store, run_id)
    configs = {
        "model": ModelConfig.from_dict(meta["model"]),
        "task": TaskConfig.from_dict(meta["task"]),
        "train": TrainConfig.from_dict(meta["train"]),
    }
    model = Transformer(configs["model"])
    model.load_state_dict(load_file(str(path)))
    return model.eval().to(torch.device("cpu")), configs
