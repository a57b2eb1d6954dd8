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
    assert "scans: d_head: a fixed 800 steps" in said


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
