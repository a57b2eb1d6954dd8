"""README.md's two commands stay true: CI runs exactly the test command it gives."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ci_runs_the_readme_test_command_and_the_app_command_is_right():
    blocks = re.findall(r"```bash\n(.*?)\n```", (ROOT / "README.md").read_text(), re.S)
    app, tests = blocks[0].strip(), blocks[1].strip()
    assert app == "pip install -r requirements.txt && streamlit run app.py"
    assert tests in (ROOT / ".ci" / "run").read_text()
    assert "pytest" in tests and "requirements-dev.txt" in tests


def test_readme_results_table_is_the_summary_command_output(capsys):
    from core.cli import main

    main(["summary", "--store", str(ROOT / "data"), "--markdown"])
    table = capsys.readouterr().out.strip()
    assert table in (ROOT / "README.md").read_text()
