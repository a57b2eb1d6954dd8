"""The served app's memory, as README states it: serve app.py on loopback, open every page once in Debian's
chromium, and print the server's RSS after each page and its peak (VmHWM). Linux only; needs the dev extras.

    python docs/measure_memory.py [PAGE,PAGE,...]     (default: every page, Overview first; '' is Overview)
"""

import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["", "loss_curves", "learning_rate", "parameters", "runtime", "similarity", "attention_maps", "in_practice",
         "train"]
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]


def _mb(pid: int) -> tuple[int, int]:
    status = dict(line.split(":", 1) for line in open(f"/proc/{pid}/status"))
    return int(status["VmRSS"].split()[0]) // 1024, int(status["VmHWM"].split()[0]) // 1024


def main(pages: list[str]) -> None:
    from playwright.sync_api import sync_playwright

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true", "--server.port",
           str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"]
    server = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                    break
            except OSError:
                time.sleep(0.3)
        print(f"{'started':16s} RSS {_mb(server.pid)[0]} MB")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1800})
            for path in pages:
                page.goto(f"{url}/{path}")
                time.sleep(2)
                for _ in range(240):  # until the script run ends (the status widget goes away)
                    if not page.query_selector('[data-testid="stStatusWidget"]'):
                        break
                    time.sleep(0.5)
                time.sleep(1)
                rss, peak = _mb(server.pid)
                print(f"{path or 'overview':16s} RSS {rss} MB, peak so far {peak} MB")
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main(sys.argv[1].split(",") if len(sys.argv) > 1 else PAGES)
