"""What made a stored file: each file's provenance record (the command, versions, date, the code's commit)."""

import platform
import subprocess
import sys
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path


def provenance(command: str | None = None) -> dict:
    """What made a file: the command, package versions, date (UTC)."""
    versions = {"python": platform.python_version()}
    for pkg in ("torch", "numpy", "pandas", "pyarrow", "safetensors", "attention-lab"):
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    return {
        "command": command or "python -m core " + " ".join(sys.argv[1:]),
        "versions": versions,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "git": _GIT,
    }


_ROOT = Path(__file__).resolve().parents[2]


def _git_commit(root: Path = _ROOT) -> str | None:
    """The code's commit, with '+dirty' for uncommitted changes to it; None outside a git checkout.

    Only core/ and requirements.txt count: they are what produces results, while a sweep that
    regenerates data/ changes the checkout's files itself. Read once, at import: that is the code
    this process runs, whatever changes on disk later.
    """
    try:
        run = lambda *a: subprocess.run(["git", *a], cwd=root, capture_output=True, text=True, timeout=5)  # noqa: E731
        head = run("rev-parse", "--short", "HEAD")
        if head.returncode:
            return None
        dirty = run("status", "--porcelain", "--", "core", "requirements.txt").stdout.strip()
        return head.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None


_GIT = _git_commit()
