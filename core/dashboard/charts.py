"""Charts as a Streamlit custom component (v2), drawn by plotly.js's cartesian build, which the app serves itself.

`st.plotly_chart` loads Streamlit's plotly chunk: every trace type, 4.7 MB, about a second of a new visitor's
two cores to fetch and evaluate before a page's first chart (most of a 3 s first draw). Every figure here is
scatter, bar or heatmap, which the cartesian build (1.5 MB, the plotly.js version plotly.py builds figures for)
draws. It lies in static/ (`server.enableStaticServing`) and is loaded once per browser tab; charts are then
drawn one per animation frame in page order, so the first screen paints before the charts below it.

The component takes the figure as its data (AppTest reads it there: `spec`), follows Streamlit's theme through
its CSS variables, and returns a click on a point, bar or heatmap cell to Python (`draw`'s return value).
"""

import json
import re
from pathlib import Path

import plotly.io as pio
import streamlit as st

BUNDLE = "plotly-cartesian.min.js"
PATH = Path(__file__).resolve().parents[2] / "static" / BUNDLE  # Streamlit serves static/ beside app.py
HEIGHT = 450  # plotly's default, for a figure that sets none
NAME = "attention_lab.chart"

# Transparent backgrounds and grey grid lines read on the light and the dark theme; the font's colour is the
# theme's text colour (--st-text-color), read in the browser.
_TEMPLATE = {
    "layout": {
        "paper_bgcolor": "rgba(0,0,0,0)",
        "plot_bgcolor": "rgba(0,0,0,0)",
        "font": {"family": "Source Sans, sans-serif"},
        "xaxis": {"gridcolor": "rgba(128,128,128,0.25)", "zerolinecolor": "rgba(128,128,128,0.5)"},
        "yaxis": {"gridcolor": "rgba(128,128,128,0.25)", "zerolinecolor": "rgba(128,128,128,0.5)"},
    }
}

# window.__plotly: one promise of the library per tab (Streamlit switches pages without a page load). Pages live
# one level below the app's root (<root>/<page>, the main page at <root>/), so "app/static/" relative to the page
# is the app's static folder under any base path, Community Cloud's included.
_LOAD = """const w = window;
const plotly = () => {
  if (!w.__plotly) {
    w.__plotly = new Promise((ok, fail) => {
      const s = document.createElement("script");
      s.src = new URL("app/static/BUNDLE", window.location.href).href;
      s.onload = () => ok(w.Plotly); s.onerror = fail;
      document.head.appendChild(s);
    });
    w.__plotly.catch(() => { w.__plotly = null; });
  }
  return w.__plotly;
};""".replace("BUNDLE", BUNDLE)

# Charts draw in page order, one per animation frame (w.__draws). The theme's text colour is polled: a theme
# switch changes Streamlit's CSS variables without drawing the component again.
_JS = (
    _LOAD
    + """
const textColour = (el) => {
  const style = getComputedStyle(el);
  return style.getPropertyValue("--st-text-color").trim() || style.color;
};
const point = (p) => ({trace: p.data.name ?? null, x: p.x ?? null, y: p.y ?? null, z: p.z ?? null,
  customdata: p.customdata ?? null, index: p.pointNumber ?? null});

export default function ({ data, parentElement, setTriggerValue }) {
  const spec = JSON.parse(data.spec);
  let el = parentElement.querySelector(".lab-chart");
  if (!el) { el = document.createElement("div"); el.className = "lab-chart"; parentElement.appendChild(el); }
  el.style.width = "100%"; el.style.height = data.height + "px";
  let live = true, theme = null, resized = null;
  const draw = (P) => new Promise((done) => requestAnimationFrame(() => {
    if (!live || !el.isConnected) return done();
    el.__font = spec.layout.template.layout.font.color = textColour(el);
    theme = setInterval(() => {
      const now = el.isConnected && textColour(el);
      if (now && now !== el.__font) { el.__font = now; P.relayout(el, {"font.color": now}); }
    }, 500);
    let drawn = false;  // a width change (window, sidebar) redraws at the new width; its first report is the draw
    resized = new ResizeObserver(() => { if (drawn && el.isConnected) P.Plots.resize(el); drawn = true; });
    resized.observe(el);
    P.react(el, spec.data, spec.layout, spec.config).then(() => {
      el.removeAllListeners && el.removeAllListeners("plotly_click");
      el.on("plotly_click", (ev) => setTriggerValue("click", point(ev.points[0])));
    }).then(done, done);
  }));
  const failed = () => {
    el.textContent = "The chart library (BUNDLE) did not load: the app serves it from static/ with " +
      "server.enableStaticServing, set in .streamlit/config.toml.";
  };
  w.__draws = (w.__draws || Promise.resolve()).then(plotly).then(draw, failed);
  return () => {  // drawn again (new data) or gone: stop watching; a chart that is gone is purged
    live = false; clearInterval(theme); resized && resized.disconnect();
    if (!el.isConnected && w.Plotly) w.Plotly.purge(el);
  };
}
""".replace("BUNDLE", BUNDLE)
)

# The library alone, once the page has been drawn (a pause, then the browser's next idle moment): pages without
# charts mount it so that the chart page a visitor opens next finds it ready.
_WARM_JS = (
    _LOAD
    + """
export default function () {
  const idle = window.requestIdleCallback || ((f) => setTimeout(f, 0));
  const t = setTimeout(() => idle(() => plotly().catch(() => {}), {timeout: 5000}), 1000);
  return () => clearTimeout(t);
}
"""
)

# Registered once per process (a second registration of a name replaces the first, with a warning)
_CHART = st.components.v2.component(NAME, js=_JS, isolate_styles=False)  # plotly's own CSS lives in <head>
_WARM = st.components.v2.component("attention_lab.warm", js=_WARM_JS)


def draw(fig, name: str, config: dict) -> dict | None:
    """The figure, full width (redrawn when that changes), at its layout's height; config is plotly.js's (modebar,
    image export). Returns the point, bar or cell clicked in the run the click started ({trace, x, y, z,
    customdata, index}), else None."""
    spec = fig.to_plotly_json()
    layout = {**spec["layout"], "template": _TEMPLATE}
    layout.pop("width", None)
    body = pio.json.to_json_plotly({"data": spec["data"], "layout": layout, "config": config})
    height = int(layout.get("height") or HEIGHT)
    key = f"chart-{re.sub(r'[^A-Za-z0-9_-]', '_', name)}"
    result = _CHART(data={"spec": body, "height": height}, key=key, height=height, on_click_change=lambda: None)
    return getattr(result, "click", None)


def warm() -> None:
    """Load the library once this page has been drawn and the browser is idle (an element with no content)."""
    _WARM(key="plotly-warm", height=0)


def spec(data: str) -> dict | None:
    """The figure (data, layout, config) a chart component carries, from its JSON data; None for any other."""
    try:
        return json.loads(json.loads(data)["spec"])
    except (ValueError, KeyError, TypeError):
        return None
