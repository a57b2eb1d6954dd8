"""One store as the pages read it: `StoreView`, every cached loader with the store, its fingerprint and the
sidebar's selection filled in (core.dashboard.ui.view() gives the sidebar's)."""

import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from . import cached
from . import selection as _selection


def _ids(run_ids) -> tuple:
    return tuple(sorted(set(run_ids)))


def _no_paths(command: str) -> str:
    return re.sub(r"(?<![^\s=])/\S+", lambda m: Path(m.group(0)).name or "/", command or "")


@dataclass(frozen=True)
class StoreView:
    """The store at one state (fp: cached.fingerprint when made) under one selection (the sidebar's dict).
    Run ids are taken in any order: each loader is cached on the sorted set."""

    store: str
    sel: dict = field(default_factory=dict, hash=False)
    fp: tuple = ()

    @classmethod
    def of(cls, store, sel: dict | None = None) -> "StoreView":
        return cls(str(store), sel or {}, cached.fingerprint(store))

    # ---- the store itself
    def runs(self) -> pd.DataFrame:
        return cached.runs(self.store, self.fp)

    def unreadable(self) -> list[str]:
        return cached.unreadable(self.store, self.fp)

    def provenance(self) -> list[dict]:
        """The commands that made the runs, newest first, each absolute path shortened to its last component:
        a visitor never sees where the server keeps things."""
        return [{**p, "command": _no_paths(p["command"])} for p in cached.provenance(self.store, self.fp)]

    def table(self, kind: str, name: str) -> pd.DataFrame:
        """One named table (e.g. analysis/init), empty when absent."""
        return cached.table(self.store, kind, name, self.fp)

    def named(self, kind: str) -> pd.DataFrame:
        """The bench/ or pretrained/ tables."""
        return cached.named(self.store, kind, self.fp)

    # ---- per run
    def metrics(self, run_ids, names=None) -> pd.DataFrame:
        """Tidy metric rows of these runs: only the metrics named (a page loads what it shows)."""
        return cached.metrics(self.store, _ids(run_ids), None if names is None else tuple(sorted(names)), self.fp)

    def init_rows(self, run_ids, metric: str) -> pd.DataFrame:
        """The step-0 rows (analysis/init) of these runs, for one metric."""
        return cached.init_rows(self.store, _ids(run_ids), metric, self.fp)

    def time_to_solve(self, run_ids) -> pd.Series:
        """curves.time_to_solve of these runs (run_id -> step; absent: never solved)."""
        return cached.solve_steps(self.store, _ids(run_ids), self.fp)

    def matched_baselines(self, run_ids, metric: str) -> pd.DataFrame:
        """curves.matched_baselines of these runs (trained, step 0, fresh initialisations)."""
        return cached.matched_baselines(self.store, tuple(run_ids), metric, self.fp)

    def head_metrics(self, run_ids) -> pd.DataFrame:
        """Similarity metrics (run_id, layer, head, metric, value) of these runs' final weights."""
        return cached.analysed(self.store, _ids(run_ids), self.fp)[0]

    def spectra(self, run_ids) -> pd.DataFrame:
        """σ_i / σ_1 of W_QK and W_OV (run_id, matrix, index, value), the mean over layers and heads per run."""
        return cached.analysed(self.store, _ids(run_ids), self.fp)[1]

    def qk_match(self, a: str, b: str) -> list[float]:
        """Per layer, analysis.head_match of two runs' W_QK (only the numbers are cached)."""
        return cached.qk_match(self.store, a, b, self.fp)

    def patterns(self, run_id: str):
        return cached.patterns(self.store, run_id, self.fp)

    def random_baseline(self, d_model: int, d_head: int) -> pd.DataFrame:
        """Each similarity metric's mean and std over Gaussian matrices of these shapes."""
        return cached.random_baseline(self.store, int(d_model), int(d_head))

    # ---- under the selection
    def selected_runs(self, finished: bool = False, lr: str | None = None, steps: str | None = None) -> pd.DataFrame:
        """Runs of the selection's tasks, parameterizations, model size, training length and lr (finished:
        status ok only; `lr` and `steps` override the selection's): core.dashboard.selection.selected."""
        sel = self.sel if steps is None else {**self.sel, "steps": steps}
        return cached.selected(self.store, self.fp, _selection.key(sel), finished, lr)

    def comparisons(self, best: bool = True) -> pd.DataFrame:
        """findings.compare_to of the selected runs against standard."""
        return cached.comparisons(self.store, self.fp, _selection.key(self.sel), best)

    def endpoint_table(self) -> pd.DataFrame:
        """endpoints.endpoints of the selected criterion runs (both endpoints against standard)."""
        return cached.endpoint_table(self.store, self.fp, _selection.key(self.sel))

    def layer_control(self) -> pd.DataFrame:
        """endpoints.layer_control: induction to the criterion, two layers and one."""
        return cached.layer_control(self.store, self.fp)

    def scan_runs(self) -> pd.DataFrame:
        """The runs of the selection's parameterizations and precision at every model and task size (the Scaling
        page's axes span them); a fixed lr keeps that lr, else each cell picks its best."""
        return cached.scanned(self.store, self.fp, _selection.scan_key(self.sel))

    def scan_tables(self) -> dict[str, pd.DataFrame]:
        """scaling.outcomes of scan_runs() on every axis they span (axes.axes_present, in its order)."""
        return cached.scan_tables(self.store, self.fp, _selection.scan_key(self.sel))

    def scan_thresholds(self, order: list[str]) -> dict[str, pd.DataFrame]:
        """scaling.thresholds of each of scan_tables(), in `order` (its first: the reference)."""
        return cached.scan_thresholds(self.store, self.fp, _selection.scan_key(self.sel), tuple(order))

    def scan_words(self, names: list[str]) -> dict[str, tuple[list[str], str]]:
        """Per axis of scan_tables(): scaling.sentences of standard and `names`, and scaling.brief of `names`."""
        return cached.scan_words(self.store, self.fp, _selection.scan_key(self.sel), tuple(names))
