"""Data flows one way: no import cycle inside core/ (module-level or deferred imports alike)."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _imports() -> dict[str, set[str]]:
    mods = {}
    for path in (ROOT / "core").rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        package = name if parts[-1] == "__init__" else name.rsplit(".", 1)[0]
        deps = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
                deps |= {f"{target}.{a.name}" for a in node.names} if node.module is None else {target}
        mods[name] = deps
    return mods


def test_core_has_no_import_cycles():
    mods = _imports()

    def known(dep: str) -> str:
        while dep not in mods and "." in dep:
            dep = dep.rsplit(".", 1)[0]
        return dep if dep in mods else ""

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
    assert "core.tasks" in graph["core.config"] and "core.sweep" not in graph["core.workers"]
