"""Train: a small, bounded sweep from the browser into a named store under the stores directory."""

import uuid

import streamlit as st

from core.dashboard import catalog, jobs, ui
from core.results import stores

LIMITS = {"steps": 2000, "d_model": 128, "n_layers": 4, "seeds": 3}  # keeps a shared deployment responsive

ui.require_router()
st.title("Train")
st.markdown(
    "Start a small sweep into a new store of your own without leaving the browser; within your session it "
    "resumes like `python -m core sweep` (runs already stored are skipped). One sweep runs at a time on this "
    f"server, within a compute budget of {jobs.budget():,} GFLOP per hour (about a core-hour) for all visitors "
    "together; a sweep is priced by counting its FLOPs before it starts. "
    f"Bounded to {LIMITS['steps']} steps, d_model ≤ {LIMITS['d_model']}, {LIMITS['n_layers']} layers, "
    f"{LIMITS['seeds']} seeds; bigger sweeps belong on the command line."
)
if stores.is_read_only():
    st.info(
        "Training is off here (Streamlit Community Cloud, ATTENTION_LAB_READONLY=1, or a read-only stores "
        "directory). Run `python -m core sweep --help` on your own machine instead."
    )
    st.stop()

me = st.session_state.setdefault("train_owner", uuid.uuid4().hex)  # this browser session; its sweep is its own


@st.fragment(run_every=1.0)
def progress():
    job = jobs.current()
    if job is None:
        return
    mine = job.owner == me
    if mine and st.session_state.get("tr_seen") == "running" and job.state != "running":
        st.session_state.tr_seen = job.state
        st.rerun()  # the whole app, so the sidebar's Store list and every page read the finished store now
    if mine:
        st.session_state.tr_seen = job.state
    if job.state == "running":
        who = "Your sweep" if mine else "A sweep started by another visitor"
        st.progress(job.progress, text=f"{who}: {job.label}: {job.progress:.0%}{jobs.describe_members(job)}")
        if mine and st.button("Cancel", type="secondary", key="tr_cancel"):
            job.stop()
            st.toast("Cancelling: the runs of finished jobs stay stored; the job in flight stops without its runs.")
    elif not mine:
        return
    elif job.state == "failed":
        st.error(f"The sweep failed: {job.error}. Every finished run is stored; start it again to resume.")
    else:
        c = job.counts
        stored = c["trained"] or c["skipped"]
        where = f"into the store `{job.store_name}`" if stored else "so the empty store was removed"
        st.success(
            f"Sweep {job.state}: trained {c['trained']} runs ({c['diverged']} diverged), "
            f"skipped {c['skipped']} already stored, {where}."
        )
        if stored:
            st.page_link(
                "pages/overview.py", label=f"→ open `{job.store_name}`", query_params={"store": job.store_name}
            )


running = jobs.current() is not None and jobs.current().state == "running"
with st.form("sweep"):
    rule = f"{stores.NAME_RULE}; created under the stores directory"
    name = st.text_input("Store name", "my-sweep", key="tr_store", help=rule)
    c = st.columns(2)
    attentions = c[0].multiselect("Parameterizations", catalog.ATTENTION_NAMES, ["standard", "stacked"], key="tr_attn")
    tasks = c[1].multiselect("Tasks", catalog.TASK_NAMES, ["reverse"], key="tr_tasks")
    c = st.columns([1, 1, 2, 1, 1, 1, 1])  # the lr chips need the room
    seeds = c[0].number_input("Seeds", 1, LIMITS["seeds"], 2, key="tr_seeds")
    steps = c[1].number_input("Steps", 10, LIMITS["steps"], 300, step=50, key="tr_steps")
    lrs = c[2].multiselect(
        "Learning rates", list(catalog.LR_GRID), [3e-3], format_func=lambda v: f"{v:g}", key="tr_lrs"
    )
    n_layers = c[3].number_input("Layers", 1, LIMITS["n_layers"], 2, key="tr_layers")
    d_model = c[4].selectbox("d_model", [16, 32, 64, 128], index=2, key="tr_d_model")
    n_heads = c[5].selectbox("n_heads", [1, 2, 4, 8], index=2, key="tr_heads")
    precision = c[6].selectbox(
        "Precision",
        list(catalog.PRECISIONS),
        key="tr_precision",
        help="fp32 is the reference; bf16 autocast is faster only on CPUs with bf16 units",
    )
    until = st.toggle(
        "Until solved",
        key="tr_until",
        help="Stop each member once it solves its task on validation (Steps is then the cap; the lr "
        "stays constant after the warmup), and stop an lr that can no longer be the best",
    )
    submitted = st.form_submit_button("Start sweep", type="primary", disabled=running, key="tr_start")

if submitted:
    try:
        path = stores.writable(name)
        model = {"n_layers": int(n_layers), "d_model": int(d_model), "n_heads": int(n_heads)}
        train = {"steps": int(steps), "precision": precision}
        if until:
            train.update(until="solved", schedule="constant")
        request = jobs.plan(attentions, tasks, int(seeds), train, model, lrs or None)
        with st.spinner("Checking the sweep…"):
            jobs.start(str(path), request, owner=me, name=name)  # creates the store (a direct child of the root)
        st.session_state.tr_seen = "running"
        st.rerun()  # the sidebar ran before the store existed: list it now
    except (ValueError, RuntimeError) as err:
        st.error(str(err))
progress()
st.caption("Then pick the store in the sidebar to see its runs on every page.")
