"""Charts drawn in the page by plotly.js's cartesian build, which the app serves itself.

`st.plotly_chart` loads Streamlit's plotly chunk: every trace type, 4.7 MB, about a second of a new visitor's
two cores to fetch and evaluate before a page's first chart (most of a 3 s first draw). Every figure here is
scatter, bar or heatmap, which the cartesian build (1.5 MB, the plotly.js version plotly.py builds figures for)
draws. It lies in static/ (`server.enableStaticServing`) and is loaded once per browser tab; charts are then
drawn one per animation frame in page order, so the first screen paints before the charts below it.
"""

import json
import re
import zlib
from pathlib import Path

import plotly.io as pio
import streamlit as st

BUNDLE = "plotly-cartesian.min.js"
PATH = Path(__file__).resolve().parents[2] / "static" / BUNDLE  # Streamlit serves static/ beside app.py
HEIGHT = 450  # plotly's default, for a figure that sets none

# Transparent backgrounds and grey grid lines read on the light and the dark theme; the font's colour is the
# page's, read in the browser.
_TEMPLATE = {
    "layout": {
        "paper_bgcolor": "rgba(0,0,0,0)",
        "plot_bgcolor": "rgba(0,0,0,0)",
        "font": {"family": "Source Sans, sans-serif"},
        "xaxis": {"gridcolor": "rgba(128,128,128,0.25)", "zerolinecolor": "rgba(128,128,128,0.5)"},
        "yaxis": {"gridcolor": "rgba(128,128,128,0.25)", "zerolinecolor": "rgba(128,128,128,0.5)"},
    }
}

# window.__plotly: one promise of the library per tab (Streamlit switches pages without a page load). Its URL is
# resolved against the app's own index script (<base>/static/js/), so a base URL path (Community Cloud) is kept.
_LOAD = """const w = window;
if (!w.__plotly) {
  const index = document.querySelector('script[type="module"][src*="/js/index."]');
  const src = index ? new URL("../../app/static/BUNDLE", index.src).href : "/app/static/BUNDLE";
  w.__plotly = new Promise((ok, fail) => {
    const s = document.createElement("script");
    s.src = src; s.onload = () => ok(w.Plotly); s.onerror = fail;
    document.head.appendChild(s);
  });
  w.__plotly.catch(() => { w.__plotly = null; });
}""".replace("BUNDLE", BUNDLE)

_DRAW = """<div id="{id}" class="lab-chart" style="width:100%;height:{height}px"></div>
<script type="application/json" id="{id}-spec">{spec}</script>
<script>
(() => {{
{load}
  const id = "{id}";
  const draw = (P) => new Promise((done) => requestAnimationFrame(() => {{
    w.__plots = w.__plots || new Set();
    for (const gd of w.__plots) if (!gd.isConnected) {{ gd.__resized.disconnect(); P.purge(gd); w.__plots.delete(gd); }}
    const el = document.getElementById(id);
    if (!el) return done();
    const spec = JSON.parse(document.getElementById(id + "-spec").textContent);
    el.__font = spec.layout.template.layout.font.color = getComputedStyle(el).color;
    w.__plots.add(el);
    // the page's text colour changes with the theme (the settings menu): every chart drawn follows it
    w.__theme = w.__theme || setInterval(() => {{
      for (const gd of w.__plots) {{
        const now = gd.isConnected && getComputedStyle(gd).color;
        if (now && now !== gd.__font) {{ gd.__font = now; P.relayout(gd, {{"font.color": now}}); }}
      }}
    }}, 500);
    let drawn = false;  // a width change (window, sidebar) redraws at the new width; its first report is the draw
    el.__resized = new ResizeObserver(() => {{ if (drawn && el.isConnected) P.Plots.resize(el); drawn = true; }});
    el.__resized.observe(el);
    P.newPlot(el, spec.data, spec.layout, spec.config).then(done, done);
  }}));
  const failed = () => {{
    const el = document.getElementById(id);
    if (el) el.textContent = "The chart library ({bundle}) did not load: the app serves it from static/ with " +
      "server.enableStaticServing, set in .streamlit/config.toml.";
  }};
  w.__draws = (w.__draws || Promise.resolve()).then(() => w.__plotly).then(draw, failed);
}})();
</script>"""

# The library alone, once the page has been drawn (a pause, then the browser's next idle moment): pages without
# charts call it so that the chart page a visitor opens next finds it ready.
_WARM = """<script>
(() => {
  const idle = window.requestIdleCallback || ((f) => setTimeout(f, 0));
  setTimeout(() => idle(() => { LOAD }, {timeout: 5000}), 1000);
})();
</script>""".replace("LOAD", _LOAD.replace("\n", "\n    "))

_SPEC = re.compile(r'<script type="application/json" id="chart-[\w-]*-spec">(.*?)</script>', re.S)


def _escape(text: str) -> str:
    """JSON safe inside a <script> element: no "</script>" or "<!--" can end it early."""
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def draw(fig, name: str, config: dict) -> None:
    """The figure, full width (redrawn when that changes), at its layout's height; config is plotly.js's (modebar,
    image export)."""
    spec = fig.to_plotly_json()
    layout = {**spec["layout"], "template": _TEMPLATE}
    layout.pop("width", None)
    body = pio.json.to_json_plotly({"data": spec["data"], "layout": layout, "config": config})
    chart_id = f"chart-{re.sub(r'[^A-Za-z0-9_-]', '_', name)}-{zlib.crc32(body.encode()):08x}"
    html = _DRAW.format(
        id=chart_id, height=int(layout.get("height") or HEIGHT), spec=_escape(body), load=_LOAD, bundle=BUNDLE
    )
    st.html(html, unsafe_allow_javascript=True)


def warm() -> None:
    """Load the library once this page has been drawn and the browser is idle (an element with no content)."""
    st.html(_WARM, unsafe_allow_javascript=True)


def spec(html: str) -> dict | None:
    """The figure (data, layout, config) a chart element carries; None for any other HTML."""
    match = _SPEC.search(html)
    return json.loads(match.group(1)) if match else None
