"""Warm plotly.js in the browser while a page without charts sits idle, so the visitor's next chart page
does not wait for it.

Streamlit loads its plotly chunk (4.7 MB, about 0.7 s of one CPU core to evaluate) only when a page's first
chart arrives. A visitor who lands on the Overview and then opens a chart page would pay that then; the
Overview (and Runs) ask for the same chunk once the browser is idle after drawing them, and Streamlit's own
import later finds the module already evaluated (one module per URL). Starting it on a chart page itself
gains nothing: the fetch and evaluation then compete with the page being computed and drawn (measured).
"""

from pathlib import Path

import streamlit as st

_JS = Path(st.__file__).parent / "static" / "static" / "js"
CHUNK = next((p.name for p in sorted(_JS.glob("PlotlyChart.*.js"))), None)  # None: another Streamlit build

# Resolved against the app's own index script, so a base URL path (Community Cloud) is kept; after the page has
# been drawn (a pause, then the browser's next idle moment), so it never delays this page.
SCRIPT = """<script>
(() => {{
  const index = document.querySelector('script[type="module"][src*="/js/index."]');
  if (!index) return;
  const load = () => import(new URL("{chunk}", index.src).href).catch(() => {{}});
  const idle = window.requestIdleCallback || ((f) => setTimeout(f, 0));
  setTimeout(() => idle(load, {{timeout: 5000}}), {delay_ms});
}})();
</script>"""
DELAY_MS = 1000
HTML = SCRIPT.format(chunk=CHUNK, delay_ms=DELAY_MS) if CHUNK else None


def plotly_js() -> None:
    """Emit the warm-up (an element with no content); a page without charts calls it last."""
    if HTML is not None:
        st.html(HTML, unsafe_allow_javascript=True)
