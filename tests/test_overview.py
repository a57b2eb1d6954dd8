"""The Overview's answers: the protocol behind each verdict-matrix column, and the second readings of 001 (equal
parameter budgets) and 002 (real pretrained models), each checked against the function that computes it."""

from apptest import ROOT, open_page


def test_the_verdict_matrix_states_each_columns_protocol():
    from core.analysis import endpoints
    from core.results import store as st

    at = open_page("overview")
    (said,) = [c.value for c in at.caption if c.value.startswith("Protocol per column: ")]
    for r in endpoints.protocol(findings_view(st.load_runs(ROOT / "data"))).itertuples():
        assert f"{r.task}: " + ("to the criterion" if r.until == "solved" else f"a fixed {r.steps:,} steps") in said
    runs = st.load_runs(ROOT / "data")
    from core.analysis import scaling, words

    for axis in scaling.axes_present(runs):  # each scan axis's own protocol, as its table's runs were trained
        assert f"{scaling.AXES[axis].var}: {words.protocol_label(scaling.outcomes(runs, axis))}" in said


def findings_view(runs):
    """The Overview's default runs: main size, each task at its longest training."""
    from core.analysis import findings

    return findings.at_longest(findings.at_main_size(runs[runs.precision == "fp32"]))


def test_the_001_answer_reads_equal_budgets_and_the_002_answer_real_models():
    from core.analysis import scaling, similarity
    from core.results import store as st

    at = open_page("overview")
    helps = {m.value[2:5]: m.proto.help for m in at.markdown if m.value.startswith(("**001", "**002"))}
    table = scaling.outcomes(st.load_runs(ROOT / "data"), "d_head")
    for a, b in scaling.equal_parameters(table, "bilinear"):
        assert f"`bilinear` at d_head {a.x:g} ({a.params_attention:,.0f}; {a.solved}/{a.n}) against" in helps["001"]
        assert abs(a.params_attention - b.params_attention) <= 0.25 * a.params_attention
    for r in similarity.practice(st.load_named(ROOT / "data", "pretrained")).itertuples():
        assert f"{r.model} ({r.kind}) sym_QK {r.sym_QK:.2f}" in helps["002"]
    assert "n = 1 model per class" in helps["002"]


def _store_of(root, name, runs):
    """A store holding these runs' files (and data/'s stored analyses), as a visitor would pick it by name."""
    import shutil

    from core.results import store as st

    (root / name / "runs").mkdir(parents=True)
    for rid in runs.run_id:
        shutil.copy(st.run_path(ROOT / "data", rid), root / name / "runs")
    shutil.copytree(ROOT / "data" / "analysis", root / name / "analysis")


def test_a_one_seed_store_shows_counts_not_nan_and_a_store_without_standard_names_what_to_select(stores_root):
    from apptest import assert_no_missing_values_shown, page_text

    from core.results import store as st

    view = findings_view(st.load_runs(ROOT / "data"))
    view = view[view.task.isin(["reverse", "sort"])]
    _store_of(stores_root, "one", view[(view.seed == 0) & (view.lr == 0.01)])
    at = open_page("overview", store="one", lr="0.01")
    assert_no_missing_values_shown(at)
    assert "×nan" not in " ".join(h.proto.body for h in at.get("html"))
    _store_of(stores_root, "nostd", view[(view.attention != "standard") & (view.lr == 0.01)])
    at = open_page("overview", store="nostd", lr="0.01")
    assert "select `standard` and `stacked` in the sidebar" in " ".join(m.value for m in at.markdown)
    assert "Select `standard` in the sidebar" in page_text(at)


def test_criterion_columns_of_the_matrix_read_the_endpoints_not_a_loss_ratio():
    """A run trained to the criterion stops when it solves, so its final loss says when it stopped: its matrix cell
    is solved by the cap and steps to solve (endpoints.endpoints, Holm over that table), coloured by them."""
    import re
    from html import unescape

    from core.analysis import endpoints
    from core.attention import NAMES
    from core.results import store as st
    from core.training.task_specs import TASK_NAMES

    at = open_page("overview")
    body = at.get("html")[0].proto.body
    cells = dict(re.findall(r'<td title="([^"]*)" style="[^"]*background:([^;"]*)', body))
    table = endpoints.endpoints(findings_view(st.load_runs(ROOT / "data")), list(NAMES), list(TASK_NAMES))
    assert {"associative_recall", "induction"} <= set(table.task)
    for r in table[table.attention != "standard"].itertuples():
        (hover,) = [unescape(t) for t in cells if unescape(t).startswith(f"{r.attention} vs standard on {r.task},")]
        assert "to the criterion" in hover and "log-rank" in hover and "test loss" not in hover
        assert endpoints.verdict(r) in hover
