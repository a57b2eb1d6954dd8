"""URL-synced widgets: every control's value lives in the page's query string, so a pasted link restores it."""

from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from urllib.parse import urlencode

import streamlit as st

SIDEBAR = "sidebar_url_keys"  # session state: the keys of the sidebar's URL widgets, as app.py drew them
_recorded: ContextVar[list[str] | None] = ContextVar("url_keys", default=None)  # per script-run thread


def _parse(raw: str, default, options=None, multi=False, low=None, high=None):
    """A URL value as the widget takes it; anything out of its options or range gives the default (or the
    nearest bound), never an exception."""
    if multi:
        return [v for v in raw.split(",") if options is None or v in options]
    if isinstance(default, bool):
        return raw.lower() in ("1", "true", "yes", "on")
    if isinstance(default, int | float):
        try:
            value = type(default)(raw)
        except ValueError:
            return default
        if value != value or value in (float("inf"), float("-inf")):
            return default
        if low is not None:
            value = max(value, type(default)(low))
        if high is not None:
            value = min(value, type(default)(high))
        return value if options is None or value in options else default
    return raw if options is None or raw in options else default


def _from_url(key: str, default, options=None, multi=False, low=None, high=None):
    """The widget's value: the URL's when the URL changed since this session last wrote it (a pasted link,
    or a page link's filters, win over the sidebar's state), else the session's choice."""
    written = st.session_state.setdefault("_url_written", {})
    raw = st.query_params.get(key)
    if key in st.session_state and (raw is None or raw == written.get(key)):
        if options is not None:  # keep the user's choice, minus options that no longer exist
            current = st.session_state[key]
            if multi:
                st.session_state[key] = [v for v in current if v in options]
            elif current not in options:
                st.session_state[key] = default
        return
    st.session_state[key] = default if raw is None else _parse(raw, default, options, multi, low, high)


def _text(value) -> str:
    if isinstance(value, list | tuple):
        return ",".join(map(str, value))
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def _to_url(key: str, value, default=None) -> None:
    """Stage the widget's value for the URL. A default not already in the URL stays out of it: opening a link
    adds nothing, so it leaves no history entry to go Back through (the browser gets one per URL change)."""
    text = _text(value)
    st.session_state.setdefault("_url_written", {})[key] = text
    if key in st.query_params or text != _text(default):
        st.session_state.setdefault("_url_pending", {})[key] = text


def stage(key: str, text: str) -> None:
    """A value a page keeps in the URL itself (not a widget's), written with the run's others."""
    st.session_state.setdefault("_url_pending", {})[key] = text


def flush() -> None:
    """Write the run's staged values in one URL change (app.py calls it once a page has run): each
    assignment to st.query_params would be its own history entry, eight of them for one click."""
    pending = st.session_state.pop("_url_pending", {})
    changed = {k: v for k, v in pending.items() if st.query_params.get(k) != v}
    if changed:
        st.query_params.update(changed)


def current(key: str) -> str | None:
    """A URL-synced value as this run leaves it: staged, else in the URL."""
    return st.session_state.get("_url_pending", {}).get(key, st.query_params.get(key))


def url_widget(widget, label: str, key: str, default, options=None, multi=False, **kw):
    """A widget initialised from st.query_params[key] and written back, so a pasted link restores it."""
    _from_url(key, default, options, multi, kw.get("min_value"), kw.get("max_value"))
    args = (label, options) if options is not None else (label,)
    value = widget(*args, key=key, **kw)
    _to_url(key, value, default)
    if (keys := _recorded.get()) is not None:
        keys.append(key)
    return value


@contextmanager
def recording(name: str = SIDEBAR):
    """Note the key of every url_widget drawn inside, and keep them in session state under `name`: the sidebar
    names its own keys, so a plain link (href) carries each one without a hand-kept list."""
    keys: list[str] = []
    token = _recorded.set(keys)
    try:
        yield keys
    finally:
        _recorded.reset(token)
        st.session_state[name] = tuple(keys)


def evidence(attention: str, column: str, axes: dict[str, str], best: str) -> tuple[str, dict[str, str]]:
    """Where a verdict-matrix cell's evidence is drawn: (page, its query params). A task column opens Loss curves
    of the pair on that task, a scan column ("scan: <axis title>"; `axes` maps titles to axis names) the Scaling
    page on that axis; both with standard beside it, at each one's `best` lr."""
    pair = {"attn": ",".join(dict.fromkeys(["standard", attention])), "lr": best}
    if column.startswith("scan: "):
        return "pages/scaling.py", {**pair, "axis": axes[column.removeprefix("scan: ")]}
    return "pages/loss_curves.py", {**pair, "tasks": column}


def cell_runs(cell, size: str) -> tuple[str, dict[str, str]]:
    """Where one cell's seeds are listed (a chart click on the cell): the Runs page at their task, parameterization,
    model size, training length and lr, the seeds ticked so their curves are drawn. cell: the runs (one lr)."""
    one = lambda col: ",".join(dict.fromkeys(map(str, cell[col])))  # noqa: E731
    params = {"tasks": one("task"), "attn": one("attention"), "size": size, "steps": str(int(cell.steps.max()))}
    return "pages/runs.py", {**params, "lr": f"{cell.lr.iloc[0]:g}", "rsel": ",".join(cell.run_id)}


def lr_curves(attention: str, task: str, lr: float) -> tuple[str, dict[str, str]]:
    """Where a Learning-rate point's curves are drawn: Loss curves of that parameterization and task at that lr."""
    return "pages/loss_curves.py", {"attn": attention, "tasks": task, "lr": f"{lr:g}"}


def open_page(page: str, params: dict[str, str]) -> None:
    """Go to a page in this session (a chart click): the sidebar's state kept, `params` over it, one URL change.
    This page's staged values are dropped: written after the switch, they would overwrite the new page's."""
    keep = sidebar_state()
    st.session_state.pop("_url_pending", None)
    st.switch_page(page, query_params={**keep, **params})


def sidebar_state() -> dict[str, str]:
    """The sidebar's widgets' values as the URL holds them (what a plain link must carry to keep them)."""
    return {k: v for k in st.session_state.get(SIDEBAR, ()) if (v := current(k)) is not None}


def href(page: str, params: dict[str, str], keep: dict[str, str]) -> str:
    """A plain link to a page (a full load: a new session) with `keep` (sidebar_state()) and `params` over it;
    relative, so it holds under any base path the server is given."""
    return f"{Path(page).stem}?{urlencode({**keep, **params})}"
