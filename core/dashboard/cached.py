"""The store as the pages read it: Streamlit-cached loaders keyed by (store, what, fingerprint(store)).

core.dashboard.ui wraps these with the sidebar's store; nothing here knows about widgets or the session.
"""

import os
import threading
import time
from pathlib import Path

import pandas as pd
import streamlit as st

from ..analysis import axes, curves, findings, scaling, similarity, words
from ..results import index, packs, weights
from ..results import store as st_store
from ..results.stores import BUNDLED
from . import selection

_SETTLE_NS = 1_000_000_000  # far longer than a filesystem timestamp's tick
# Each loader keeps at most this many entries: every write gives a store a new key, so a server beside a
# running sweep would otherwise keep every state it ever showed.
MAX_ENTRIES = 16


def fingerprint(store) -> tuple:
    """Changes whenever a run, pack, bench, pretrained or analysis file is added, replaced or removed: the cache key.
    Every write renames a file into its folder, which sets the folder's mtime, so five stats cover any
    store size (globbing 10,000 runs on every call would not). A timestamp is coarse (a kernel tick), so
    a burst of writes, an ensemble's runs, can leave one mtime on several states: while a folder was
    written within the last second the key also carries the second, so a read taken mid-burst is cached
    for at most a second, and the key after the burst has settled is new."""
    out = []
    for sub in ("runs", "packs", "bench", "pretrained", "analysis"):
        try:
            out.append((Path(store) / sub).stat().st_mtime_ns)
        except OSError:
            out.append(0)
    now = time.time_ns()
    if any(now - m < _SETTLE_NS for m in out):
        out.append(now // _SETTLE_NS)
    return tuple(out)


@st.cache_data(max_entries=MAX_ENTRIES, show_spinner=False)
def runs(store: str, fp: tuple) -> pd.DataFrame:
    return st_store.load_runs(store)


@st.cache_data(max_entries=MAX_ENTRIES, show_spinner=False)
def provenance(store: str, fp: tuple) -> list[dict]:
    return st_store.provenance_of(store, runs(store, fp))


@st.cache_data(max_entries=MAX_ENTRIES, show_spinner=False)
def metrics(store: str, run_ids: tuple, names: tuple | None, fp: tuple) -> pd.DataFrame:
    return st_store.load_metrics(store, run_ids, names)


@st.cache_data(max_entries=MAX_ENTRIES, show_spinner=False)
def solve_steps(store: str, run_ids: tuple, fp: tuple) -> pd.Series:
    """curves.time_to_solve of these runs (run_id -> step; absent: never solved): the rows `python -m core
    baselines` stored (analysis/solve_steps.parquet), and from its validation curve any run missing there."""
    stored = table(store, "analysis", "solve_steps", fp)
    if stored.empty:
        stored = pd.DataFrame({"run_id": [], "solve_step": []})
    stored = stored[stored.run_id.isin(set(run_ids))]
    steps = stored.set_index("run_id").solve_step.dropna()
    rest = tuple(sorted(set(run_ids) - set(stored.run_id)))
    if rest:
        live = curves.time_to_solve(metrics(store, rest, ("val_acc",), fp)).astype(float)
        steps = pd.concat([steps, live]) if len(steps) else live
    return steps


def _heavy_limit() -> int:
    value = os.environ.get(HEAVY_ENV, "")
    return int(value) if value.isdigit() and int(value) > 0 else 2


# At most this many weight analyses run at once on the server, whatever the number of visitors: each holds a
# run's matrices and their SVDs, so many sessions at once would otherwise stack them all in memory.
HEAVY_ENV = "ATTENTION_LAB_HEAVY_RENDERS"
HEAVY = threading.BoundedSemaphore(_heavy_limit())
RUN_ENTRIES = 4096  # per-run analyses kept (a few KB each): sessions asking overlapping subsets share them


@st.cache_data(max_entries=RUN_ENTRIES, show_spinner=False)
def analysed_run(store: str, run_id: str, fp: tuple) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Both analyses of one run's final weights, the file read once. Spectra are kept as the mean over layers
    and heads per (matrix, index), which is all a page draws: a tenth of the rows."""
    with HEAVY:
        head_metrics, spectra = similarity.analyse_run(weights.load_head_weights(store, run_id), run_id)
    return _compact(head_metrics), _compact(spectra)


def stored_analyses(store: str, fp: tuple) -> tuple[pd.DataFrame, pd.DataFrame]:
    """analyse_run of every run with weights, as `python -m core baselines` stored it (analysis/trained*.parquet);
    empty frames where it has not run."""
    return tuple(_compact(table(store, "analysis", name, fp)) for name in ("trained", "trained_spectra"))


def analysed(store: str, run_ids: tuple, fp: tuple) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Both analyses of these runs: the stored rows of each run `baselines` analysed, analysed_run of any other
    (a run trained since), concatenated. A visitor's subset reuses every run another visitor analysed."""
    metrics, spectra = stored_analyses(store, fp)
    done = set(metrics.get("run_id", ())) & set(spectra.get("run_id", ()))
    wanted = set(run_ids)
    parts = [(metrics[metrics.run_id.isin(wanted)], spectra[spectra.run_id.isin(wanted)])] if done else []
    with st.spinner("Computing similarity metrics and singular values…"):
        parts += [analysed_run(store, rid, fp) for rid in run_ids if rid not in done]
    parts = [p for p in parts if not p[0].empty]
    if not parts:
        return pd.DataFrame(), pd.DataFrame()
    return tuple(_compact(pd.concat([p[i].astype({"run_id": str}) for p in parts], ignore_index=True)) for i in (0, 1))


def _compact(df: pd.DataFrame) -> pd.DataFrame:
    """Repeated strings as categories: the cache pickles and unpickles these frames on every call."""
    return df.astype({c: "category" for c in ("run_id", "metric", "matrix") if c in df})


@st.cache_data(max_entries=MAX_ENTRIES, show_spinner=False)
def named(store: str, kind: str, fp: tuple) -> pd.DataFrame:
    return st_store.load_named(store, kind)


@st.cache_data(max_entries=MAX_ENTRIES, show_spinner=False)
def unreadable(store: str, fp: tuple) -> list[str]:
    """runs/<id>.parquet names (relative to the store; a packed run's: its id in packs/) of the runs that load_runs
    left out, with the reason."""
    missing = sorted(index.run_names(store) - set(runs(store, fp).get("run_id", [])))
    packed = set(packs.packed(store))
    name = {
        rid: f"{rid} in packs/"
        if rid in packed and not st_store.run_path(store, rid).exists()
        else f"runs/{rid}.parquet"
        for rid in missing
    }
    return [f"{name[rid]}: {st_store.run_problem(store, rid) or 'changed while read'}" for rid in missing]


@st.cache_data(max_entries=MAX_ENTRIES, show_spinner=False)
def table(store: str, kind: str, name: str, fp: tuple) -> pd.DataFrame:
    return st_store.load_table(store, kind, name)


@st.cache_data(max_entries=4 * MAX_ENTRIES, show_spinner=False)  # small: one metric of one selection
def init_rows(store: str, run_ids: tuple, metric: str, fp: tuple) -> pd.DataFrame:
    """analysis/init rows of these runs and this metric only: the whole table holds a row per run, layer, head and
    metric of the store, too large to keep or copy per visitor."""
    return st_store.load_table(store, "analysis", "init", [("run_id", "in", list(run_ids)), ("metric", "==", metric)])


@st.cache_data(max_entries=4 * MAX_ENTRIES, show_spinner=False)  # a row per (task, attention)
def matched_baselines(store: str, run_ids: tuple, metric: str, fp: tuple) -> pd.DataFrame:
    """curves.matched_baselines of these runs (in this order) for one metric: the same for every visitor of a
    view, and a tenth of Similarity's run to compute."""
    ids = tuple(sorted(run_ids))
    rows = runs(store, fp).set_index("run_id").loc[list(run_ids)].reset_index()
    trained, init = analysed(store, ids, fp)[0], init_rows(store, ids, metric, fp)
    return curves.matched_baselines(trained, init, table(store, "analysis", "random", fp), rows, metric)


@st.cache_data(max_entries=32 * MAX_ENTRIES, show_spinner=False)  # a few floats each; Similarity asks ~100 pairs
def qk_match(store: str, a: str, b: str, fp: tuple) -> list[float]:
    wa, wb = weights.load_head_weights(store, a), weights.load_head_weights(store, b)
    return [similarity.head_match(la["W_QK"], lb["W_QK"]) for la, lb in zip(wa, wb)]


@st.cache_data(max_entries=4 * MAX_ENTRIES, show_spinner=False)  # one run each; Attention maps asks one per attention
def patterns(store: str, run_id: str, fp: tuple):
    return weights.load_patterns(store, run_id)


@st.cache_data(max_entries=MAX_ENTRIES, show_spinner=False)
def weights_problems(store: str, run_ids: tuple, fp: tuple) -> dict[str, str]:
    """{run_id: why its weights cannot be used ("missing", or the reason)} for the runs that have a problem."""
    found = {rid: weights.weights_problem(store, rid) for rid in run_ids}
    return {rid: why for rid, why in found.items() if why}


@st.cache_data(show_spinner=False)
def chance_levels() -> dict[str, dict[str, float]]:
    """{task: {guesser: accuracy}} at each task's default size, as `python -m core baselines` wrote them into the
    bundled store (computed there by core.training.tasks.chance_levels, so no page loads torch); {} if absent."""
    table = st_store.load_table(BUNDLED, "analysis", "chance")
    if table.empty:
        return {}
    return {task: dict(zip(g.guesser, g.accuracy.astype(float))) for task, g in table.groupby("task", sort=False)}


@st.cache_data(max_entries=MAX_ENTRIES, show_spinner=False)
def random_head_match(d_model: int, d_head: int) -> float:
    """similarity.random_head_match at these shapes, computed once per server, not on every rerun."""
    return similarity.random_head_match(d_model, d_head)


@st.cache_data(max_entries=MAX_ENTRIES, show_spinner=False)
def random_baseline(store: str, d_model: int, d_head: int) -> pd.DataFrame:
    """similarity.random_baseline at these shapes: as `baselines` stored it in this store or the bundled one,
    else computed here (tens of seconds at D=576)."""
    for where in dict.fromkeys([store, str(BUNDLED)]):
        table = st_store.load_table(where, "analysis", "random_shapes")
        if not table.empty:
            hit = table[(table.d_model == d_model) & (table.d_head == d_head)]
            if not hit.empty:
                return hit.reset_index(drop=True)
    return similarity.random_baseline(d_model, d_head)


# The statistics a page shows, per (store, fingerprint, selection): every visitor after the first who opens the
# same view (a review meeting's shared link) reads them, without hashing the runs table to find them.
def _family(store: str, fp: tuple, wanted: dict) -> tuple[dict, pd.DataFrame]:
    """The store's whole family at the sidebar's size, training and precision (every task and parameterization
    it holds, whatever the sidebar picks), and its runs: what a correction is made over."""
    everything = runs(store, fp)
    family = {
        **wanted,
        "tasks": list(everything.get("task", pd.Series()).unique()),
        "attentions": list(everything.get("attention", pd.Series()).unique()),
    }
    return family, selection.selected(everything, family, False, None)


@st.cache_data(max_entries=MAX_ENTRIES, show_spinner=False)
def comparisons(store: str, fp: tuple, sel: tuple, best: bool) -> pd.DataFrame:
    """findings.compare_to over the store's whole family (every task and parameterization at the sidebar's size,
    training and precision), then the rows of the sidebar's tasks and parameterizations: picking fewer in the
    sidebar shows fewer comparisons, never different corrections (words.FAMILY)."""
    wanted = dict(sel)
    family, chosen = _family(store, fp, wanted)
    table = findings.compare_to(findings.fixed_budget(chosen), best=best)  # criterion cells: endpoint_table
    if table.empty:
        return table
    return table[table.task.isin(wanted["tasks"]) & table.attention.isin(wanted["attentions"])].reset_index(drop=True)


@st.cache_data(max_entries=MAX_ENTRIES, show_spinner=False)
def endpoint_table(store: str, fp: tuple, sel: tuple) -> pd.DataFrame:
    """endpoints.endpoints of the runs trained to the criterion, over the store's whole family at the sidebar's
    size (Holm over that table), then the sidebar's tasks and parameterizations, as comparisons does."""
    from ..analysis import endpoints

    wanted = dict(sel)
    family, chosen = _family(store, fp, wanted)
    table = endpoints.endpoints(chosen, family["attentions"], family["tasks"])
    if table.empty:
        return table
    return table[table.task.isin(wanted["tasks"]) & table.attention.isin(wanted["attentions"])].reset_index(drop=True)


@st.cache_data(max_entries=MAX_ENTRIES, show_spinner=False)
def layer_control(store: str, fp: tuple) -> pd.DataFrame:
    """endpoints.layer_control of the store's runs: induction solved with two layers and with one, to the criterion;
    independent of the sidebar, like the family of comparisons it stands beside."""
    from ..analysis import endpoints

    return endpoints.layer_control(runs(store, fp))


# The sidebar's selection applied to a store, keyed by (store, fingerprint, selection.key): the runs table is
# neither filtered again nor hashed (both grow with the store) to find a result another visitor computed.
@st.cache_data(max_entries=2 * MAX_ENTRIES, show_spinner=False)  # under 1 MB each: a slice of the runs table
def selected(store: str, fp: tuple, sel: tuple, finished: bool, lr: str | None) -> pd.DataFrame:
    return selection.selected(runs(store, fp), dict(sel), finished, lr)


@st.cache_data(max_entries=MAX_ENTRIES, show_spinner=False)
def scanned(store: str, fp: tuple, sel: tuple) -> pd.DataFrame:
    return selection.scanned(runs(store, fp), dict(sel))


@st.cache_data(max_entries=MAX_ENTRIES, show_spinner=False)
def scan_tables(store: str, fp: tuple, sel: tuple) -> dict[str, pd.DataFrame]:
    """scaling.outcomes on every axis the scanned runs span (axes.axes_present), in AXES order."""
    df = scanned(store, fp, sel)
    return {a: scaling.outcomes(df, a) for a in axes.axes_present(df)}


@st.cache_data(max_entries=4 * MAX_ENTRIES, show_spinner=False)
def scan_thresholds(store: str, fp: tuple, sel: tuple, order: tuple) -> dict[str, pd.DataFrame]:
    """scaling.thresholds per axis of scan_tables, in `order` (its first: the reference)."""
    return {a: scaling.thresholds(t, list(order)) for a, t in scan_tables(store, fp, sel).items()}


@st.cache_data(max_entries=4 * MAX_ENTRIES, show_spinner=False)
def scan_words(store: str, fp: tuple, sel: tuple, names: tuple) -> dict[str, tuple[list[str], str]]:
    """Per axis of scan_tables: scaling.sentences of standard and `names`, and scaling.brief of `names`."""
    return {
        a: (words.scan_sentences(t, a, ["standard", *names]), words.brief(t, a, list(names)))
        for a, t in scan_tables(store, fp, sel).items()
    }
