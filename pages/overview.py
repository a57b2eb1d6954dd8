"""Overview: what is compared and why, and the summary table of every parameterization x task."""

import numpy as np
import pandas as pd
import streamlit as st

from core.analysis import endpoint_words, endpoints, findings, similarity, verdicts, words
from core.analysis.axes import AXES
from core.dashboard import catalog, charts, plots, ui, urls
from core.dashboard.plots import ORDER, matrix

ui.require_router()
store = ui.view()  # the sidebar's store under its selection, read through the cache
st.title("Why these attention projections?")
st.caption(
    "Tiny transformers that differ only in how attention is parameterized, trained on synthetic tasks; each at its "
    "own best lr (on validation), every number on a held-out test set. Hover a ? for the full answer."
)

runs = store.selected_runs()
single_lr = runs.empty or runs.groupby(["task", "attention"]).lr.nunique().max() <= 1
cmp = store.comparisons(best=ui.selection().get("lr", ui.BEST) == ui.BEST) if single_lr else pd.DataFrame()
ends = store.endpoint_table() if single_lr else pd.DataFrame()  # tasks trained to the criterion: their own endpoints
ends = ends[ends.ref_seeds.notna()] if not ends.empty else ends  # the cells compared with a standard
tables = store.scan_tables()  # every scan axis, cached per store and sidebar: no visitor recomputes them
axes = list(tables)
order_all = [n for n in ORDER if n in {a for t in tables.values() for a in t.attention}]
thresholds = store.scan_thresholds(["standard", *[n for n in order_all if n != "standard"]])


def no_answer(names: list[str]) -> str:
    """What to do when the store or the sidebar leaves a question without runs to answer it."""
    return "no runs to answer it: select " + " and ".join(f"`{n}`" for n in ["standard", *names]) + " in the sidebar"


def task_verdicts(names: list[str], short: bool = False) -> str:
    """The comparisons against standard on every task, in words (endpoint_words.verdict_line)."""
    return endpoint_words.verdict_line(endpoints.task_verdicts(cmp, ends), names, short)


def scan_line(names: list[str]) -> str:
    """The full answer's scan sentences: every axis scanned, each parameterization that differs from standard."""
    lines = [s for sentences, _ in store.scan_words(names).values() for s in sentences]
    return (" " + " ".join(x.replace("**", "`", 2) for x in lines)) if lines else ""


def criterion_axis(axis: str) -> bool:
    """Whether a scan axis has been retrained to the criterion (a one-line answer reads only those)."""
    table = tables.get(axis)
    return table is not None and "until" in table and bool((table.until == "solved").all())


def glance(names: list[str], on: tuple[str, ...]) -> str:
    """The answer in one line, from one protocol: the scans' thresholds where the question has them and they are
    trained to the criterion; else the tasks' criterion endpoints; else the task verdicts."""
    said = store.scan_words(names)
    lines = [said[axis][1] for axis in on if axis in said and said[axis][1] and criterion_axis(axis)]
    lines = lines or [x for n in names if (x := endpoint_words.glance(ends, n))]
    return "; ".join(lines) or task_verdicts(names, short=True) or no_answer(names)


BEST = {"lr": ui.BEST}  # every answer at each parameterization's own best learning rate
scan = "pages/scaling.py"
SCANS = {"axis": "d_model" if "d_model" in axes else (axes or [""])[0]}  # the tied variants' link opens this axis
# (question, names, lead, page, link text, its params, the axes of its one-line answer, a second link or None)
QUESTIONS = [
    (
        "000/003 · a second per-head projection after a shared one?",
        ["stacked"],
        "Folds exactly into standard",
        "pages/parameters.py",
        "the fold",
        {},
        (),
        None,
    ),
    (
        "001 · one D×D W_QK per head?",
        ["bilinear"],
        "",
        scan if "d_head" in axes else "pages/loss_curves.py",
        "d_head scan" if "d_head" in axes else "bilinear vs standard",
        {"axis": "d_head"} if "d_head" in axes else {"attn": "standard,bilinear"},
        ("d_head",),
        None,
    ),
    (
        "002 · one W = W_Q = W_K (= W_V)?",
        ["tied_qk", "tied_qkv"],
        "",
        "pages/similarity.py",
        "learned-matrix similarity",
        {"attn": "standard,tied_qk,tied_qkv", "sim_metric": "cos_QK"},
        ("d_model",),
        (scan, "tied variants' scans", {"attn": "standard,tied_qk,tied_qkv", **SCANS}) if axes else None,
    ),
    (
        "004 · heads over Q = K = V = X?",
        ["identity"],
        "",
        scan if "n_heads" in axes else "pages/loss_curves.py",
        "n_heads scan" if "n_heads" in axes else "identity vs standard",
        {"axis": "n_heads"} if "n_heads" in axes else {"attn": "standard,identity", "metric": "test_acc"},
        ("n_heads", "n_heads_induction"),
        None,
    ),
]


