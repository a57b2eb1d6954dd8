"""What the browser suites share: Debian's chromium and its flags, a fresh server per module, what a drawn page
looks like to the page's own JavaScript."""

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
# A sub-page first: a link opened on a freshly started server must get the router and sidebar too.
PAGES = [
    "loss_curves",
    "",
    "scaling",
    "runs",
    "learning_rate",
    "parameters",
    "runtime",
    "similarity",
    "attention_maps",
    "in_practice",
    "train",
]
# The app root's script state: "initial" on a fresh load, "running", then "notRunning" once the run has finished.
FINISHED = "[data-testid='stApp'][data-test-script-state='notRunning']"
# The Overview draws no chart by default (its matrix is HTML; its seeds strip is drawn when opened).
CHART_PAGES = tuple(p for p in PAGES if p not in ("", "runs", "train"))
# Every chart element on the page (core/dashboard/charts.py) holds a drawn plotly figure.
ALL_CHARTS_DRAWN = (
    "() => { const c = [...document.querySelectorAll('.lab-chart')]; "
    "return c.length > 0 && c.every((d) => d.querySelector('.main-svg')); }"
)
# Streamlit's own plotly chunk (4.7 MB): no page loads it, the charts use the app's cartesian build.
STREAMLIT_PLOTLY = "performance.getEntriesByType('resource').filter(e => e.name.includes('/PlotlyChart.')).length"
NEW_VISITOR_ROUNDS = 3  # with FIRST_DRAW_OUT: these machines vary by a second from minute to minute
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_or_skip():
    if Path(CHROMIUM).exists() and shutil.which("chromium"):
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"{CHROMIUM} is missing under CI: .ci/run installs Debian's chromium")
    pytest.skip(f"{CHROMIUM} not installed (apt-get install chromium); CI runs this test")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serving(stores):
    """A fresh streamlit server on a free loopback port: (url, process)."""
    chromium_or_skip()
    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        "app.py",
        "--server.headless",
        "true",
        "--server.port",
        str(port),
        "--server.address",
        "127.0.0.1",
        "--browser.gatherUsageStats",
        "false",
    ]
    env = {**os.environ, "ATTENTION_LAB_STORES": str(stores)}
    env.pop("ATTENTION_LAB_READONLY", None)
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 90
    while time.time() < deadline:
        try:
            if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                break
        except OSError:
            time.sleep(0.3)
    else:
        proc.kill()
        pytest.fail("streamlit did not come up")
    try:
        yield url, proc
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def peak_rss_mb(pid: int) -> float:
    """The process's peak resident memory (VmHWM), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def first_draw(page, server: str, path: str) -> tuple[float, float]:
    """Seconds from navigation until the script run finished with sidebar and title in, and until every chart is
    drawn."""
    start = time.perf_counter()
    page.goto(f"{server}/{path}", wait_until="commit")
    page.wait_for_selector(FINISHED, timeout=120_000)  # the page's first script run has finished
    page.wait_for_selector("[data-testid='stSidebar']", timeout=90_000)
    page.wait_for_selector("h1", timeout=90_000)
    if not path:  # the Overview's first screen: the answers and the verdict matrix, HTML drawn with the run
        page.wait_for_selector("table td[title]", timeout=90_000)
    finished = time.perf_counter() - start
    if path in CHART_PAGES:  # every chart drawn (the first also waits for plotly.js)
        page.wait_for_function(ALL_CHARTS_DRAWN, timeout=90_000)
    return finished, time.perf_counter() - start


WATCH_RUN = """window.__ran = false; new MutationObserver(() => {
  if (document.querySelector("[data-testid='stApp'][data-test-script-state='running']")) window.__ran = true;
}).observe(document.querySelector("[data-testid='stApp']"), {attributes: true});"""


def open_from_sidebar(page, path: str) -> None:
    """Click a page in the sidebar's navigation (Streamlit switches pages without a page load) and wait for that
    page's script run to finish."""
    page.evaluate(WATCH_RUN)
    page.locator(f"[data-testid='stSidebarNav'] a[href$='/{path}']").first.click()
    page.wait_for_function("window.__ran", timeout=90_000)
    page.wait_for_selector(FINISHED, timeout=90_000)
