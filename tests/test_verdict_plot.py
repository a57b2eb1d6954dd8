"""The verdict matrix's figure: every cell carries its colour, numbers and evidence link, and its SVG export
draws the same cells."""

import pandas as pd


def _verdict_cells():
    rows, cols = ["stacked", "tied_qk"], ["sort", "scan: d_head"]
    cells = pd.DataFrame(
        [
            {"attention": a, "column": c, "verdict": v, "text": "1/5", "hover": f"{a} on {c}<br>p <1"}
            for (a, c), v in zip(
                [(a, c) for a in rows for c in cols if (a, c) != ("tied_qk", "sort")], ["worse", "better", "equivalent"]
            )
        ]
    )
    return cells, rows, cols


def test_every_verdict_cell_carries_its_colour_numbers_and_evidence_link():
    """The Overview's matrix as HTML: each compared cell a coloured td whose title holds its hover lines and whose
    link is its evidence; a cell not compared says so; text is escaped."""
    import re
    from html import unescape

    from core.dashboard.plots import matrix

    cells, rows, cols = _verdict_cells()
    links = {(a, c): f"loss_curves?attn=standard%2C{a}&tasks={c}" for a in rows for c in cols}
    html = matrix.verdict_html(cells, rows, cols, links)
    tds = re.findall(r'<td title="([^"]*)" style="([^"]*)">(.*?)</td>', html)
    assert len(tds) == 4
    assert [unescape(t[0]) for t in tds] == [
        "stacked on sort\np <1",
        "stacked on scan: d_head\np <1",
        "not compared",
        "tied_qk on scan: d_head\np <1",
    ]
    colours = [re.search(r"background:(#\w+)", t[1]) for t in tds]
    assert [c and c.group(1) for c in colours] == [
        matrix.VERDICT_COLORS["worse"],
        matrix.VERDICT_COLORS["better"],
        None,
        matrix.VERDICT_COLORS["equivalent"],
    ]
    assert unescape(re.search(r'href="([^"]*)"', tds[0][2]).group(1)) == links[("stacked", "sort")]
    assert "href" not in tds[2][2] and "&lt;1" in html and "<1" not in html.replace("<br>", "")
    assert all(v in html for v in matrix.VERDICT_COLORS)  # the legend names every verdict


def test_the_verdict_svg_is_well_formed_and_draws_the_same_cells():
    import xml.etree.ElementTree as ET

    from core.dashboard.plots import matrix

    cells, rows, cols = _verdict_cells()
    svg = ET.fromstring(matrix.verdict_svg(cells, rows, cols, note="×: a loss ratio"))
    ns = "{http://www.w3.org/2000/svg}"
    fills = [r.get("fill") for g in svg.iter(f"{ns}g") for r in g.iter(f"{ns}rect")]
    assert fills == [matrix.VERDICT_COLORS[v] for v in ("worse", "better", "equivalent")]
    titles = [t.text for t in svg.iter(f"{ns}title")]
    assert "not compared" in titles and "tied_qk on scan: d_head\np <1" in titles
    texts = {t.text for t in svg.iter(f"{ns}text")}
    assert {"stacked", "tied_qk", "sort", "scan:", "d_head", "vs standard:", "×: a loss ratio"} <= texts
