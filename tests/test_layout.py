"""Data flows one way: no import cycle inside core/, and sub-packages import only in the allowed direction.

The package map (README's Layout): attention -> training -> results -> analysis -> experiments ->
benchmarks / dashboard -> the CLI and the pages. Imports are read from the source (module level or
deferred inside a function alike), relative or absolute.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# What each sub-package may import from core (besides itself). The command line (core.cli, with core.__main__)
# sits on top and may import anything; nothing below imports it.
ALLOWED = {
    "attention": set(),
    "training": {"attention"},
    "results": {"attention", "training"},
    "analysis": {"attention", "training", "results"},
    "experiments": {"attention", "training", "results", "analysis"},
    "benchmarks": {"attention", "training", "results", "analysis", "experiments"},
    "dashboard": {"attention", "training", "results", "analysis", "experiments"},
    "report": {"attention", "training", "results", "analysis", "experiments"},
    "cli": {"attention", "training", "results", "analysis", "experiments", "benchmarks", "report"},
}
PAGES_MAY_IMPORT = {"dashboard", "analysis", "results"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _deps(path: Path) -> set[str]:
    """Every core module or package `path` imports, as absolute dotted names."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    deps = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "core":
                continue
            deps |= {f"{target}.{a.name}" for a in node.names} | {target}
        elif isinstance(node, ast.Import):
            deps |= {a.name for a in node.names if a.name.split(".")[0] == "core"}
    return deps


def _core_imports() -> dict[str, set[str]]:
    return {_module_name(p): _deps(p) for p in (ROOT / "core").rglob("*.py")}


def _subpackage(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_core_has_no_import_cycles():
    mods = _core_imports()

    def known(dep: str) -> str:
        while dep not in mods and "." in dep:
            dep = dep.rsplit(".", 1)[0]
        return dep if dep in mods and dep != "core" else ""

    graph = {m: {known(d) for d in deps} - {"", m} for m, deps in mods.items()}
    cycles = []

    def visit(node: str, path: list[str]):
        for dep in graph[node]:
            if dep in path:
                cycles.append(path[path.index(dep) :] + [dep])
            elif len(path) < len(graph):
                visit(dep, [*path, dep])

    for m in graph:
        visit(m, [m])
    assert not cycles, cycles[0]
    assert "core.training.task_specs" in graph["core.training.config"]
    assert "core.experiments.sweep" not in graph["core.experiments.workers"]


def _violations(mods: dict[str, set[str]]) -> list[str]:
    return [
        f"{m} imports {d}"
        for m, deps in mods.items()
        if _subpackage(m) in ALLOWED
        for d in sorted(deps)
        if _subpackage(d) not in ("", _subpackage(m)) and _subpackage(d) not in ALLOWED[_subpackage(m)]
    ]


def test_subpackages_import_in_the_allowed_direction():
    bad = _violations(_core_imports())
    assert not bad, bad


def test_the_direction_check_flags_a_wrong_import():
    assert _violations({"core.results.store": {"core.dashboard.ui", "core.training.config"}}) == [
        "core.results.store imports core.dashboard.ui"
    ]


def test_every_subpackage_is_mapped_and_documented():
    packages = {p.parent.name for p in (ROOT / "core").glob("*/__init__.py")}
    assert packages == set(ALLOWED)
    for pkg in packages:
        doc = ast.get_docstring(ast.parse((ROOT / "core" / pkg / "__init__.py").read_text()))
        assert doc and "import" in doc, f"core/{pkg}/__init__.py says what it holds and may import"


@pytest.mark.parametrize("path", sorted([*(ROOT / "pages").glob("*.py"), ROOT / "app.py"]), ids=lambda p: p.name)
def test_pages_import_only_the_dashboard_analysis_and_results(path):
    bad = [d for d in _deps(path) if _subpackage(d) and _subpackage(d) not in PAGES_MAY_IMPORT]
    assert not bad, f"{path.name} imports {bad}"


def _packages() -> list[Path]:
    return sorted(p.parent for p in (ROOT / "core").rglob("__init__.py"))


@pytest.mark.parametrize("package", _packages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_package_docstring_names_each_of_its_modules(package):
    import re

    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""
    modules = {p.stem for p in package.glob("*.py")} - {"__init__", "__main__"}
    modules |= {d.name for d in package.iterdir() if (d / "__init__.py").is_file()}
    missing = sorted(m for m in modules if not re.search(rf"\b{m}\b", doc))
    assert not missing, f"{package.relative_to(ROOT)}/__init__.py does not name {missing}"


def test_the_command_line_lives_in_core_cli():
    """Commands and their flags are defined only in core/cli/: the packages below expose functions."""
    import re

    defines = re.compile(r"^import argparse|\.add_parser\(|\.add_argument\(", re.M)
    outside = [
        str(p.relative_to(ROOT))
        for p in (ROOT / "core").rglob("*.py")
        if "cli" not in p.relative_to(ROOT / "core").parts and defines.search(p.read_text())
    ]
    assert not outside, outside
