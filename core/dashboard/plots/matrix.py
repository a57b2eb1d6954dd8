"""The Overview's verdict matrix without plotly: an HTML table for the page and the same grid as SVG for slides.

Parameterization x column (a task, or a scaling axis), each cell coloured by its verdict against standard, its
short text in it, its numbers on hover (the cell's title) and a link to its evidence. As HTML it is drawn with the
page's first paint: a new visitor's first screen does not wait for plotly.js (a 4.7 MB chunk whose load and first
draw take 1.2-2.2 s of browser CPU on two cores; docs/first-draw.md).
cells: attention, column, verdict, text, hover ("<br>" between lines).
"""

from html import escape

import pandas as pd

VERDICT_COLORS = {"better": "#2ca02c", "equivalent": "#9ecae1", "worse": "#d62728", "inconclusive": "#fdd49e"}
_INK = {"better": "#ffffff", "worse": "#ffffff"}  # light text on the dark fills; the rest dark
_EMPTY = "not compared"
# text that grows with the window (a projector at 1920 reads 11 px poorly), never below today's sizes
_TEXT, _SMALL = "clamp(12px, 0.85vw, 17px)", "clamp(11px, 0.75vw, 15px)"


def _grid(cells: pd.DataFrame, rows: list[str], cols: list[str]) -> list[list[dict | None]]:
    """rows x cols of each cell's record (None where not compared)."""
    by = {(c["attention"], c["column"]): c for c in cells.to_dict("records")}
    return [[by.get((r, c)) for c in cols] for r in rows]


def _label_lines(label: str) -> list[str]:
    """A column label on short lines: 'scan: n_heads (induction)' -> ['scan:', 'n_heads', '(induction)'],
    'associative_recall' -> ['associative_', 'recall']: the whole matrix fits a projector's first screen."""
    label = label.replace("scan: ", "scan:\n").replace(" (", "\n(")
    head, sep, tail = label.partition("_")
    if sep and len(label) > 12 and "\n" not in label:
        return [head + "_", tail]
    return label.split("\n")


def verdict_html(cells: pd.DataFrame, rows: list[str], cols: list[str], links: dict[tuple[str, str], str]) -> str:
    """The matrix as an HTML table; links: (attention, column) -> the href of that cell's evidence."""
    cell = "padding:1px 6px;text-align:center;min-width:62px;border-radius:2px;font-variant-numeric:tabular-nums"
    head = "".join(
        f'<th style="font-weight:500;font-size:{_SMALL};line-height:1.15;padding:0 3px;vertical-align:bottom">'
        f"{'<br>'.join(escape(x) for x in _label_lines(c))}</th>"
        for c in cols
    )
    swatch = "display:inline-block;width:10px;height:10px;margin-right:4px"
    legend = "<br>".join(f'<span style="{swatch};background:{c}"></span>{v}' for v, c in VERDICT_COLORS.items())
    legend += f'<br><span style="{swatch};border:1px solid rgba(128,128,128,.5)"></span>– {_EMPTY}'
    legend = (
        f'<td rowspan="{len(rows)}" style="vertical-align:top;font-size:{_SMALL};line-height:1.6;padding-left:10px;'
        f'white-space:nowrap">vs standard:<br>{legend}</td>'
    )  # beside the grid, as a colour bar would be
    body = []
    for i, (name, line) in enumerate(zip(rows, _grid(cells, rows, cols))):
        tds = []
        for col, c in zip(cols, line):
            if c is None:
                tds.append(f'<td title="{_EMPTY}" style="{cell};border:1px solid rgba(128,128,128,.3)">–</td>')
                continue
            tip = escape(c["hover"].replace("<br>", "\n"), quote=True)
            text, ink = escape(c["text"]), _INK.get(c["verdict"], "#1f1f1f")
            href = links.get((name, col))
            inner = (
                (
                    f'<a href="{escape(href, quote=True)}" target="_self" style="color:{ink};text-decoration:none;'
                    f'display:block">{text}</a>'
                )
                if href
                else text
            )
            tds.append(
                f'<td title="{tip}" style="{cell};background:{VERDICT_COLORS[c["verdict"]]};color:{ink}">{inner}</td>'
            )
        body.append(
            f'<tr><th style="text-align:right;font-weight:500;padding-right:6px">{escape(name)}</th>'
            + "".join(tds)
            + (legend if i == 0 else "")
            + "</tr>"
        )
    return (
        f'<div style="overflow-x:auto"><table style="border-collapse:separate;border-spacing:2px;font-size:{_TEXT};'
        f'line-height:1.5"><thead><tr><th></th>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'
    )


def verdict_svg(cells: pd.DataFrame, rows: list[str], cols: list[str], note: str = "") -> str:
    """The same grid as a standalone SVG (for slides): fills, texts, labels, the legend and `note` (what the
    numbers are) under it; each cell's hover as its <title>."""
    cw, ch, left, line = 96, 26, 110, 14
    top = 8 + line * max(len(_label_lines(c)) for c in cols) if cols else 8
    width = max(left + cw * len(cols) + 8, left + int(6 * len(note)))  # the note's 11 px glyphs, about 6 px each
    height = top + ch * len(rows) + 34 + 18 * bool(note)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="Helvetica, Arial, sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
    ]
    for j, col in enumerate(cols):
        lines = _label_lines(col)
        for k, text in enumerate(lines):
            y = top - 6 - line * (len(lines) - 1 - k)
            out.append(f'<text x="{left + cw * j + cw / 2}" y="{y}" text-anchor="middle">{escape(text)}</text>')
    for i, (name, cells_of_row) in enumerate(zip(rows, _grid(cells, rows, cols))):
        y = top + ch * i
        out.append(f'<text x="{left - 6}" y="{y + ch / 2 + 4}" text-anchor="end">{escape(name)}</text>')
        for j, c in enumerate(cells_of_row):
            x = left + cw * j
            if c is None:
                out.append(
                    f'<rect x="{x + 1}" y="{y + 1}" width="{cw - 2}" height="{ch - 2}" fill="none" '
                    f'stroke="#cccccc"><title>{_EMPTY}</title></rect>'
                )
                continue
            tip, ink = escape(c["hover"].replace("<br>", "\n")), _INK.get(c["verdict"], "#1f1f1f")
            out.append(
                f'<g><title>{tip}</title><rect x="{x + 1}" y="{y + 1}" width="{cw - 2}" height="{ch - 2}" '
                f'fill="{VERDICT_COLORS[c["verdict"]]}"/><text x="{x + cw / 2}" y="{y + ch / 2 + 4}" '
                f'text-anchor="middle" fill="{ink}">{escape(c["text"])}</text></g>'
            )
    y, x = top + ch * len(rows) + 20, left
    out.append(f'<text x="{left - 6}" y="{y}" text-anchor="end">vs standard:</text>')
    for verdict, colour in VERDICT_COLORS.items():
        out.append(
            f'<rect x="{x}" y="{y - 10}" width="11" height="11" fill="{colour}"/>'
            f'<text x="{x + 15}" y="{y}">{verdict}</text>'
        )
        x += 20 + 7 * len(verdict) + 14
    if note:
        out.append(f'<text x="{left - 6}" y="{y + 20}" font-size="11" fill="#555555">{escape(note)}</text>')
    return "\n".join(out + ["</svg>"])