def budget_line(names: list[str]) -> str:
    return words.equal_budget(tables["d_head"]) if "bilinear" in names and "d_head" in tables else ""


def practice_line(names: list[str]) -> str:
    pre = store.named("pretrained")
    if "tied_qk" not in names or pre.empty or "value" not in pre:
        return ""
    return words.practice(
        similarity.practice(pre), lambda d, r: store.random_baseline(d, r).set_index("metric")["mean"]
    )


def induction_line(names: list[str]) -> str:
    return words.layer_control(store.layer_control(), names) if "identity" in names else ""


for question, names, lead, page, what, params, on, also in QUESTIONS:
    cols = st.columns([7, 2], vertical_alignment="center")
    answer = (lead + ". " if lead else "") + (task_verdicts(names) or no_answer(names))
    answer += scan_line(names)  # the full answer: every axis scanned
    answer += induction_line(names) + budget_line(names) + practice_line(names)
    cols[0].markdown(f"**{question}** " + (lead + "; " if lead else "") + glance(names, on), help=answer)
    for link_page, link_text, link_params in [(page, what, params), *([also] if also else [])]:
        cols[1].page_link(link_page, label=f"→ {link_text}", query_params={**BEST, **link_params})

if not cmp.empty or not ends.empty:
    compared = set(cmp.task if not cmp.empty else []) | set(ends.task if not ends.empty else [])
    tasks_shown = [t for t in ui.selection()["tasks"] if t in compared]
    cells = verdicts.matrix_cells(cmp, ends, thresholds)
    rows = [n for n in ORDER if n in set(cells.attention)]
    columns = tasks_shown + [verdicts.scan_column(a) for a in axes]
    titles = {AXES[a].title: a for a in axes}
    keep = urls.sidebar_state()
    links = {(r, c): urls.href(*urls.evidence(r, c, titles, ui.BEST), keep) for r in rows for c in columns}
    how = endpoints.protocol(runs)
    st.caption(
        "Protocol per column: "
        + "; ".join(
            f"{r.task}: "
            + (
                f"to the criterion (validation accuracy ≥ {findings.SOLVED:.0%} twice), cap {r.steps:,}"
                if r.until == "solved"
                else f"a fixed {r.steps:,} steps (cosine)"
            )
            + f", {r.seeds} seeds"
            for r in how.itertuples()
            if r.task in tasks_shown
        )
        + "; scans: "
        + "; ".join(f"{AXES[a].var}: {words.protocol_label(tables[a])}" for a in axes)
    )
    st.html(matrix.verdict_html(cells, rows, columns, links))  # HTML: drawn with the page, before plotly.js loads
    with st.container(horizontal=True):  # each button as wide as its label
        ui.download(cells, "verdict-matrix")
        note = (
            f"×: test-loss ratio to standard (geometric means), each at its best lr; k/n: seeds solved; scan: "
            f"the hardest setting at which ≥ {findings.ROBUST:.0%} of seeds solve (*: an easier one missed)"
        )
        st.download_button(
            "Download SVG",
            matrix.verdict_svg(cells, rows, columns, note),
            on_click="ignore",
            file_name="verdict-matrix.svg",
            mime="image/svg+xml",
            key="svg-verdict-matrix",
        )  # slides
    st.caption(
        "Each parameterization against standard at its own best lr: the ratio of test losses (×) or, where "
        "a side has unsolved seeds, its solved count; scan columns: the hardest setting at which it "
        f"solves ≥ {findings.ROBUST:.0%} of seeds (≥: d_head or d_model at least that; ≤: n_heads or "
        "key-value pairs at most that; *: an easier setting it does not solve, named on hover). "
        "Hover a cell for its numbers, click it for its evidence (Loss curves of the pair on that task, or the "
        "Scaling page on that axis); the Findings below give the intervals."
    )

with st.expander("The tasks (synthetic; two fixed held-out sets of 256 examples: validation and test)"):
    for name, description in catalog.TASK_DESCRIPTIONS.items():
        st.markdown(f"- **{name}**: {description}")
    st.caption(
        "Validation chooses (each parameterization's best learning rate, time to solve); test is what every "
        "number here reports. Neither set is ever trained on."
    )

if not ui.require_runs(runs):
    st.stop()
lr_mode = ui.selection().get("lr", ui.BEST)
multi_lr = runs.groupby(["task", "attention"]).lr.nunique().max() > 1

st.subheader("Findings")
order = [n for n in ORDER if n in set(runs.attention)]
if multi_lr:
    st.info("Findings compare one lr per parameterization: pick `best` or one lr in the sidebar.")
