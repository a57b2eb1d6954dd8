"""`pip install .` gives the library and the `attention-lab` command, with the versions the requirements files pin
(the files stay the deploy path for Streamlit Community Cloud)."""

import shutil
import site
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _pins(path: Path) -> set[str]:
    lines = (line.split("#")[0].strip() for line in path.read_text().splitlines())
    return {line for line in lines if line and not line.startswith("-r")}


def test_pyproject_pins_what_the_requirements_files_pin():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    assert set(project["dependencies"]) == _pins(ROOT / "requirements.txt")
    assert set(extras["ray"]) == _pins(ROOT / "requirements-ray.txt")
    dev = {d for d in extras["dev"] if not d.startswith("attention-lab")}
    assert dev | set(extras["pretrained"]) | set(extras["export"]) == _pins(ROOT / "requirements-dev.txt")
    assert project["scripts"]["attention-lab"] == "core.cli:main"


def test_pip_install_gives_the_package_and_its_command(tmp_path):
    """Into a fresh venv that sees this environment's packages (no network: dependencies are already here, the
    build backend too), then the command runs from outside the checkout."""
    source = tmp_path / "src"  # a copy: building writes build/ and *.egg-info beside the sources
    shutil.copytree(ROOT / "core", source / "core", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", source)
    venv.create(tmp_path / "venv", system_site_packages=True, with_pip=False)
    python = tmp_path / "venv" / "bin" / "python"
    # Run from a venv (as README says), system_site_packages sees the base interpreter's packages, not this
    # venv's: a .pth hands it this environment's, so the build backend is the one the project installed.
    inner = subprocess.run(
        [str(python), "-c", "import site; print(site.getsitepackages()[0])"], capture_output=True, text=True, check=True
    ).stdout.strip()
    (Path(inner) / "outer.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    install = [
        sys.executable,
        "-m",
        "pip",
        "--python",
        str(python),
        "install",
        "-q",
        "--no-deps",
        "--no-build-isolation",
        "--no-index",
        str(source),
    ]
    done = subprocess.run(install, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    command = tmp_path / "venv" / "bin" / "attention-lab"
    out = subprocess.run([str(command), "sweep", "--help"], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 0 and "--attention" in out.stdout, out.stderr[-2000:]
    where = subprocess.run(
        [str(python), "-c", "import core; print(core.__file__)"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert "site-packages" in where.stdout and str(ROOT) not in where.stdout
    ask = "from importlib.metadata import version; print(version('attention-lab'))"
    version = subprocess.run([str(python), "-c", ask], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert version.stdout.strip() == tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
