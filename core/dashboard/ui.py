"""Streamlit helpers the pages share: the sidebar's store and selection, URL-synced widgets, CSV downloads,
empty state.

Nothing here trains or imports torch; it reads the sidebar's store through core.dashboard.cached's loaders.
"""

from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import streamlit as st

from ..analysis import findings, scaling
from ..experiments.recipe import FIRST_SWEEP
from ..results.stores import BUNDLED, BUNDLED_NAME, ROOT, inside, stores_root  # noqa: F401 - the pages' names
from . import cached, charts, urls
from .selection import ALL, BEST, LONGEST, size_labels  # noqa: F401 - the pages' and app.py's names for them
from .view import StoreView


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


def view(store=None) -> StoreView:
    """The sidebar's store (or `store`) as the pages read it, under the sidebar's selection (core.dashboard.view)."""
    sel = selection()
    return StoreView.of(sel["store"] if store is None else store, sel)


random_head_match = cached.random_head_match


def unreadable_notice(store) -> None:
    """A caption with the count of run files in the store that could not be read (left out of every page),
    their names in an expander: the server log is not where a visitor looks."""
    bad = view(store).unreadable()
    if bad:
        st.caption(f"{len(bad)} run file(s) in this store cannot be read and are left out.")
        with st.expander("Unreadable run files"):
            st.text("\n".join(bad[:200]))


# ---- the selection the sidebar made --------------------------------------------------------
def selection() -> dict:
    default = {"store": str(BUNDLED), "store_name": BUNDLED_NAME, "tasks": [], "attentions": [], "size": None}
    return st.session_state.get("selection", {**default, "lr": BEST})


def open_scan_cell(axis: str, clicked: dict | None) -> None:
    """A click on a Scaling point (customdata: attention, setting, lr) opens that cell's seeds in Runs."""
    if not clicked or not clicked.get("customdata"):
        return
    attention, setting = clicked["customdata"][:2]
    runs = scaling.best_runs(view().scan_runs(), axis)
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
    v = view()
    problems = cached.weights_problems(v.store, tuple(sorted(runs.run_id)), v.fp)
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
    if view().runs().empty:
        name = sel.get("store_name", BUNDLED_NAME)
        st.info(
            f"No runs in the store `{name}` yet. Fill it with\n\n"
            f"```bash\n{FIRST_SWEEP.replace('--store data', '--store ' + store_arg())}\n```\n"
            "or start a small sweep on the **Train** page."
        )
    else:
        st.info("No runs match the sidebar's selection: pick at least one task and one parameterization.")
    return False


def runs_with_weights(store) -> pd.DataFrame:
    """The selected finished runs, one lr per cell, whose weights load; stops the page, saying why, if none."""
    runs = store.selected_runs(finished=True)
    if not require_runs(runs):
        st.stop()
    runs = with_weights(one_lr(runs))
    if runs.empty:
        st.info("None of the selected runs has its weights in this store.")
        st.stop()
    return runs


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
