"""The Overview's verdict matrix as data: one cell per parameterization and column (a task, or a scan axis),
each with its verdict against standard, its short text and its hover. The page draws them (core.dashboard.plots.
matrix); the statistics come from findings, endpoints and scaling, the words from words."""

import numpy as np
import pandas as pd

from . import endpoint_words, endpoints, findings, stats, words
from .axes import AXES


def scan_column(axis: str) -> str:
    return f"scan: {AXES[axis].title}"


def _task_cell(r) -> dict:
    """A fixed-budget task: the test-loss ratio to standard, or the solved counts where a side has unsolved seeds."""
    ratio_shown = np.isfinite([r.ratio, r.ratio_lo, r.ratio_hi]).all()
    return {
        "attention": r.attention,
        "column": r.task,
        "verdict": r.verdict,
        "text": f"{r.solved}/{r.n}"
        if r.solved < r.n or r.ref_solved < r.ref_n or not np.isfinite(r.ratio)  # one seed: no ratio to show
        else f"×{r.ratio:.2g}",
        "hover": (
            f"{r.attention} vs standard on {r.task}: {r.verdict}<br>solved {r.solved}/{r.n} vs "
            f"{r.ref_solved}/{r.ref_n} (Fisher p {stats.p_text(r.fisher_p)})<br>"
            + (
                f"test loss ×{r.ratio:.3g} [{r.ratio_lo:.3g}, {r.ratio_hi:.3g}], Holm p {stats.p_text(r.p_holm)}"
                if ratio_shown
                else "test loss: too few seeds for a ratio with an interval"
            )
            + f"<br>lr {r.lr:g} vs {r.ref_lr:g}"
        ),
    }


def _endpoint_cell(r) -> dict:
    """A task trained to the criterion: its two endpoints against standard's."""
    return {
        "attention": r.attention,
        "column": r.task,
        "verdict": endpoints.matrix_verdict(r),
        "text": endpoint_words.cell(r),
        "hover": endpoint_words.hover(r),
    }


def _scan_cell(axis: str, r, reference) -> dict:
    """A scan axis: the hardest setting solved by ROBUST of the seeds, against standard's (`reference`'s row)."""
    spec = AXES[axis]
    test = (
        f"Fisher at the parting setting, Holm p {stats.p_text(r.p_holm)}"
        if r.p_holm == r.p_holm
        else "no test: the same threshold"
    )
    return {
        "attention": r.attention,
        "column": scan_column(axis),
        "verdict": r.verdict,
        "text": words.threshold_cell(axis, r),
        "hover": f"{r.attention}: solves ≥ {findings.ROBUST:.0%} of seeds at "
        f"{words.threshold_text(axis, r.threshold, r.open)} "
        f"(standard: {words.threshold_text(axis, reference.threshold)}); {r.vs_reference}; {test}"
        + (f"<br>* not at the easier {spec.var} {r.lapses}" * bool(r.lapses)),
    }


def matrix_cells(cmp: pd.DataFrame, ends: pd.DataFrame, thresholds: dict) -> pd.DataFrame:
    """Every cell: fixed-budget task comparisons (`cmp`, findings.compare_to), criterion endpoints (`ends`,
    endpoints with a standard to compare with) and scan thresholds ({axis: scaling.thresholds, standard first})."""
    cells = [_task_cell(r) for r in cmp.itertuples()] if not cmp.empty else []
    cells += [_endpoint_cell(r) for r in ends.itertuples()] if not ends.empty else []
    for axis, th in thresholds.items():
        cells += [_scan_cell(axis, r, th.iloc[0]) for r in th.iloc[1:].itertuples()]
    return pd.DataFrame(cells, columns=["attention", "column", "verdict", "text", "hover"])
