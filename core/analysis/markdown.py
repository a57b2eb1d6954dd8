"""The one markdown-table writer: docs/results.md, `summary --markdown` and the scan grids all print through it."""

import pandas as pd


def table(frame: pd.DataFrame) -> str:
    """A markdown table of the frame's cells as strings, its columns as the header (no tabulate dependency).
    A `|` inside a cell is escaped, so a name cannot split a row."""
    cells = frame.astype(str).apply(lambda c: c.str.replace("|", "\\|", regex=False))
    header = [str(c).replace("|", "\\|") for c in frame.columns]
    lines = ["| " + " | ".join(header) + " |", "|---" * len(header) + "|"]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in cells.itertuples(index=False)])
