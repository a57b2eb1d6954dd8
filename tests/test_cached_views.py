"""The pages' cached loaders give what the analysis functions give, whatever the sidebar selects: the same
tables on the bundled store, one family of comparisons, and a store view that hides server paths."""

from pathlib import Path

import pandas as pd
import pytest
from fake_scans import fake_runs, write_store

from core.dashboard import cached, selection


def test_the_keyed_loaders_give_what_the_functions_give_on_the_bundled_store():
    """Cross-check: the cached views keyed by (store, fingerprint, selection) against the plain functions."""

    from core.analysis import axes, curves, scaling, words
    from core.dashboard import selection
    from core.results import store as st_store
    from core.results.stores import BUNDLED

    store, fp = str(BUNDLED), cached.fingerprint(BUNDLED)
    runs = st_store.load_runs(store)
    sel = {
        "store": store,
        "tasks": ["associative_recall", "sort"],
        "attentions": ["standard", "tied_qk", "mqa"],
        "size": None,
        "steps": selection.LONGEST,
        "precision": "fp32",
        "lr": selection.BEST,
    }
    got = cached.selected(store, fp, selection.key(sel), False, None)
    assert set(got.task) == {"associative_recall", "sort"} and set(got.attention) == {"standard", "tied_qk", "mqa"}
    assert (got.groupby(["task", "attention", "n_heads", "d_model", "d_head", "length"]).lr.nunique() == 1).all()
    assert list(dict.fromkeys(got.task)) == ["associative_recall", "sort"]  # the sidebar's task order
    assert cached.comparisons(store, fp, selection.key(sel), True).empty  # criterion cells: their endpoints instead
    every = cached.selected(store, fp, selection.key(sel), False, selection.ALL)
    assert every.lr.nunique() > 1 and set(got.run_id) < set(every.run_id)

    tables = cached.scan_tables(store, fp, selection.scan_key(sel))
    scanned = selection.scanned(runs, sel)
    assert list(tables) == axes.axes_present(scanned) and "d_head" in tables
    pd_eq = [tables[a].equals(scaling.outcomes(scanned, a)) for a in tables]
    assert all(pd_eq), pd_eq
    said = cached.scan_words(store, fp, selection.scan_key(sel), ("tied_qk",))
    for a, (sentences, brief) in said.items():
        assert sentences == words.scan_sentences(tables[a], a, ["standard", "tied_qk"])
        assert brief == words.brief(tables[a], a, ["tied_qk"])
    assert any(said[a][0] for a in said), "tied_qk differs from standard on some axis"
    th = cached.scan_thresholds(store, fp, selection.scan_key(sel), ("standard", "tied_qk", "mqa"))
    assert all(t.equals(scaling.thresholds(tables[a], ["standard", "tied_qk", "mqa"])) for a, t in th.items())

    with_weights = got[got.run_id.map(lambda r: st_store.weights_path(store, r).exists())]
    ids = tuple(with_weights[with_weights.task == "sort"].run_id)
    assert ids
    analysed = cached.analysed(store, tuple(sorted(ids)), fp)[0]
    for metric in ("sym_QK", "overlap_QK"):
        init = cached.init_rows(store, tuple(sorted(ids)), metric, fp)
        direct = curves.matched_baselines(
            analysed,
            init,
            cached.table(store, "analysis", "random", fp),
            with_weights[with_weights.task == "sort"],
            metric,
        )
        pd.testing.assert_frame_equal(cached.matched_baselines(store, ids, metric, fp), direct)


def _everything(store: str, fp) -> dict:
    """The sidebar with every task and parameterization of the store picked."""
    runs = cached.runs(store, fp)
    tasks, attentions = list(runs.task.unique()), list(runs.attention.unique())
    return {"store": store, "tasks": tasks, "attentions": attentions, "size": None} | {
        "steps": selection.LONGEST,
        "precision": "fp32",
        "lr": selection.BEST,
    }


@pytest.fixture(scope="module")
def fixed(tmp_path_factory) -> str:
    """A store of fixed-budget runs (fake_scans'): the cells compared by test loss, not by endpoints."""
    root = tmp_path_factory.mktemp("fixed")
    write_store(root, fake_runs())
    return str(root)


