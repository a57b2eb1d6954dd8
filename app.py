"""attention-lab: the router (st.navigation over pages/) and the sidebar every page shares."""

import streamlit as st

from core.analysis.blas import one_blas_thread
from core.dashboard import catalog, ui, urls
from core.dashboard.plots import ordered
from core.results import stores

st.set_page_config(page_title="attention-lab", page_icon=":material/hub:", layout="wide")
one_blas_thread()  # visitors' analyses beside each other and a Train child: core/analysis/blas.py

PAGES = [
    st.Page("pages/overview.py", title="Overview", icon=":material/dashboard:", default=True),
    st.Page("pages/scaling.py", title="Scaling", icon=":material/trending_up:"),
    st.Page("pages/loss_curves.py", title="Loss curves", icon=":material/show_chart:"),
    st.Page("pages/runs.py", title="Runs", icon=":material/table_rows:"),
    st.Page("pages/learning_rate.py", title="Learning rate", icon=":material/tune:"),
    st.Page("pages/parameters.py", title="Parameters", icon=":material/functions:"),
    st.Page("pages/runtime.py", title="Runtime", icon=":material/timer:"),
    st.Page("pages/similarity.py", title="Similarity", icon=":material/compare:"),
    st.Page("pages/attention_maps.py", title="Attention maps", icon=":material/grid_on:"),
    st.Page("pages/in_practice.py", title="In practice", icon=":material/public:"),
    st.Page("pages/train.py", title="Train", icon=":material/model_training:"),
]


def sidebar() -> dict:
    with st.sidebar, urls.recording():  # the keys its URL widgets use: the Overview's links carry them
        st.header("Runs")
        names = stores.available()
        asked = st.query_params.get("store")
        if "store" not in st.session_state and asked is not None and asked not in names:
            st.warning(stores.UNAVAILABLE)  # one sentence for missing and forbidden alike; no path echoed
        name = urls.url_widget(
            st.selectbox,
            "Store",
            "store",
            stores.BUNDLED_NAME,
            options=names,
            help="`data`: the bundled lr-grid sweep; others: stores under the configured stores directory",
        )
        path = stores.resolve(name) or stores.BUNDLED
        runs = ui.view(path).runs()
        ui.unreadable_notice(path)
        tasks = [t for t in catalog.TASK_NAMES if t in set(runs.get("task", []))]
        attns = ordered(runs.get("attention", []))
        chosen_tasks = urls.url_widget(st.multiselect, "Tasks", "tasks", tasks, options=tasks, multi=True)
        chosen = urls.url_widget(st.multiselect, "Parameterizations", "attn", attns, options=attns, multi=True)
        sizes = ui.size_labels(runs).value_counts().index.tolist() if not runs.empty else []
        size = urls.url_widget(st.selectbox, "Model size", "size", sizes[0] if sizes else None, options=sizes)
        steps_options = [ui.LONGEST, *(str(v) for v in sorted(set(runs.get("steps", []))))]
        steps = urls.url_widget(
            st.selectbox,
            "Training steps",
            "steps",
            ui.LONGEST,
            options=steps_options,
            help="longest per task: each task at the most steps the store trained it for (a task retrained longer, "
            "to rule out truncation, replaces its shorter runs); or one length for every task",
        )
        precisions = sorted(set(runs.get("precision", [])), key=lambda v: v != "fp32")  # fp32, the reference, first
        precision = urls.url_widget(
            st.selectbox,
            "Precision",
            "precision",
            precisions[0] if precisions else None,
            options=precisions,
            help="fp32: the reference; bf16: trained under bfloat16 autocast (docs/cli.md: Precision)",
        )
        lr_options = [ui.BEST, ui.ALL, *(f"{v:g}" for v in sorted(set(runs.get("lr", []))))]
        lr = urls.url_widget(
            st.selectbox,
            "Learning rate",
            "lr",
            ui.BEST,
            options=lr_options,
            help="best: each parameterization at the lr with its lowest mean validation loss, per task; "
            "all: every lr (the Learning rate and Overview pages); or one fixed lr for every parameterization",
        )
        with st.expander("Provenance"):
            for p in ui.view(path).provenance()[:3]:
                st.caption(f"`{p['command']}` · {p['date']} · torch {p['versions'].get('torch', '?')}")
    return {
        "store": str(path),
        "store_name": name,
        "tasks": chosen_tasks,
        "attentions": chosen,
        "size": size,
        "steps": steps,
        "precision": precision,
        "lr": lr,
    }


page = st.navigation(PAGES)
with ui.unreadable_as_caption():
    try:
        st.session_state["selection"] = sidebar()
        page.run()
    finally:  # st.stop() included: the run's URL values in one change, one history entry at most
        urls.flush()
ui.release_freed_memory()
