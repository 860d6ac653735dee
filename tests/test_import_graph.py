"""The project's modules import each other without a circle, counting every import (at the top,
inside functions and under TYPE_CHECKING: a deferred import hides a circle from Python, not from a
reader), and the contract sits at the bottom: what a producer sends and receives imports nothing
that routes, calls, books or serves. And ``bench/`` imports nothing of ``tests/`` (at any depth):
what both need lives in :mod:`aipool.harness`. The layers are drawn in ``docs/architecture.md``."""

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


def _imports(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement of a module, wherever it stands."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node


def _graph() -> dict[str, set[str]]:
    modules = _modules()

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in _imports(ast.parse(path.read_text())):
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


def _reached_from(graph: dict[str, set[str]], package: str) -> set[str]:
    start = {name for name in graph if name == package or name.startswith(f"{package}.")}
    seen, todo = set(start), list(start)
    while todo:
        for target in graph[todo.pop()]:
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen - start


#: What the contract may reach, directly or through what it imports: the errors it raises, the
#: settings and token estimate that bound a request, the provider catalog's names, the lanes a
#: hop's queue is named by, the trace id a result carries (each of these in turn reaches only
#: the others, and the sentinel parser the settings check addresses with).
CONTRACT_MAY_REACH = (
    "aipool.errors",
    "aipool.settings",
    "aipool.tokens",
    "aipool.providers.catalog",
    "aipool.lanes",
    "aipool.tracing",
    "aipool.redis.sentinel",
)


def test_the_contract_imports_nothing_that_routes_calls_books_or_serves() -> None:
    reached = _reached_from(_graph(), "aipool.contract")
    beyond = sorted(
        name
        for name in reached
        if not any(name == m or name.startswith(f"{m}.") for m in CONTRACT_MAY_REACH)
    )
    assert beyond == []


def test_the_check_finds_a_circle_when_there_is_one() -> None:
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_an_import_inside_a_function_or_under_type_checking_counts() -> None:
    # Given a module whose imports are all deferred or for the type checker only
    tree = ast.parse(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from a import A\n"
        "def f():\n    from b import B\n    return B\n"
    )
    # When its imports are read, then both count
    modules = {n.module for n in _imports(tree) if isinstance(n, ast.ImportFrom)}
    assert modules == {"typing", "a", "b"}


def test_what_the_contract_reaches_is_found_through_other_modules() -> None:
    graph = {"aipool.contract.x": {"aipool.errors"}, "aipool.errors": {"aipool.routing.r"}}
    graph["aipool.routing.r"] = set()
    assert _reached_from(graph, "aipool.contract") == {"aipool.errors", "aipool.routing.r"}


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
