"""Streamlit helpers the pages share: the sidebar's store and selection, URL-synced widgets, CSV downloads,
empty state.

Nothing here trains or imports torch; it reads the sidebar's store through core.dashboard.cached's loaders.
"""

import re
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import streamlit as st

from ..analysis import findings, scaling
from ..experiments.recipe import BUNDLED_SWEEP
from ..results.stores import BUNDLED, BUNDLED_NAME, ROOT, inside, stores_root  # noqa: F401 - the pages' names
from . import cached, charts, urls
from . import selection as _selection
from .selection import ALL, BEST, LONGEST, size_labels  # noqa: F401 - the pages' and app.py's names for them


def release_freed_memory() -> None:
    """Hand the heap pages freed by this run back to the OS (glibc's malloc_trim). Each script run allocates
    and frees tens of MB (pickled cache entries, frames, figure JSON) in its own thread's malloc arena, which
    glibc keeps by default: a server that opened every page once would hold all of them at once."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: nothing to hand back this way
        pass


# ---- the store, cached (core.dashboard.cached), for the sidebar's store ---------------------------------
chance_levels = cached.chance_levels


def random_baseline(d_model: int, d_head: int) -> pd.DataFrame:
    """Each similarity metric's mean and std over Gaussian matrices of these shapes (core.analysis.similarity)."""
    return cached.random_baseline(selection()["store"], int(d_model), int(d_head))


random_head_match = cached.random_head_match


def _here() -> tuple[str, tuple]:
    store = selection()["store"]
    return store, cached.fingerprint(store)


def runs(store) -> pd.DataFrame:
    return cached.runs(str(store), cached.fingerprint(store))


def unreadable_notice(store) -> None:
    """A caption with the count of run files in the store that could not be read (left out of every page),
    their names in an expander: the server log is not where a visitor looks."""
    bad = cached.unreadable(str(store), cached.fingerprint(store))
    if bad:
        st.caption(f"{len(bad)} run file(s) in this store cannot be read and are left out.")
        with st.expander("Unreadable run files"):
            st.text("\n".join(bad[:200]))


def provenance(store) -> list[dict]:
    """The commands that made a store's runs, newest first (read once per change of the store), each absolute
    path in a command shortened to its last component: a visitor never sees where the server keeps things."""
    return [{**p, "command": _no_paths(p["command"])} for p in cached.provenance(str(store), cached.fingerprint(store))]


def _no_paths(command: str) -> str:
    return re.sub(r"(?<![^\s=])/\S+", lambda m: Path(m.group(0)).name or "/", command or "")


def table(kind: str, name: str) -> pd.DataFrame:
    """One named table of the sidebar's store (e.g. analysis/init), empty when absent."""
    store, fp = _here()
    return cached.table(store, kind, name, fp)


def init_rows(run_ids, metric: str) -> pd.DataFrame:
    """The step-0 metric rows (analysis/init) of these runs in the sidebar's store, for one metric."""
    store, fp = _here()
    return cached.init_rows(store, tuple(sorted(run_ids)), metric, fp)


def named(kind: str) -> pd.DataFrame:
    """The sidebar store's bench/ or pretrained/ tables."""
    store, fp = _here()
    return cached.named(store, kind, fp)


def metrics(run_ids, names=None) -> pd.DataFrame:
    """Tidy metric rows of these runs in the sidebar's store: only the metrics named (a page loads what it shows)."""
    store, fp = _here()
    return cached.metrics(store, tuple(sorted(run_ids)), None if names is None else tuple(sorted(names)), fp)


def time_to_solve(run_ids) -> pd.Series:
    """findings.time_to_solve of these runs in the sidebar's store (run_id -> step; absent: never solved)."""
    store, fp = _here()
    return cached.solve_steps(store, tuple(sorted(set(run_ids))), fp)


def comparisons(best: bool = True) -> pd.DataFrame:
    """findings.compare_to of the sidebar's selected runs against standard, cached by store state and selection."""
    store, fp = _here()
    return cached.comparisons(store, fp, _selection.key(selection()), best)


def endpoint_table() -> pd.DataFrame:
    """endpoints.endpoints of the sidebar's criterion runs (both endpoints against standard), cached."""
    store, fp = _here()
    return cached.endpoint_table(store, fp, _selection.key(selection()))


def layer_control() -> pd.DataFrame:
    """endpoints.layer_control of the sidebar's store: induction to the criterion, two layers and one."""
    store, fp = _here()
    return cached.layer_control(store, fp)


def matched_baselines(run_ids, metric: str) -> pd.DataFrame:
    """findings.matched_baselines of these runs of the sidebar's store (trained, step 0, fresh initialisations)."""
    store, fp = _here()
    return cached.matched_baselines(store, tuple(run_ids), metric, fp)


