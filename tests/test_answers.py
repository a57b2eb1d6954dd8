"""The hand-written documents quote the generated ones: docs/answers.md's and README's numbers that come from a
table of docs/results.md or docs/reproduce.md (both checked fresh against data/ by tests/test_report.py) match it,
so a landing that moves them cannot leave the prose behind."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _flat(name: str) -> str:
    return " ".join((ROOT / name).read_text().split())  # prose wraps anywhere


def _open_rule_rows() -> dict[str, tuple[int, int]]:
    """results.md's open-rule table: row label -> (solved by 2C, n)."""
    table = (ROOT / "docs/results.md").read_text()
    rows = re.findall(r"^\| (seeds|cells): ([a-z ]+) \| (\d+) \| (\d+) \[", table, re.M)
    return {said: (int(k), int(n)) for _, said, n, k in rows}


def test_answers_quote_the_open_rules_check_as_results_gives_it():
    rows, text = _open_rule_rows(), _flat("docs/answers.md")
    assert set(rows) == {"still improving", "not improving", "open", "closed"}
    (k_open, n_open), (k_closed, n_closed) = rows["open"], rows["closed"]
    assert f"called open at C, {k_open} of {n_open} had a seed solve by 2C" in text
    assert f"called closed, {k_closed} of {n_closed} " in text
    (k_imp, n_imp), (k_not, n_not) = rows["still improving"], rows["not improving"]
    assert f"{k_imp} of {n_imp} still improving against {k_not} of {n_not} not" in text


def test_readme_gives_reproduces_total_hours_of_sweeps():
    hours = float(re.search(r"over ([\d.]+) hours of sweeps", _flat("docs/reproduce.md")).group(1))
    assert f"about {round(hours)} hours of sweeps" in _flat("README.md")


def test_readme_and_answers_count_the_edge_cells_as_reproduce_does():
    n = int(re.search(r"(\d+) cells have their best lr at an end", _flat("docs/reproduce.md")).group(1))
    for name in ("README.md", "docs/answers.md"):
        said = re.findall(r"(\d+) cells at \w+ points still sit at an end", _flat(name))
        assert said == [str(n)], name
