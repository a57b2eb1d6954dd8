"""attention-lab: configs, tasks, the tiny transformer, its training and the results store (README: Layout).

Holds the sub-packages attention, training, results, analysis, experiments, benchmarks and dashboard, each
importing only those before it; on top, cli (`python -m core`: one module per command group, with its flag
types) and report (the generated docs/results.md and docs/reproduce.md).

`import core` loads nothing heavy; `core.load_model` loads torch when called.
"""


def load_model(store, run_id: str):
    """A stored run as its trained Transformer and configs (core.results.models.load_model; loads torch)."""
    from .results.models import load_model as load

    return load(store, run_id)
