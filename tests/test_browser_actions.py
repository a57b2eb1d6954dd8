"""What a visitor does in a real browser: clicks that open evidence and runs, a theme switch, PNG export, a
shared link, the Overview warming plotly.js, a Train start."""

from urllib.parse import parse_qsl, urlsplit

import pytest
from browser import ALL_CHARTS_DRAWN, ARGS, CHROMIUM, FINISHED, ROOT, first_draw, open_from_sidebar

pytestmark = pytest.mark.browser


def test_a_click_on_a_verdict_cell_opens_its_evidence(server):
    """The Overview's verdict matrix (a link in HTML, which AppTest cannot follow): the first cell, the first
    parameterization after standard on the first task, shows its numbers on hover and opens Loss curves of that
    pair on that task."""
    from playwright.sync_api import sync_playwright

    server, _ = server
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1800})
        page.goto(server, wait_until="commit")
        cell = page.locator("table td[title]").first
        cell.wait_for(timeout=90_000)
        assert "stacked vs standard on associative_recall" in cell.get_attribute("title")
        cell.locator("a").click()
        page.wait_for_url("**/loss_curves?**", timeout=60_000)
        page.wait_for_selector(FINISHED, timeout=60_000)
        assert "attn=standard%2Cstacked" in page.url and "tasks=associative_recall" in page.url, page.url
        chosen = page.locator("[data-testid='stSidebar'] [data-testid='stMultiSelect']").nth(1).inner_text()
        assert "stacked" in chosen and "identity" not in chosen, chosen
        page.wait_for_timeout(1500)  # any late URL write would have landed by now
        page.go_back(wait_until="commit")  # one Back: the link's page wrote nothing new to the URL
        page.wait_for_selector("table td[title]", timeout=60_000)
        assert "loss_curves" not in page.url, page.url
        browser.close()


def test_drawn_charts_follow_a_theme_switch_from_the_menu(server):
    """Charts already drawn take the theme's text colour when a visitor switches theme in the main menu (they
    kept dark text on the dark theme): the component reads Streamlit's --st-text-color."""
    from playwright.sync_api import sync_playwright

    server, _ = server
    fonts = "[...document.querySelectorAll('.lab-chart')].map(c => c._fullLayout.font.color)"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1800})
        first_draw(page, server, "runtime")  # every chart drawn: one drawn late would miss the first reading
        light = page.evaluate(fonts)
        for theme in ("Dark", "Light"):
            item = page.get_by_test_id(f"stMainMenuItem-theme-{theme}")
            if not item.is_visible():  # the menu stays open after a theme is picked
                page.get_by_test_id("stMainMenu").click()
            item.click()
            text = "getComputedStyle(document.querySelector('.lab-chart')).getPropertyValue('--st-text-color').trim()"
            page.wait_for_function(f"{fonts}.every(f => f === {text})", timeout=10_000)
            now = page.evaluate(fonts)
            assert (now != light) if theme == "Dark" else (now == light), (theme, now, light)
        browser.close()


def test_a_charts_camera_button_saves_a_png_named_for_the_chart(server):
    """The slides export, as plotly.js's modebar gives it in a real browser: a PNG file named for the chart."""
    from playwright.sync_api import sync_playwright

    server, _ = server
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_context(accept_downloads=True, viewport={"width": 1400, "height": 1800}).new_page()
        first_draw(page, server, "scaling")  # every chart drawn
        chart = page.locator(".lab-chart").first
        chart.hover()
        with page.expect_download(timeout=30_000) as download:
            chart.locator(".modebar-btn[data-title='Download plot as a PNG']").click()
        assert download.value.suggested_filename == "scaling-d_head.png"
        titles = chart.locator(".modebar-btn").evaluate_all("bs => bs.map(b => b.getAttribute('data-title'))")
        assert titles and not [t for t in titles if "Share" in t or "Cloud" in t], titles  # no third-party upload
        browser.close()