def head_metrics(run_ids) -> pd.DataFrame:
    """Similarity metrics (run_id, layer, head, metric, value) of these runs' final weights."""
    store, fp = _here()
    return cached.analysed(store, tuple(sorted(run_ids)), fp)[0]


def spectra(run_ids) -> pd.DataFrame:
    """σ_i / σ_1 of W_QK and W_OV (run_id, matrix, index, value), the mean over layers and heads of each run."""
    store, fp = _here()
    return cached.analysed(store, tuple(sorted(run_ids)), fp)[1]


def qk_match(a: str, b: str) -> list[float]:
    """Per layer, analysis.head_match of two runs' W_QK (the weights are read, compared and let go: only the
    numbers are cached)."""
    store, fp = _here()
    return cached.qk_match(store, a, b, fp)


def patterns(run_id: str):
    store, fp = _here()
    return cached.patterns(store, run_id, fp)


# ---- the selection the sidebar made --------------------------------------------------------
def selection() -> dict:
    default = {"store": str(BUNDLED), "store_name": BUNDLED_NAME, "tasks": [], "attentions": [], "size": None}
    return st.session_state.get("selection", {**default, "lr": BEST})


def selected_runs(finished: bool = False, lr: str | None = None, steps: str | None = None) -> pd.DataFrame:
    """Runs of the sidebar's store, tasks, parameterizations, model size, training length and learning rate
    (finished: status ok only; `lr` and `steps` override the sidebar's): core.dashboard.selection.selected,
    cached."""
    store, fp = _here()
    sel = selection() if steps is None else {**selection(), "steps": steps}
    return cached.selected(store, fp, _selection.key(sel), finished, lr)


def scan_runs() -> pd.DataFrame:
    """The store's runs of the sidebar's parameterizations and precision, every model and task size (the
    Scaling page's axes span them); a fixed lr in the sidebar keeps that lr, else each cell picks its best."""
    store, fp = _here()
    return cached.scanned(store, fp, _selection.scan_key(selection()))


def scan_tables() -> dict[str, pd.DataFrame]:
    """scaling.outcomes of scan_runs() on every axis they span (scaling.axes_present, in its order)."""
    store, fp = _here()
    return cached.scan_tables(store, fp, _selection.scan_key(selection()))


def scan_thresholds(order: list[str]) -> dict[str, pd.DataFrame]:
    """scaling.thresholds of each of scan_tables(), in `order` (its first: the reference)."""
    store, fp = _here()
    return cached.scan_thresholds(store, fp, _selection.scan_key(selection()), tuple(order))


def scan_words(names: list[str]) -> dict[str, tuple[list[str], str]]:
    """Per axis of scan_tables(): scaling.sentences of standard and `names`, and scaling.brief of `names`."""
    store, fp = _here()
    return cached.scan_words(store, fp, _selection.scan_key(selection()), tuple(names))


def open_scan_cell(axis: str, clicked: dict | None) -> None:
    """A click on a Scaling point (customdata: attention, setting, lr) opens that cell's seeds in Runs."""
    if not clicked or not clicked.get("customdata"):
        return
    attention, setting = clicked["customdata"][:2]
    runs = findings.at_best_lr(findings.at_longest(scaling.axis_runs(scan_runs(), axis)))
    cell = runs[(runs.attention == attention) & (runs.x == setting)]
    if not cell.empty:
        urls.open_page(*urls.cell_runs(cell, size_labels(cell).iloc[0]))


def open_lr_point(clicked: dict | None) -> None:
    """A click on a Learning-rate point or star (customdata: attention, task, lr) opens its curves."""
    if clicked and clicked.get("customdata"):
        urls.open_page(*urls.lr_curves(*clicked["customdata"][:3]))


