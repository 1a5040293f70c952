"""The shape of the package, kept so by tests: no import cycle, rules that read only the
analysis' results, and modules small enough to read (docs/architecture.md explains the layout).

The import graph is built from the source with `ast`, so it sees every import: module level,
inside functions (lazy imports), under `if TYPE_CHECKING:`, and `lazy_import("...")` calls.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "devlint"
MAX_LINES = 700
MAX_ANALYSIS_LINES = 600

# what a rule may read: the analysis' results (values, events, the program), its vocabulary,
# device identities, knowledge tables, findings, other rule modules; and, lazily, the repairs
RULE_IMPORTS = (
    "devlint.analysis.values", "devlint.analysis.events", "devlint.analysis.vocabulary",
    "devlint.analysis.devices", "devlint.analysis.program", "devlint.knowledge", "devlint.findings",
    "devlint.rules", "devlint.limits", "devlint._lazy", "devlint.fix.repairs",
)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _imports(name: str, path: Path) -> set[str]:
    """Every dotted name the module imports (`from a import b` gives `a` and `a.b`)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")
                parent = parent[: len(parent) - (node.level - 1)]
                base = ".".join(parent + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Call) and getattr(node.func, "id", "") == "lazy_import" and node.args \
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            found.add(node.args[0].value)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: {other for other in _imports(name, path) if other in modules and other != name}
            for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
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


def test_the_import_graph_has_no_cycle() -> None:
    assert _cycles(_graph()) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("name", sorted(n for n in _modules() if n.startswith("devlint.rules.")))
def test_rules_read_only_the_analysis_results(name: str) -> None:
    modules = _modules()
    packages = {n for n, path in modules.items() if path.name == "__init__.py"}
    imported = {other for other in _imports(name, modules[name]) if not other.startswith("__future__")}
    outside = sorted(i for i in imported if i.split(".")[0] in ("devlint", "libcst")
                     and i not in packages and not i.startswith(RULE_IMPORTS))
    assert outside == [], f"{name} imports {outside}: rules read events, values and knowledge only"


def test_modules_are_small_enough_to_read() -> None:
    too_long = []
    for name, path in _modules().items():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        limit = MAX_ANALYSIS_LINES if name.startswith("devlint.analysis") else MAX_LINES
        if lines > limit:
            too_long.append((name, lines, limit))
    assert too_long == []
