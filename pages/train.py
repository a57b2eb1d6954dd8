"""Train: a small, bounded sweep from the browser into a local store, with progress and cancel."""

from pathlib import Path

import streamlit as st

from core import jobs, sweep, ui
from core.attention import ATTENTION
from core.config import TrainConfig
from core.tasks import TASKS

LIMITS = {"steps": 2000, "d_model": 128, "n_layers": 4, "seeds": 3}  # keeps a shared deployment responsive

ui.require_router()
st.title("Train")
st.markdown(
    "Start a small sweep into a local store without leaving the browser; it resumes like "
    "`python -m core sweep` (runs already stored are skipped). One sweep runs at a time. "
    f"Bounded to {LIMITS['steps']} steps, d_model ≤ {LIMITS['d_model']}, {LIMITS['n_layers']} layers, "
    f"{LIMITS['seeds']} seeds; bigger sweeps belong on the command line."
)

target = st.text_input("Store to write", "store", help="a local directory; the bundled `data/` is never written")
path = Path(target) if Path(target).is_absolute() else ui.ROOT / target
if path.resolve() == ui.BUNDLED.resolve():
    st.error("`data/` holds the bundled results and is regenerated only by the documented command; pick another store.")
    st.stop()
if ui.is_read_only(path):
    st.info(
        "Training is off here (Streamlit Community Cloud, ATTENTION_LAB_READONLY=1, or a read-only store). "
        "Run `python -m core sweep --help` on your own machine instead."
    )
    st.stop()


@st.fragment(run_every=1.0)
def progress():
    job = jobs.current()
    if job is None:
        return
    if job.state == "running":
        st.progress(job.progress, text=f"{job.label}: {job.progress:.0%}")
        if st.button("Cancel", type="secondary"):
            job.cancel.set()
            st.toast("Cancelling after the current evaluation; finished runs stay stored.")
    elif job.state == "failed":
        st.error(f"The sweep failed:\n\n```\n{job.error}\n```")
    else:
        c = job.counts
        st.success(
            f"Sweep {job.state}: trained {c['trained']} runs ({c['diverged']} diverged), "
            f"skipped {c['skipped']} already stored, into `{job.store}`."
        )


running = jobs.current() is not None and jobs.current().state == "running"
with st.form("sweep"):
    c = st.columns(2)
    attentions = c[0].multiselect("Parameterizations", list(ATTENTION), default=["standard", "stacked"])
    tasks = c[1].multiselect("Tasks", list(TASKS), default=["reverse"])
    c = st.columns(5)
    seeds = c[0].number_input("Seeds", 1, LIMITS["seeds"], 2)
    steps = c[1].number_input("Steps", 10, LIMITS["steps"], 300, step=50)
    n_layers = c[2].number_input("Layers", 1, LIMITS["n_layers"], 2)
    d_model = c[3].selectbox("d_model", [16, 32, 64, 128], index=2)
    n_heads = c[4].selectbox("n_heads", [1, 2, 4, 8], index=2)
    submitted = st.form_submit_button("Start sweep", type="primary", disabled=running)

if submitted:
    try:
        model = {"n_layers": int(n_layers), "d_model": int(d_model), "n_heads": int(n_heads)}
        plan = sweep.plan(attentions, tasks, int(seeds), TrainConfig(steps=int(steps)), model)
        if not plan:
            raise ValueError("attention, task: pick at least one of each")
        jobs.start(str(path), plan)
    except (ValueError, RuntimeError) as err:
        st.error(str(err))
progress()
st.caption(f"Then point the sidebar's store at `{target}` to see the runs on every page.")