def with_weights(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs whose weights load whole. Runs without a weights file (a pruned store keeps only the best-lr
    runs' weights) get a caption with their count, the files in an expander; files that are there but cannot
    be used get a warning naming each (relative to the store) and why."""
    if runs.empty:
        return runs
    store, fp = _here()
    problems = cached.weights_problems(store, tuple(sorted(runs.run_id)), fp)
    missing = [rid for rid, why in problems.items() if why == "missing"]
    broken = {rid: why for rid, why in problems.items() if why != "missing"}
    if missing:
        st.caption(
            f"{len(missing)} of {len(runs)} selected runs keep no weights and are left out: "
            "`python -m core prune` keeps them only for each cell's best-lr runs at its task's longest "
            "training (`--max-seeds N`: their lowest N seeds)."
        )
        with st.expander(f"The {len(missing)} runs without weights"):
            st.text("\n".join(f"weights/{rid}.safetensors" for rid in missing))
    if broken:
        names = "; ".join(f"weights/{rid}.safetensors ({why})" for rid, why in list(broken.items())[:5])
        st.warning(
            f"Skipping {len(broken)} run(s) whose weights file cannot be used: {names}"
            + (" …" if len(broken) > 5 else "")
        )
    return runs[~runs.run_id.isin(list(problems))]


def one_lr(runs: pd.DataFrame) -> pd.DataFrame:
    """Pages that draw one line or bar per parameterization show one lr per cell: under `all`, the best."""
    if runs.empty or runs.groupby(["task", "attention"]).lr.nunique().max() <= 1:
        return runs
    st.info(
        "This page shows one learning rate per parameterization: each at its best (chosen on validation). "
        "Every lr is on the **Learning rate** page."
    )
    return findings.at_best_lr(runs)


# ---- output helpers ----------------------------------------------------------------------------
def download(df: pd.DataFrame, name: str, label: str = "Download CSV") -> None:
    """A CSV of exactly the data shown, written when the button is clicked (not on every draw of the page)."""
    st.download_button(
        label, csv_of(df), file_name=f"{name}.csv", mime="text/csv", key=f"csv-{name}", on_click="ignore"
    )


def csv_of(df: pd.DataFrame):
    """The download's deferred content: a callable giving the CSV bytes of df as it is now."""
    df = df.copy()
    return lambda: df.to_csv(index=False).encode()


def chart(fig, data: pd.DataFrame, name: str) -> dict | None:
    """The figure (its camera button saves a 2x PNG named for the chart, for slides) and a CSV of its data;
    returns the point a visitor clicked (charts.draw), in the run that click started."""
    config = {
        "toImageButtonOptions": {"format": "png", "filename": name, "scale": 2},
        "displaylogo": False,
        "showSendToCloud": False,  # plotly.js 4 offers to upload the data to Plotly Cloud unless told not to
    }
    clicked = charts.draw(fig, name, config)  # tidied as built (plots.style.built_once)
    download(data, name)
    return clicked


def store_arg() -> str:
    """The sidebar's store as a command's --store argument, relative to the checkout: never a server path."""
    name = selection().get("store_name", BUNDLED_NAME)
    return BUNDLED_NAME if name == BUNDLED_NAME else f"stores/{name}"


def require_runs(df: pd.DataFrame) -> bool:
    """Show the empty state (never a traceback) when there is nothing to plot."""
    if not df.empty:
        return True
    sel = selection()
    if runs(sel["store"]).empty:
        name = sel.get("store_name", BUNDLED_NAME)
        st.info(
            f"No runs in the store `{name}` yet. Fill it with\n\n"
            f"```bash\n{BUNDLED_SWEEP.replace('--store data', '--store ' + store_arg())}\n```\n"
            "or start a small sweep on the **Train** page."
        )
    else:
        st.info("No runs match the sidebar's selection: pick at least one task and one parameterization.")
    return False


def fmt_mean_std(mean: pd.Series, std: pd.Series, digits: int = 3, spec: str = "f") -> pd.Series:
    """'0.998 ± 0.001'; spec "g" keeps small numbers visible ('1.5e-05 ± 3e-06', never '0.0000 ± 0.0000');
    '–' where the mean is missing (no finished seed)."""
    std = std.fillna(0.0)
    return pd.Series(
        [f"{m:.{digits}{spec}} ± {s:.{digits}{spec}}" if m == m else "–" for m, s in zip(mean, std)],
        index=mean.index,
    )


def require_router() -> None:
    """Make sure app.py's router and sidebar run, even when a page is the first URL a fresh server sees.

    With a pages/ folder beside the entrypoint, Streamlit starts in its legacy pages/ mode and serves a
    page URL by running the page file alone until st.navigation has been called once
    (streamlit/streamlit#10276). A page that finds itself there switches the process to st.navigation
    and reruns: app.py then routes to this same page, with the shared sidebar.
    """
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()


@contextmanager
def unreadable_as_caption():
    """A store file the server may not read (permissions, a vanished disk) ends the page with one named warning,
    never a traceback; the file is named from its store's name on, so no server path is echoed."""
    try:
        yield
    except OSError as err:
        name = Path(err.filename or "").name
        for top in (stores_root(), BUNDLED.parent):
            if err.filename and inside(Path(err.filename), top):
                name = str(Path(err.filename).resolve().relative_to(top.resolve()))
                break
        st.warning(
            f"This store cannot be read here ({err.strerror or type(err).__name__}"
            f"{': ' + name if name else ''}); the page stops at that point."
        )
