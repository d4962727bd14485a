"""The package's shape, checked on its source: imports form no circle (counting the imports made
inside functions, which only hide a circle from Python, and those for annotations under
`if TYPE_CHECKING:`, which hide one from the reader), no module is over 500 lines and no
function of the core (kinematics, solver, measurements, problem) is over 80 lines."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
CORE = ("kinematics", "solver", "measurements", "problem")


def modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    found = {}
    for path in sorted((SRC / "robocal").rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(tree: ast.Module, package: str) -> list[str]:
    """The dotted names an import statement anywhere in the module brings in."""
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            names += [f"{base}.{alias.name}" for alias in node.names]
    return names


def import_graph() -> dict[str, set[str]]:
    """module -> the package modules it imports (a name resolves to the longest module prefix;
    importing one's own enclosing package is not an edge: Python has already loaded it)."""
    found = modules()

    def resolve(name: str) -> str | None:
        while name and name not in found:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in found.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = {resolve(n) for n in imports(ast.parse(path.read_text()), package) if n.startswith("robocal")}
        graph[name] = {t for t in targets if t is not None and t != name and not name.startswith(t + ".")}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_circle_finder_finds_a_circle():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle():
    graph = import_graph()
    assert len(graph) > 100  # the walk saw the package
    found = circles(graph)
    assert not found, "import circles:\n" + "\n".join(" <-> ".join(c) + "\n  " + "; ".join(f"{m} -> {sorted(graph[m] & set(c))}" for m in c) for c in found)


def test_no_module_over_500_lines():
    long = {name: n for name, path in modules().items() if (n := len(path.read_text().splitlines())) > 500}
    assert not long, long


def test_no_core_function_over_80_lines():
    long = {}
    for name, path in modules().items():
        if name.split(".")[1:2] and name.split(".")[1] in CORE:
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and (n := node.end_lineno - node.lineno + 1) > 80:
                    long[f"{name}.{node.name}"] = n
    assert not long, long
