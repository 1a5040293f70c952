"""What a module defines, read from its syntax once per parse: the `ModuleFacts`.

The analysis asks these questions again and again (which methods does this class define, which
names does `from .x import *` bring in, is this function a generator), and the answers depend
on the syntax alone, so they are computed on first use and kept with the parse.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from devlint.analysis.syntax import block, code_of, dotted, function_ids, mentions_yield

if TYPE_CHECKING:  # pragma: no cover
    from devlint.analysis.names import ImportTable


class ClassMembers:
    """The syntax of one class body: its methods and the values of its class attributes."""

    __slots__ = ("methods", "class_attrs", "record_fields")

    def __init__(self, node: cst.ClassDef) -> None:
        self.methods: dict[str, cst.FunctionDef] = {}
        self.class_attrs: dict[str, cst.BaseExpression] = {}
        # annotated fields in order (what a dataclass / NamedTuple's generated __init__ binds)
        self.record_fields: list[str] = []
        for stmt in block(node.body):
            if type(stmt) is cst.FunctionDef:
                self.methods[stmt.name.value] = stmt
            elif type(stmt) is cst.SimpleStatementLine:
                for small in stmt.body:
                    if type(small) is cst.Assign:
                        for t in small.targets:
                            if type(t.target) is cst.Name:
                                self.class_attrs[t.target.value] = small.value
                    elif type(small) is cst.AnnAssign:
                        if small.value is not None and type(small.target) is cst.Name:
                            self.class_attrs[small.target.value] = small.value
                        if type(small.target) is cst.Name and "ClassVar" not in code_of(small.annotation):
                            self.record_fields.append(small.target.value)


class ModuleFacts:
    """Facts about one parsed module (`facts_of(module)` keeps one per module)."""

    def __init__(self, module: cst.Module, source: str | None = None) -> None:
        self.module = module
        # a text without "yield" has no generator: its functions need no look inside
        self._yield_free = source is not None and "yield" not in source
        self._plain_functions: set[int] | None = None
        self._generators: dict[int, bool] = {}
        self._classes: dict[int, ClassMembers] = {}
        self._stars: list[str] | None = None

    @property
    def top_level_functions(self) -> list[cst.FunctionDef]:
        return [stmt for stmt in self.module.body if type(stmt) is cst.FunctionDef]

    def members(self, node: cst.ClassDef) -> ClassMembers:
        found = self._classes.get(id(node))
        if found is None:
            found = self._classes[id(node)] = ClassMembers(node)
        return found

    def is_generator(self, fn: cst.FunctionDef) -> bool:
        cached = self._generators.get(id(fn))
        if cached is None:
            if self._plain_functions is None:
                self._plain_functions = function_ids(self.module) if self._yield_free else set()
            cached = id(fn) not in self._plain_functions and mentions_yield(fn)
            self._generators[id(fn)] = cached
        return cached

    def star_imports(self, imports: "ImportTable") -> list[str]:
        """The modules this module imports with `*` (dotted names, relative ones resolved)."""
        if self._stars is None:
            stars = []
            for stmt in self.module.body:
                for small in stmt.body if type(stmt) is cst.SimpleStatementLine else ():
                    if type(small) is cst.ImportFrom and type(small.names) is cst.ImportStar:
                        module = dotted(small.module) if small.module is not None else ""
                        if small.relative:
                            base = imports.package.split(".") if imports.package else []
                            base = base[: max(len(base) - (len(small.relative) - 1), 0)]
                            module = ".".join([p for p in base if p] + ([module] if module else []))
                        if module:
                            stars.append(module)
            self._stars = stars
        return self._stars


_FACTS: dict[int, ModuleFacts] = {}
_FACTS_LIMIT = 1024  # parses a process keeps facts for (the project index keeps 256 parses)


def facts_of(module: cst.Module, source: str | None = None) -> ModuleFacts:
    """The facts of a parse, computed once (`source`, when given, lets a text without "yield"
    skip the generator checks)."""
    found = _FACTS.get(id(module))
    if found is None or found.module is not module:
        if len(_FACTS) >= _FACTS_LIMIT:
            _FACTS.pop(next(iter(_FACTS)))
        found = _FACTS[id(module)] = ModuleFacts(module, source)
    return found
