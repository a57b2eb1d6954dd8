"""attention-lab: the router (st.navigation over pages/) and the sidebar every page shares."""

from pathlib import Path

import streamlit as st

from core import store, ui
from core.plots import ordered
from core.tasks import TASKS

st.set_page_config(page_title="attention-lab", page_icon=":material/hub:", layout="wide")

PAGES = [
    st.Page("pages/overview.py", title="Overview", icon=":material/dashboard:", default=True),
    st.Page("pages/loss_curves.py", title="Loss curves", icon=":material/show_chart:"),
    st.Page("pages/parameters.py", title="Parameters", icon=":material/functions:"),
    st.Page("pages/runtime.py", title="Runtime", icon=":material/timer:"),
    st.Page("pages/similarity.py", title="Similarity", icon=":material/compare:"),
    st.Page("pages/attention_maps.py", title="Attention maps", icon=":material/grid_on:"),
    st.Page("pages/in_practice.py", title="In practice", icon=":material/public:"),
    st.Page("pages/train.py", title="Train", icon=":material/model_training:"),
]


def sidebar() -> dict:
    with st.sidebar:
        st.header("Runs")
        where = ui.url_widget(
            st.text_input,
            "Store directory",
            "store",
            "data",
            help="`data` is the bundled default sweep; any directory `python -m core sweep` wrote",
        )
        path = Path(where) if Path(where).is_absolute() else ui.ROOT / where
        runs = ui.runs(path)
        if not path.is_dir():
            st.warning(f"`{where}` is not a directory.")
        tasks = [t for t in TASKS if t in set(runs.get("task", []))]
        names = ordered(runs.get("attention", []))
        chosen_tasks = ui.url_widget(st.multiselect, "Tasks", "tasks", tasks, options=tasks, multi=True)
        chosen = ui.url_widget(st.multiselect, "Parameterizations", "attn", names, options=names, multi=True)
        sizes = runs.apply(ui.size_label, axis=1).value_counts().index.tolist() if not runs.empty else []
        size = ui.url_widget(st.selectbox, "Model size", "size", sizes[0] if sizes else None, options=sizes)
        with st.expander("Provenance"):
            for p in store.provenance_of(path)[:3]:
                st.caption(f"`{p['command']}` · {p['date']} · torch {p['versions'].get('torch', '?')}")
    return {"store": str(path), "tasks": chosen_tasks, "attentions": chosen, "size": size}


page = st.navigation(PAGES)
st.session_state["selection"] = sidebar()
page.run()
