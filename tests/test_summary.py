"""`python -m core summary`: the terminal view of a store, a damaged file as one warning, the bundled data's endpoints
and scan axes."""

import re
import subprocess
import sys
from pathlib import Path

from tiny import sweep

from core.cli import main

ROOT = Path(__file__).resolve().parents[1]


def test_summary_prints_a_skipped_file_as_one_warning_line(tmp_path):
    sweep(tmp_path, "--attention", "standard", "--task", "reverse", "--seeds", "1")
    (tmp_path / "runs" / "broken.parquet").write_bytes(b"nope")
    out = subprocess.run(
        [sys.executable, "-m", "core", "summary", "--store", str(tmp_path)], cwd=ROOT, capture_output=True, text=True
    )
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 0 and len(lines) == 1 and lines[0].startswith("warning: skipping ")
    assert "broken.parquet" in lines[0]


def test_summary_prints_both_endpoints_and_every_scan_axis_of_the_bundled_data(capsys):
    """Issue 42's terminal view: solved by the cap with a Wilson interval, steps to solve with its Kaplan-Meier
    interval and the family's Holm verdict per cell; then each scan axis under its protocol, with its thresholds."""
    from core.analysis import axes
    from core.results import store as st

    assert main(["summary", "--store", str(ROOT / "data"), "--findings", "--scaling"]) == 0
    out = capsys.readouterr().out
    steps = r"([\d,]+|never)"
    cell = r"- associative_recall / tied_qkv \(lr [\d.e-]+, cap \d+\): solved \d+/10 \[\d\.\d\d, \d\.\d\d\]; "
    assert re.search(cell + rf"steps to solve {steps} \[{steps}, {steps}\]; Holm p ", out)
    present = axes.axes_present(st.load_runs(ROOT / "data"))
    for axis in present:
        assert f"scaling: {axes.AXES[axis].title} (" in out
    assert out.count("each cell at its best lr, to the criterion, cap ") == len(present)  # one protocol an axis
    assert " p_holm " in out and " verdict" in out and " lr_edge " in out  # empty where no best lr is a grid's end
