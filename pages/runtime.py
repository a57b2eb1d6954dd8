"""Runtime: seconds per training step and tokens/s from the runs, and the forward+backward micro-benchmark."""

import pandas as pd
import streamlit as st

from core.analysis import views
from core.dashboard import plots, ui, urls

REFERENCE = "nn.MultiheadAttention"

ui.require_router()
store = ui.view()  # the sidebar's store under its selection, read through the cache
st.title("Runtime")
st.markdown(
    "Is the redundant projection 'only more time'? What does a full-rank bilinear score cost? "
    "Training numbers come from the runs; per-layer numbers from `python -m core bench`."
)
runs = store.selected_runs()
if not ui.require_runs(runs):
    st.stop()

st.subheader("Training, from the runs")
y = urls.url_widget(
    st.radio,
    "Measure",
    "rt_y",
    "seconds_per_member_step",
    options=["seconds_per_member_step", "tokens_per_s"],
    horizontal=True,
)
per = views.runtime_bars(runs, y)  # one reading per ensemble, not per seed
ui.chart(plots.bars_by_attention(per, y, facet="task", error="std"), per, f"runtime-{y}")
st.caption(
    "Seconds per member-step: an ensemble's training-step time (evaluations left out) over the steps its members "
    "took, on one clock however often it was stopped and taken up; under the criterion members stop at different "
    "steps, so no one member's steps divide it. A larger ensemble takes fewer seconds a member-step (its matmuls "
    "batch), and a core shared with another worker slows it: the per-layer benchmark below is the controlled "
    "comparison. "
    f"All seeds and lrs of a configuration train together as one vectorized ensemble and share its step time, so "
    f"each bar is a mean over ensembles ({int(per.ensembles.min())}–{int(per.ensembles.max())} per bar here), "
    "not over seeds, and its error bar (std over ensembles) is absent where one ensemble made them all: such a bar "
    "is one measurement, and the same command on one machine has moved by up to 11% between runs "
    "(docs/benchmarks.md), so a gap between single-ensemble bars smaller than that is noise, not a result. On a "
    "CPU a sweep trains one ensemble per core in worker processes (the runs' `threads` column). Runs are "
    "measured on whatever machine made the store (see the sidebar's provenance); compare within a store."
)

bench = store.named("bench")


def of_kind(kind: str):
    """The bench rows of one kind (a sweep's record, the store, BLAS, the training engines); empty if none."""
    return bench[bench.kind == kind] if "kind" in bench else bench.iloc[0:0]


sw = of_kind("sweep")
if not sw.empty:
    st.subheader("The sweeps that made these runs")
    sw = sw.assign(seconds_at_peak=sw.gflop / sw.peak_gflops)  # every FLOP at the measured peak: a floor
    cols = [
        "jobs",
        "runs",
        "carried",
        "steps",
        "threads",
        "seconds",
        "seconds_at_peak",
        "runs_per_min",
        "gflops",
        "peak_gflops",
        "utilisation",
        "step_utilisation",
    ]
    # a cancelled sweep stored only what finished before the cancel: it has no utilisation, so it gets its own rows
    cancelled = sw.cancelled.fillna(False).astype(bool) if "cancelled" in sw else pd.Series(False, index=sw.index)
    sw = sw[[c for c in cols if c in sw]].astype({"jobs": int, "runs": int, "steps": int, "threads": int})
    if "carried" in sw:  # records written before it was counted have none: shown as a dash, not as 0
        sw = sw.assign(carried=[f"{v:.0f}" if v == v else "–" for v in sw.carried])
    records, sw, stopped = sw.assign(cancelled=cancelled), sw[~cancelled], sw[cancelled]
    number, share = st.column_config.NumberColumn, st.column_config.ProgressColumn
    st.dataframe(
        sw,
        hide_index=True,
        width="stretch",
        column_config={
            "seconds": number(format="%.0f"),
            "seconds_at_peak": number(format="%.0f"),
            "runs_per_min": number(format="%.1f"),
            "gflops": number(format="%.1f"),
            "peak_gflops": number(format="%.0f"),
            "utilisation": share(min_value=0, max_value=1, format="%.2f"),
            "step_utilisation": share(min_value=0, max_value=1, format="%.2f"),
        },
    )
    ui.download(records, "bench-sweep")  # every record, the cancelled ones too
    st.caption(
        f"Measured by `python -m core sweep` itself, one row per sweep ({len(sw)} here: "
        f"{sw.seconds.sum() / 60:.0f} min of wall time in all): its wall time and its FLOP/s (every training step "
        "and evaluation, counted by FlopCounterMode) over a matmul peak (in the sweep's precision) measured just "
        "before and after it at all the threads it used. `seconds_at_peak`: the sweep's FLOPs at that peak, the "
        f"least time this machine could take for them ({sw.seconds_at_peak.sum() / 60:.0f} min in all). "
        "`step_utilisation`: the training steps alone, their FLOPs over the thread-seconds spent in them, against "
        "one thread's share of that peak. Only the steps a sweep took count: a run taken up from a checkpoint or a "
        "shorter cap's end state counts its new steps, and `carried` runs (stopped before a shorter cap, stored "
        "again under the new one) none (– in records written before they were counted). A `cancelled` sweep (Ctrl-C, "
        "SIGTERM) counts the FLOPs of the runs it stored only: its jobs in flight stored nothing (their checkpoints "
        "let the next start go on), so it has no utilisation and is listed below, not in this table."
    )
    if not stopped.empty:
        st.dataframe(
            stopped[["jobs", "runs", "carried", "steps", "threads", "seconds"]],
            hide_index=True,
            width="stretch",
            column_config={"seconds": number(format="%.0f")},
        )
        st.caption(
            f"{len(stopped)} cancelled sweep(s), {stopped.seconds.sum() / 60:.0f} min of wall time in all, "
            f"{stopped.runs.sum()} runs stored: each is a part of a line that a later start of the same command "
            "finished (reproduce.md counts its parts)."
        )
    above = int((sw.utilisation >= 1).sum())
    if above:
        st.caption(
            f"{above} sweep(s) ran above the peak measured beside them (utilisation ≥ 1). Either that peak was "
            "measured while other work shared the machine and came out low, or (a record without `carried`, "
            "written before runs recorded where a sweep took them up) the sweep extended or resumed runs and "
            "counted their earlier steps too. Their wall time stands."
        )

