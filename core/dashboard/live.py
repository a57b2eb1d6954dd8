"""The Parameters page's live computations: parameter counts of built modules and the two folds."""

import pandas as pd

from ..attention import count_params
from ..attention.fold import fold_check
from ..training.config import ModelConfig
from ..training.model import count_model_params, measured_breakdown


def breakdown(name: str, size: dict) -> pd.DataFrame:
    """Formula and measured parameter count per component of one parameterization at `size`."""
    cfg = ModelConfig(attention=name, **size)
    formula, measured = count_model_params(cfg), measured_breakdown(cfg)
    return pd.DataFrame(
        {
            "attention": name,
            "component": list(formula),
            "formula": list(formula.values()),
            "measured": [measured[k] for k in formula],
        }
    )


__all__ = ["breakdown", "count_params", "fold_check"]
