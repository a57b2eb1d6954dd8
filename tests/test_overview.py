"""The Overview's answers: the protocol behind each verdict-matrix column, and the second readings of 001 (equal
parameter budgets) and 002 (real pretrained models), each checked against the function that computes it."""

import re

from apptest import ROOT, open_page, specs

from core.dashboard.plots import COLORS


def test_the_verdict_matrix_states_each_columns_protocol():
    from core.analysis import endpoints
    from core.results import store as st

    at = open_page("overview")
    (said,) = [c.value for c in at.caption if c.value.startswith("Protocol per column: ")]
    for r in endpoints.protocol(findings_view(st.load_runs(ROOT / "data"))).itertuples():
        assert f"{r.task}: " + ("to the criterion" if r.until == "solved" else f"a fixed {r.steps:,} steps") in said
    runs = st.load_runs(ROOT / "data")
    from core.analysis import axes, scaling, words

    for axis in axes.axes_present(runs):  # each scan axis's own protocol, as its table's runs were trained
        assert f"{axes.AXES[axis].var}: {words.protocol_label(scaling.outcomes(runs, axis))}" in said


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

    from core.results import packs

    (root / name / "runs").mkdir(parents=True)
    packs.unpack(ROOT / "data", root / name, runs.run_id)
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


def test_overview_findings_are_computed_at_best_lr_and_table_covers_grid():
    from core.analysis import findings
    from core.results import store as st

    at = open_page("overview")
    text = " ".join(m.value for m in at.markdown)
    for task in ("associative_recall", "induction", "reverse", "sort", "histogram"):  # all to the criterion now
        assert f"on {task} (to the criterion, cap " in text  # its endpoints, not a loss ratio
    assert "test loss ×" not in text
    table = at.dataframe[0].value
    seeds = {t: 10 if t == "associative_recall" else 5 for t in table.task}  # each task at its longest training
    assert len(table) == 8 * 5 and all(r.seeds == seeds[r.task] for r in table.itertuples())
    runs = findings.at_longest(findings.at_main_size(st.load_runs(ROOT / "data")))  # criterion runs at their cap
    best = findings.best_lr(runs).set_index(["task", "attention"]).lr
    assert all(best[(r.task, r.attention)] == r.lr for r in table.itertuples())
    assert all(re.fullmatch(rf"\d+/{seeds[t]} \[0\.\d\d, [01]\.\d\d\]", k) for t, k in zip(table.task, table.solved))


def test_overview_answers_each_seed_question_in_one_line_with_the_full_answer_on_hover():
    from core.analysis import axes, endpoint_words, scaling, words
    from core.results import store as st

    at = open_page("overview")
    answers = [m for m in at.markdown if m.value.startswith(("**000", "**001", "**002", "**004"))]
    assert len(answers) == 4 and all(m.proto.help for m in answers)
    runs = st.load_runs(ROOT / "data")
    # one protocol on the first screen: the line reads a scan only once it is trained to the criterion; until then
    # the tasks' criterion endpoints (endpoints.endpoints), the fixed-budget scan in the full answer behind the ?
    d_head = scaling.outcomes(runs, "d_head")
    if (d_head.until == "solved").all():
        assert words.brief(d_head, "d_head", ["bilinear"]) in answers[1].value
    else:
        from core.analysis import endpoints, findings
        from core.attention import NAMES
        from core.training.task_specs import TASK_NAMES

        ends = endpoints.endpoints(findings.at_main_size(runs), list(NAMES), list(TASK_NAMES))
        assert endpoint_words.glance(ends, "bilinear") in answers[1].value
    for line in words.scan_sentences(d_head, "d_head", ["standard", "bilinear"]):  # the sentences behind the line
        assert line.replace("**", "`", 2) in answers[1].proto.help
    # 002 (the tied variants): its full answer reads every axis scanned (each tied variant whose threshold differs
    # from standard's), and a second link opens those scans
    said = 0
    for axis in axes.axes_present(runs):
        for line in words.scan_sentences(scaling.outcomes(runs, axis), axis, ["standard", "tied_qk", "tied_qkv"]):
            assert line.replace("**", "`", 2) in answers[2].proto.help, axis
            said += 1
    assert said  # the bundled scans do part the tied variants from standard somewhere
    # 004 names the task it rests on, with the one-layer control, read from the store (endpoints.layer_control)
    assert "On induction (a token's earlier successor recalled at varying offsets" in answers[3].proto.help
    from core.analysis import endpoints

    control = endpoints.layer_control(runs).set_index(["attention", "n_layers"])  # the store's counts, not a copy
    for name, layers in (("identity", 2), ("standard", 1)):
        r = control.loc[(name, layers)]
        assert f"`{name}` {int(r.solved)}/{int(r.seeds)} with {layers} layer" in answers[3].proto.help
    links = {link.proto.label: link.proto for link in at.get("page_link")}
    assert "attn=standard%2Ctied_qk%2Ctied_qkv" in links["→ tied variants' scans"].query_string
    assert links["→ tied variants' scans"].page.endswith("scaling")