st.subheader("One attention layer, forward + backward")
if bench.empty or "kind" not in bench or not (bench.kind == "attention").any():
    st.info(
        "No micro-benchmark results in this store. Produce them with\n\n```bash\npython -m core bench --store "
        f"{ui.store_arg()}\n```"
    )
    st.stop()
b = bench[bench.kind == "attention"].copy()
shape = ["d_model", "seq_len", "n_heads", "batch"]
b[shape] = b[shape].astype(int)  # the stored tables share columns, so pandas read them as floats
c = st.columns(3)
metric = urls.url_widget(
    c[0].selectbox,
    "Measure",
    "bm",
    "ratio",
    options=["ratio", "ms", "peak_mb"],
    help="ratio: time relative to nn.MultiheadAttention at the same shape, the median over rounds of paired "
    "timings; the bars span the middle half of the rounds",
)
heads = urls.url_widget(c[1].selectbox, "n_heads", "bh", int(b.n_heads.max()), options=sorted(b.n_heads.unique()))
x = urls.url_widget(c[2].selectbox, "x axis", "bx", "seq_len", options=["seq_len", "d_model"])
facet = "d_model" if x == "seq_len" else "seq_len"
b = b[(b.n_heads == heads) & b.attention.isin(ui.selection()["attentions"] + [REFERENCE, "sdpa"])]
ours, ref = b[b.attention != REFERENCE], b[b.attention == REFERENCE]
spread = ("ratio_q25", "ratio_q75") if metric == "ratio" and "ratio_q25" in b else None  # older stores lack them
fig = plots.lines_by_attention(
    ours,
    x,
    metric,
    facet=facet,
    log_x=True,
    log_y=metric != "ratio",
    reference=ref,
    reference_name=REFERENCE,
    spread=spread,
)
ui.chart(fig, b.sort_values(["attention", facet, x]), f"bench-{metric}-H{heads}")
st.caption(
    "`sdpa` is bare F.scaled_dot_product_attention with the projections as plain matmuls; "
    f"{REFERENCE} is PyTorch's own layer (batch_first, no bias). Ratios below 1 are faster than it."
)

st.header("Engineering: how fast the lab itself is")
st.caption(
    "Not results about attention: the store, the app and the training engine, measured by `python -m core "
    "bench` (docs/benchmarks.md)."
)


def bench_table(kind: str, title: str, cols: list[str], made_by: str, caption: str, ints=()) -> None:
    """One kind of bench table in this store, with its download and caption; `made_by`: the command that makes it."""
    st.subheader(title)
    table = of_kind(kind)
    if table.empty:
        st.info(f"No such figures in this store ({made_by} makes them).")
        return
    table = table[[c for c in cols if c in table]].astype(dict.fromkeys([c for c in ints if c in table], int))
    st.dataframe(table, hide_index=True, width="stretch")
    ui.download(table, f"bench-{kind}")
    st.caption(caption)