def test_a_runs_link_with_ticked_runs_draws_their_curves_in_the_browser(server):
    """Ticked rows go in the URL (rsel): the link, opened in a new tab, shows the same curves."""
    from playwright.sync_api import sync_playwright

    from core.results import store as st

    server, _ = server
    runs = st.load_runs(ROOT / "data")
    ids = runs[(runs.task == "sort") & (runs.attention == "standard")].run_id.iloc[:2].tolist()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 1400})
        page.goto(f"{server}/runs?attn=standard&tasks=sort&rsel={'%2C'.join(ids)}", wait_until="commit")
        page.wait_for_function("document.querySelector('.lab-chart .main-svg') !== null", timeout=90_000)
        names = page.evaluate("document.querySelector('.lab-chart').data.map(t => t.name)")
        assert len([n for n in names if " seed " in n]) == 2, names
        browser.close()


PLOTLY_FETCHED = (
    "performance.getEntriesByType('resource').filter(e => e.name.endsWith('/app/static/plotly-cartesian.min.js'))"
)


def test_the_overview_warms_plotly_js_after_it_is_drawn_for_the_next_chart_page(server):
    """A new visitor's Overview draws no chart; once drawn and idle, its browser fetches plotly.js (never before
    the matrix is in), and the chart page opened next from the sidebar draws with it."""
    from playwright.sync_api import sync_playwright

    server, _ = server
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_context(viewport={"width": 1400, "height": 1800}).new_page()
        first_draw(page, server, "")
        drawn = page.evaluate("performance.now()")
        page.wait_for_function(f"{PLOTLY_FETCHED}.length > 0", timeout=30_000)
        assert page.evaluate(f"{PLOTLY_FETCHED}[0].startTime") > drawn  # it waited for the Overview to be drawn
        assert page.locator(".js-plotly-plot").count() == 0
        open_from_sidebar(page, "similarity")
        page.wait_for_function(ALL_CHARTS_DRAWN, timeout=90_000)
        assert page.evaluate(f"{PLOTLY_FETCHED}.length") == 1  # the chart page's charts found it loaded
        browser.close()


def test_start_on_the_train_page_trains_into_a_named_store(server, stores):
    """The real click path (AppTest cannot deliver this click through the router): Start on a served page; the
    new store is then in the same session's Store list."""
    from playwright.sync_api import sync_playwright

    server, _ = server
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1400})
        page.goto(f"{server}/train", wait_until="networkidle")
        page.wait_for_selector("h1", timeout=90_000)
        page.get_by_role("textbox", name="Store name").fill("browser-run")
        page.get_by_role("spinbutton", name="Steps").fill("20")
        page.get_by_role("button", name="Start sweep").click()
        page.wait_for_selector("text=Sweep finished", timeout=180_000)
        page.get_by_role("link", name="open browser-run").wait_for(timeout=10_000)  # the new store, one click away
        page.locator("[data-testid='stSidebar'] [data-testid='stSelectbox']").first.click()
        page.get_by_role("option", name="browser-run").wait_for(timeout=10_000)
        browser.close()
    assert len(list((stores / "browser-run" / "runs").glob("*.parquet"))) == 4  # standard, stacked x 2 seeds


def test_a_click_on_a_scaling_point_lists_its_seeds_in_runs_with_their_curves(server):
    """The chart component returns a click to Python: the Scaling page opens that cell's seeds, ticked, in Runs."""
    from playwright.sync_api import sync_playwright

    server, _ = server
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1800})
        page.goto(f"{server}/scaling?axis=d_head", wait_until="commit")
        page.wait_for_function(
            "document.querySelector('.lab-chart .scatterlayer .points path') !== null", timeout=90_000
        )
        box = page.evaluate(
            "(() => { const r = document.querySelector('.lab-chart .scatterlayer .points path')"
            ".getBoundingClientRect(); return {x: r.x + r.width / 2, y: r.y + r.height / 2}; })()"
        )
        page.mouse.move(box["x"], box["y"])  # plotly.js finds the point under the pointer, then takes the click
        page.mouse.click(box["x"], box["y"])
        page.wait_for_url("**/runs?**", timeout=30_000)
        params = dict(parse_qsl(urlsplit(page.url).query))
        assert len(params["rsel"].split(",")) >= 5 and "d_head=" in params["size"], params
        page.wait_for_function("document.querySelector('.lab-chart .main-svg') !== null", timeout=60_000)
        assert page.locator("h1#runs").is_visible()
        browser.close()
