"""The project's modules import each other without a circle (imports under TYPE_CHECKING and inside
functions aside): what a module needs at import time never needs that module back. And ``bench/``
imports nothing of ``tests/`` (at any depth): what both need lives in :mod:`aipool.harness`."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("aipool", "workers", "tasks", "schedules")


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def _top_level_imports(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If | ast.Try):
            yield from _top_level_imports(node.body)
            for handler in getattr(node, "handlers", []):
                yield from _top_level_imports(handler.body)
            yield from _top_level_imports(node.orelse)


def _graph() -> dict[str, set[str]]:
    modules = _modules()

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in _top_level_imports(ast.parse(path.read_text()).body):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
                    for _ in range(node.level - 1):
                        package = package.rpartition(".")[0]
                    base = f"{package}.{base}" if base else package
                targets = [f"{base}.{alias.name}" for alias in node.names]
            for target in targets:
                resolved = resolve(target)
                if resolved and resolved != name:
                    graph[name].add(resolved)
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
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
                    circles.append(sorted(component))
    return circles


def test_no_circle_between_the_projects_modules() -> None:
    assert _circles(_graph()) == []


def test_the_check_finds_a_circle_when_there_is_one() -> None:
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _imported_names(tree: ast.AST) -> Iterator[str]:
    """Every module an ``import`` anywhere in ``tree`` names (inside functions and TYPE_CHECKING
    too); relative imports are left out, since they stay in their own package."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            yield node.module


def _imports_of_tests(folder: Path) -> list[str]:
    found = []
    for path in sorted(folder.rglob("*.py")):
        for name in _imported_names(ast.parse(path.read_text())):
            if name == "tests" or name.startswith("tests."):
                found.append(f"{path.relative_to(folder)}: {name}")
    return found


def test_the_benchmark_imports_nothing_of_the_tests() -> None:
    # bench/run must run from a checkout without the test suite's helpers in its way, and what
    # both start (real workers, round-trip counts) has one home: aipool.harness.
    assert _imports_of_tests(ROOT / "bench") == []


def test_the_check_finds_an_import_of_the_tests_inside_a_function(tmp_path: Path) -> None:
    # Given a module that imports the tests' support inside a function
    (tmp_path / "figure.py").write_text(
        "def start():\n    from tests.support.pool import Worker\n    return Worker\n"
    )
    # When the check reads its folder
    found = _imports_of_tests(tmp_path)
    # Then it names the module and the import
    assert found == ["figure.py: tests.support.pool"]