elif "standard" in order:
    for line in words.sentences(runs, order, best=lr_mode == ui.BEST, tasks=ui.selection()["tasks"], cmp=cmp):
        st.markdown(f"- {line}")
    for line in endpoint_words.sentences(ends) if not ends.empty else []:
        st.markdown(f"- {line}")
    if not ends.empty and (note := endpoint_words.power_note(ends)):
        st.caption(note)
    lr_text = "each at its own best lr (lowest mean validation loss)" if lr_mode == ui.BEST else f"all at lr {lr_mode}"
    st.caption(
        f"Compared {lr_text}; reported on the test set. ×: the ratio of geometric-mean final test losses to "
        "standard's with a Welch 95% interval on log loss; **better/worse**: Welch's test on log loss (Fisher's on "
        f"the solved counts when a side has under two finished seeds) at Holm-adjusted p < {findings.ALPHA}; "
        f"**equivalent**: TOST at 5% (the 90% interval inside ×1/{findings.RATIO_MARGIN:g}–{findings.RATIO_MARGIN:g}); "
        f"**inconclusive**: neither (no difference detected is not sameness shown). {words.FAMILY} {words.SOLVED_RULE} "
        "Fisher's exact p compares the counts."
    )
else:
    st.info("Select `standard` in the sidebar to compare every parameterization against it.")
diverged = runs[runs.status != "ok"]
if not diverged.empty:
    st.warning(
        f"{len(diverged)} run(s) diverged: they count as unsolved and are left out of the loss means: "
        + ", ".join(f"{r.attention}/{r.task}/lr {r.lr:g}/seed {r.seed}" for r in diverged.itertuples())
    )

st.subheader("Summary: solved k/n with a 95% interval, and mean ± std over seeds")
tasks = ui.selection()["tasks"]
parts = (
    [findings.summary(g, tasks, ORDER) for _, g in runs.groupby("lr")]
    if multi_lr
    else [findings.summary(runs, tasks, ORDER)]
)
table = pd.concat(parts, ignore_index=True)
chance = ui.chance_levels()
table["chance (in context)"] = table.task.map(lambda t: chance.get(t, {}).get("in_context", np.nan))
table["chance (unqueried)"] = table.task.map(lambda t: chance.get(t, {}).get("unqueried", np.nan))
shown = table.assign(
    solved=[
        f"{k}/{n} [{lo:.2f}, {hi:.2f}]"
        for k, n, lo, hi in zip(table.solved, table.seeds, table.solved_lo, table.solved_hi)
    ],
    test_acc=ui.fmt_mean_std(table.test_acc, table.test_acc_std, 3),
    test_loss=ui.fmt_mean_std(table.test_loss, table.test_loss_std, 2, "g"),  # solved cells sit near 1e-5
    improving=[f"{i}/{n - k}" if n > k else "–" for i, n, k in zip(table.improving, table.seeds, table.solved)],
    **{c: [f"{v:.3f}" if v == v else "–" for v in table[c]] for c in ("chance (in context)", "chance (unqueried)")},
).drop(columns=["test_loss_std", "test_acc_std", "solved_lo", "solved_hi"])
st.dataframe(
    shown,
    hide_index=True,
    width="stretch",
    column_config={
        "lr": st.column_config.NumberColumn("lr", format="%.0e"),
        "solved": st.column_config.TextColumn("solved k/n [Wilson 95%]"),
        "improving": st.column_config.TextColumn("still improving", help="unsolved seeds still improving"),
        "seconds_per_member_step": st.column_config.NumberColumn("s / member-step", format="%.4f"),
    },
)
ui.download(table, "summary")
st.caption(
    "Seconds per member-step: the ensemble's training-step time (every seed and lr of a configuration trains "
    "together) over the steps its members took, evaluations left out; the Runtime page has the measured "
    "per-layer comparison. "
    "'Still improving': unsolved seeds whose validation loss fell by over 2% (or accuracy rose 2 points) over the "
    "last fifth of training; a 'fails' there may be a budget artefact. Chance: copying a random in-context "
    "candidate; for associative_recall also among the pairs not yet queried (the elimination plateau)."
)

# Drawn when opened (its state in the URL): the Overview then draws no chart, so a new visitor's first screen is
# never held back by plotly.js; the page loads it once drawn (its last line) for the next page.
seeds = st.expander(
    "**Every seed's final test accuracy**: one dot per seed, drawn when opened",
    key="ov_seeds",
    on_change="rerun",
    bind="query-params",
)
if seeds.open:
    with seeds:
        dots = runs[runs.status == "ok"][["task", "attention", "seed", "lr", "test_acc"]]
        levels = {t: {k: v for k, v in chance.get(t, {}).items() if k != "uniform"} for t in dots.task.unique()}
        shown_tasks = [t for t in tasks if t in set(dots.task)]
        fig = plots.strip(dots, "test_acc", shown_tasks, levels, "final test accuracy")
        ui.chart(fig, dots, "seeds-test-acc")
        st.caption(
            "One dot per seed: a bimodal outcome (some seeds solve, some do not) shows as two clusters that "
            "a mean ± std hides. Lines: the chance levels of the table."
        )
charts.warm()  # the chart page a visitor opens next finds plotly.js ready
