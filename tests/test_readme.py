"""README.md's two commands stay true: the app command is the one that starts the app, and CI runs exactly the
test command it gives. The commands are found by what they do, not by where they stand in the file."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _commands() -> list[str]:
    return [b.strip() for b in re.findall(r"```bash\n(.*?)\n```", (ROOT / "README.md").read_text(), re.S)]


def test_the_app_command_installs_the_apps_requirements_and_starts_app_py():
    app = [c for c in _commands() if "streamlit run" in c]
    assert app == ["pip install -r requirements.txt && streamlit run app.py"]


def test_ci_runs_the_readme_test_command():
    tests = [c for c in _commands() if "pytest" in c]
    assert len(tests) == 1 and "requirements-dev.txt" in tests[0]
    assert "ruff check" in tests[0] and "ruff format --check" in tests[0]
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()
    assert ci[-1] == tests[0]  # the last thing CI does, word for word


def test_readme_stays_short_and_links_every_document():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 200
    docs = {p.name for p in (ROOT / "docs").glob("*.md")}
    linked = set(re.findall(r"\(docs/([\w-]+\.md)\)", text))
    assert linked <= docs and docs - linked <= {"first-draw.md"}  # first-draw.md is linked from deploy.md