def test_overview_verdict_matrix_links_each_cell_to_its_evidence_with_the_sidebars_store():
    """The matrix is HTML (drawn before plotly.js loads): every compared cell links to urls.evidence's page and
    params over the sidebar's URL state, hover text in its title; an SVG of it and a CSV of its cells download."""
    from html import unescape
    from urllib.parse import parse_qs, urlsplit

    at = open_page("overview", store="data", precision="fp32", lr="best")  # as a shared link carries them
    body = at.get("html")[0].proto.body
    hrefs = [unescape(h) for h in re.findall(r'href="([^"]*)"', body)]
    titles = re.findall(r'<td title="([^"]*)"', body)
    assert len(hrefs) == len([t for t in titles if t != "not compared"]) >= 7 * 5
    first = urlsplit(hrefs[0])
    q = {k: v[0] for k, v in parse_qs(first.query).items()}
    assert first.path == "loss_curves" and q["attn"] == "standard,stacked" and q["tasks"] == "associative_recall"
    assert q["store"] == "data" and q["lr"].startswith("best") and q["precision"] == "fp32"  # the sidebar's state
    scans = [urlsplit(h) for h in hrefs if h.startswith("scaling?")]
    assert scans and {parse_qs(u.query)["axis"][0] for u in scans} >= {"d_head", "d_model", "n_heads"}
    assert "stacked vs standard on associative_recall" in unescape(titles[0])
    labels = [b.proto.label for b in at.get("download_button")]
    assert labels[:2] == ["Download CSV", "Download SVG"]


def test_overview_draws_its_seeds_strip_only_when_opened_and_a_link_can_open_it():
    at = open_page("overview")
    assert not specs(at)  # nothing for a new visitor's browser to load plotly.js for
    at = open_page("overview", ov_seeds="true")
    (fig,) = specs(at)
    named = [t["name"] for t in fig["data"] if t.get("name") in COLORS]
    assert set(named) == set(COLORS)  # every parameterization's dots ...
    shown = [t["name"] for t in fig["data"] if t.get("name") in COLORS and t.get("showlegend", True)]
    assert sorted(shown) == sorted(COLORS)  # ... named once in the legend


def test_the_verdict_matrix_has_one_cell_per_parameterization_and_column_each_from_its_statistic():
    import pandas as pd

    from core.analysis import axes, endpoints, scaling, verdicts
    from core.results import store as st

    runs = st.load_runs(ROOT / "data")
    view = findings_view(runs)
    ends = endpoints.endpoints(view, sorted(set(view.attention)), sorted(set(view.task)))
    ends = ends[ends.ref_seeds.notna()]
    order = ["standard", "tied_qk", "tied_qkv", "identity"]
    thresholds = {a: scaling.thresholds(scaling.outcomes(runs, a), order) for a in axes.axes_present(runs)}
    cells = verdicts.matrix_cells(pd.DataFrame(), ends, thresholds)
    assert not cells.duplicated(["attention", "column"]).any() and "standard" not in set(cells.attention)
    by_cell = cells.set_index(["attention", "column"])
    for r in ends.itertuples():
        assert by_cell.loc[(r.attention, r.task)].verdict == endpoints.matrix_verdict(r)
    for axis, th in thresholds.items():
        for r in th.iloc[1:].itertuples():
            cell = by_cell.loc[(r.attention, verdicts.scan_column(axis))]
            assert cell.verdict == r.verdict and "(standard: " in cell.hover
    assert verdicts.matrix_cells(pd.DataFrame(), ends.iloc[0:0], {}).empty
