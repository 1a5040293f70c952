"""Loop syntax for DEV303: which names the loop around a call rebinds, and whether an
expression is constant across its iterations (a literal, or names the loop never binds).

Kept apart from the rule so that loading the rule (every run does, for its metadata) does not
load libcst: the visitors subclass libcst's."""

from __future__ import annotations

import libcst as cst

__all__ = ["Loops", "constant"]


class Loops(cst.CSTVisitor):
    """For each wanted call: the names its innermost enclosing loop (same function) binds,
    or None when no loop of the same function encloses it."""

    def __init__(self, wanted: set[int]) -> None:
        self.wanted = wanted
        self.stack: list[list[cst.CSTNode]] = [[]]
        self.found: dict[int, set[str] | None] = {}

    def _push_scope(self) -> None:
        self.stack.append([])

    def _pop_scope(self) -> None:
        self.stack.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._push_scope()

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._pop_scope()

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self._push_scope()

    def leave_Lambda(self, node: cst.Lambda) -> None:
        self._pop_scope()

    def visit_For(self, node: cst.For) -> None:
        self.stack[-1].append(node)

    def leave_For(self, node: cst.For) -> None:
        self.stack[-1].pop()

    def visit_While(self, node: cst.While) -> None:
        self.stack[-1].append(node)

    def leave_While(self, node: cst.While) -> None:
        self.stack[-1].pop()

    def visit_Call(self, node: cst.Call) -> None:
        if id(node) in self.wanted:
            loops = self.stack[-1]
            self.found[id(node)] = _bound_names(loops[-1]) if loops else None


class _Binder(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: set[str] = set()

    def _target(self, node: cst.CSTNode) -> None:
        for sub in _names_in(node):
            self.names.add(sub)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._target(target.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._target(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._target(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._target(node.target)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._target(node.target)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._target(node.asname.name)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._target(node.target)

    def visit_Call(self, node: cst.Call) -> None:
        # `xs.append(...)`, `xs.extend(...)`: the list changes in the loop
        if isinstance(node.func, cst.Attribute) and isinstance(node.func.value, cst.Name) \
                and node.func.attr.value in ("append", "extend", "insert", "update", "pop", "clear"):
            self.names.add(node.func.value.value)


def _names_in(node: cst.CSTNode) -> list[str]:
    if isinstance(node, cst.Name):
        return [node.value]
    if isinstance(node, (cst.Tuple, cst.List)):
        out = []
        for el in node.elements:
            out.extend(_names_in(el.value))
        return out
    if isinstance(node, cst.StarredElement):
        return _names_in(node.value)
    if isinstance(node, (cst.Subscript, cst.Attribute)):
        return _names_in(node.value)  # `w[i] = ...` / `cfg.w = ...` changes `w` / `cfg`
    return []


def _bound_names(loop: cst.CSTNode) -> set[str]:
    binder = _Binder()
    loop.visit(binder)
    return binder.names


def constant(expr: cst.BaseExpression, bound: set[str] | None) -> bool:
    """The expression has the same value on every iteration (literal data, or names the loop
    never rebinds), and is not a plain number."""
    if isinstance(expr, (cst.List, cst.Tuple)):
        return bool(expr.elements) and all(
            not isinstance(el, cst.StarredElement) and _literal(el.value) for el in expr.elements)
    if bound is None:
        return False
    names = _names_in(expr) if isinstance(expr, (cst.Name, cst.Attribute)) else []
    return bool(names) and not (set(names) & bound)


def _literal(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, (cst.Integer, cst.Float)):
        return True
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        return _literal(expr.expression)
    if isinstance(expr, (cst.List, cst.Tuple)):
        return bool(expr.elements) and all(_literal(el.value) for el in expr.elements
                                           if not isinstance(el, cst.StarredElement))
    if isinstance(expr, cst.Name):
        return expr.value in ("True", "False")
    return False