def test_the_cached_comparisons_are_the_functions_over_the_whole_family(fixed):
    from core.analysis import findings

    fp = cached.fingerprint(fixed)
    every = _everything(fixed, fp)
    sel = {**every, "tasks": ["associative_recall"], "attentions": ["standard", "tied_qk"]}
    cmp = cached.comparisons(fixed, fp, selection.key(sel), True)
    chosen = selection.selected(cached.runs(fixed, fp), every, False, None)
    whole = findings.compare_to(chosen[chosen.until != "solved"], best=True)
    mine = whole[whole.task.isin(sel["tasks"]) & whole.attention.isin(sel["attentions"])].reset_index(drop=True)
    pd.testing.assert_frame_equal(cmp, mine)
    assert set(cmp.attention) == {"tied_qk"}


def test_statistics_are_computed_once_per_store_state_and_selection(monkeypatch, fixed):
    calls = []
    monkeypatch.setattr(cached.findings, "compare_to", lambda runs, best: calls.append(len(runs)) or runs.head(0))
    cached.comparisons.clear()
    fp = cached.fingerprint(fixed)
    every = _everything(fixed, fp)
    sel = {**every, "tasks": ["induction"], "attentions": ["standard", "identity"]}
    cached.comparisons(fixed, fp, selection.key(sel), True)
    cached.comparisons(fixed, fp, selection.key(dict(sel)), True)  # another session, the same view: read
    cached.comparisons(fixed, fp, selection.key({**sel, "attentions": ["standard"]}), True)  # other runs: computed
    cached.comparisons(fixed, fp, selection.key(sel), False)
    want = len(cached.selected(fixed, fp, selection.key(every), False, None))
    assert calls == [want, want, want] and want > 0  # the whole family each time, whatever the sidebar picks
    assert cached.comparisons._info.max_entries
    cached.comparisons.clear()


def test_the_family_of_comparisons_does_not_change_with_the_sidebar(fixed):
    """Selecting one task and two parameterizations must not make them 'worse' by shrinking the Holm family:
    each shown row is the same row as with everything selected."""
    from core.results.stores import BUNDLED

    fp = cached.fingerprint(fixed)
    every = _everything(fixed, fp)
    few = {**every, "tasks": ["associative_recall"], "attentions": ["standard", "tied_qk"]}
    whole = cached.comparisons(fixed, fp, selection.key(every), True).set_index(["attention", "task"])
    part = cached.comparisons(fixed, fp, selection.key(few), True).set_index(["attention", "task"])
    assert len(part) and len(whole) > len(part)
    for col in ("p_holm", "tost_holm", "verdict"):
        assert part[col].equals(whole.loc[part.index, col]), col
    # and the criterion cells' endpoints: Holm over the store's whole table, whatever the sidebar shows
    store, fp = str(BUNDLED), cached.fingerprint(BUNDLED)
    every = _everything(store, fp)
    few = {**every, "tasks": ["associative_recall"], "attentions": ["standard", "stacked", "mqa", "gqa"]}
    whole = cached.endpoint_table(store, fp, selection.key(every)).set_index(["attention", "task"])
    part = cached.endpoint_table(store, fp, selection.key(few)).set_index(["attention", "task"])
    assert len(part) == 4 and len(whole) > 4 * len(part)  # standard's row and three compared
    for col in ("fisher_holm", "logrank_holm"):
        assert part[col].equals(whole.loc[part.index, col]), col


def test_a_store_view_reads_through_the_cache_in_any_run_id_order_and_hides_server_paths():
    """core.dashboard.view.StoreView: one state of one store; the same runs asked in another order are one cache
    entry, and no provenance command shows an absolute path of the machine that made the runs."""
    from core.dashboard.view import StoreView

    data = Path(__file__).resolve().parents[1] / "data"
    v = StoreView.of(data)
    ids = list(v.runs().run_id[:4])
    first = v.metrics(ids, ["val_loss"])
    assert first.equals(v.metrics(ids[::-1], ["val_loss"]))
    assert set(first.run_id) == set(ids) and set(first.metric) == {"val_loss"}
    raw = [p["command"] for p in cached.provenance(v.store, v.fp)]
    assert any(" /" in c for c in raw)  # scratch-store sweeps recorded their absolute --store
    assert not any(" /" in p["command"] for p in v.provenance()) and len(v.provenance()) == len(raw)
