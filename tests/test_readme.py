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


def test_readme_scaling_tables_are_the_scaling_summary_output():
    from core.analysis import scaling
    from core.attention import NAMES
    from core.results import store as st

    runs, readme = st.load_runs(ROOT / "data"), (ROOT / "README.md").read_text()
    axes = scaling.axes_present(runs)
    assert {"d_head", "d_model"} <= set(axes)
    for axis in axes:
        grid = scaling.solved_grid(scaling.outcomes(runs, axis), list(NAMES))
        assert scaling.grid_markdown(grid, axis) in readme, axis