bench_table(
    "store",
    "The store at scale",
    ["what", "runs", "seconds", "target_seconds", "met"],
    "`python -m core bench` without `--skip-store`",
    "Reading a synthetic store of real-format runs (built in a temp directory by `python -m core bench`): "
    "the runs table through the runs index (core/results/index.py) and without it, the metrics of a 100-run "
    "selection, and app.py's first page in a warm process with empty caches. Medians of the rounds.",
)
bench_table(
    "blas",
    "numpy's BLAS threads on a busy machine",
    ["shape", "processes", "blas_threads", "ms_per_svd", "vs_one_thread"],
    "`python -m core bench` without `--skip-blas`",
    "One SVD of a batch of (H, D, D) matrices, as the similarity analyses take them, with numpy's BLAS at its "
    "default threads and at one: in one process, then in one process per core at once (every core busy, as "
    "`baselines` beside a sweep, or two visitors' analyses beside a Train child). Medians. The CLI and this "
    "server run numpy's BLAS on one thread (core/analysis/blas.py).",
    ints=("processes", "blas_threads"),
)
bench_table(
    "criterion",
    "Training to the criterion against a fixed budget",
    [
        "protocol",
        "runs",
        "steps",
        "member_steps",
        "member_steps_ratio",
        "seconds",
        "seconds_ratio",
        "stopped_early",
        "solved",
        "pruned",
        "step_utilisation",
    ],
    "`python -m core bench --criterion`",
    "One grid (every parameterization × the lr grid × 5 seeds on the bundled associative-recall point) swept "
    "twice in one run on the same workers: `fixed`, the old protocol (a cosine decay to 1,600 steps, every member "
    "to the end), and `criterion`, a constant lr after warmup to a cap of 6,400 where members stop when solved and "
    "an lr that can no longer be chosen stops (core/training/criterion.py). Ratios are to `fixed`; "
    "`member_steps` count each run's own steps; `stopped_early`: the share of runs that stopped before their cap.",
    ints=("runs", "steps", "member_steps", "solved", "pruned"),
)

st.subheader("The training engine against a plain loop")
tr = of_kind("training")
if tr.empty:
    st.info("No training benchmark in this store (`python -m core bench` without `--skip-training` makes one).")
else:
    cols = [
        "engine",
        "workers",
        "threads",
        "jobs",
        "runs",
        "lrs",
        "seeds",
        "steps",
        "eval_every",
        "rounds",
        "seconds",
        "runs_per_min",
        "speedup",
        "speedup_min",
        "speedup_max",
        "max_loss_diff",
        "gflops",
        "peak_gflops",
        "utilisation",
    ]
    if "engine" not in tr:  # a bench stored before engines were compared side by side
        st.info("This store's training benchmark predates the current format; rerun `python -m core bench`.")
        st.stop()
    cols = [c for c in cols if c in tr]  # a bench stored before paired rounds has no rounds or speedup range
    tr = tr[cols].astype({"workers": int, "threads": int, "runs": int, "steps": int, "eval_every": int})
    st.dataframe(
        tr,
        hide_index=True,
        width="stretch",
        column_config={
            "utilisation": st.column_config.ProgressColumn(min_value=0, max_value=1, format="%.2f"),
            "max_loss_diff": st.column_config.NumberColumn(format="%.1e"),
        },
    )
    ui.download(tr, "bench-training")
    st.caption(
        "One lr × seed grid (a slice of the bundled sweep's: its configs, lr grid and eval cadence, with fewer "
        "parameterizations, tasks, seeds and steps) trained three ways in one run: the plain per-run loop "
        "(torch.optim.AdamW; it evaluates both held-out sets, as every sweep run is evaluated), seed-only "
        "ensembles (one job per lr, as sweeps trained before the lr grid), and "
        "seeds × lrs ensembles (one job per configuration, what `python -m core sweep --lr` trains), both on the "
        "sweep's worker processes (start-up included). Every engine runs in every round, the order rotating; "
        "`speedup` is the median of the per-round ratios to that round's plain loop and `speedup_min`–"
        "`speedup_max` their range; `seconds` and `runs_per_min` are medians. max_loss_diff: the largest "
        "test-loss gap to the plain loop. utilisation: FLOP/s (training and eval, counted by FlopCounterMode) "
        "over a float32 matmul peak measured in the same run at the threads the engine uses in all."
    )
