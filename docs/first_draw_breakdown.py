"""Where a new visitor's first draw goes, as README states it: serve app.py on loopback (tests/test_browser.py's
server), open each page in a new chromium context with an empty cache, and print per page, in ms from navigation:
the app's script states, sidebar, title, first chart and every chart drawn as the page saw them, and the fetch of
the charts' plotly.js (static/plotly-cartesian.min.js; resource timing). Linux only; needs the dev extras.

    python docs/first_draw_breakdown.py
"""

import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from playwright.sync_api import sync_playwright  # noqa: E402
from test_browser import ALL_CHARTS_DRAWN, ARGS, CHART_PAGES, CHROMIUM, FINISHED, PAGES, serving  # noqa: E402

MARKS = """
window.__m = {};
const mark = (k) => { if (!(k in window.__m)) window.__m[k] = Math.round(performance.now()); };
new MutationObserver(() => {
  const app = document.querySelector("[data-testid='stApp']");
  if (app) mark("state_" + app.getAttribute("data-test-script-state"));
  if (document.querySelector("[data-testid='stSidebar']")) mark("sidebar");
  if (document.querySelector("h1")) mark("title");
  if (document.querySelector(".lab-chart .main-svg")) mark("chart");
}).observe(document, {subtree: true, childList: true, attributes: true});
"""
PLOTLY = """performance.getEntriesByType("resource").filter(e => e.name.endsWith("/plotly-cartesian.min.js"))
  .map(e => ({plotly_js_requested: Math.round(e.startTime), plotly_js_arrived: Math.round(e.responseEnd)}))[0] || {}"""

with serving(Path(tempfile.mkdtemp())) as (url, _), sync_playwright() as p:
    browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
    for path in PAGES:
        context = browser.new_context(viewport={"width": 1400, "height": 1800})
        context.add_init_script(MARKS)
        page = context.new_page()
        page.goto(f"{url}/{path}", wait_until="commit")
        page.wait_for_selector(FINISHED, timeout=120_000)
        if path in CHART_PAGES:
            page.wait_for_function(ALL_CHARTS_DRAWN, timeout=90_000)
        every = {"every_chart": round(page.evaluate("performance.now()"))} if path in CHART_PAGES else {}
        print(path or "overview", json.dumps({**page.evaluate("window.__m"), **every, **page.evaluate(PLOTLY)}),
              flush=True)
        context.close()
    browser.close()
