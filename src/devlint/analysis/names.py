"""Our own import resolution: local names to canonical dotted names.

libcst's ScopeProvider / QualifiedNameProvider cost about ten times the parse on real code;
an import table read in one pass over the module's import statements is all the rules need.
"""

from __future__ import annotations

from functools import lru_cache

import libcst as cst

from devlint.analysis.syntax import dotted, statements
from devlint.knowledge.torch import CANONICAL_PREFIXES

@lru_cache(maxsize=1 << 16)  # asked for every call of an imported name
def canonical(qualname: str) -> str:
    """The name the knowledge tables use for a dotted name (`torch.nn.modules.linear.Linear` is
    `torch.nn.Linear`)."""
    for old, new in CANONICAL_PREFIXES:
        if qualname.startswith(old):
            rest = qualname[len(old):]
            # torch.nn.modules.linear.Linear -> torch.nn.Linear
            if new == "torch.nn." and "." in rest:
                rest = rest.rsplit(".", 1)[1]
            return new + rest
    return qualname


def _module_name(node: cst.BaseExpression | None) -> str:
    if node is None:
        return ""
    return dotted(node) or ""


class ImportTable:
    """Local name -> canonical dotted name, for every import anywhere in a module."""

    def __init__(self, package: str = "") -> None:
        self.names: dict[str, str] = {}
        self.package = package  # the dotted package of the module, for relative imports

    def add_import(self, node: cst.Import) -> None:
        for alias in node.names:
            full = _module_name(alias.name)
            if alias.asname is not None and type(alias.asname.name) is cst.Name:
                self.names[alias.asname.name.value] = canonical(full)
            else:
                top = full.split(".")[0]
                self.names[top] = top

    def add_import_from(self, node: cst.ImportFrom) -> None:
        module = _module_name(node.module)
        if node.relative:
            level = len(node.relative)
            base = self.package.split(".") if self.package else []
            if level > 1:
                base = base[: len(base) - (level - 1)] if len(base) >= level - 1 else []
            module = ".".join([p for p in base if p] + ([module] if module else []))
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            name = _module_name(alias.name)
            local = name
            if alias.asname is not None and type(alias.asname.name) is cst.Name:
                local = alias.asname.name.value
            self.names[local] = canonical(f"{module}.{name}" if module else name)

    def resolve(self, name: str) -> str | None:
        """The canonical name a local dotted name refers to, if it starts with an import."""
        head, _, rest = name.partition(".")
        base = self.names.get(head)
        if base is None:
            return None
        return canonical(f"{base}.{rest}" if rest else base)


def collect_imports(module: cst.Module, package: str = "") -> ImportTable:
    table = ImportTable(package)
    for stmt in statements(module.body):
        if type(stmt) is cst.SimpleStatementLine:
            for small in stmt.body:
                if type(small) is cst.Import:
                    table.add_import(small)
                elif type(small) is cst.ImportFrom:
                    table.add_import_from(small)
    return table
