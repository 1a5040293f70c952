"""DEV303 tensor-rebuilt-each-step: a constant tensor is built and copied to the device on
every step of a loop over batches instead of once before it."""

from __future__ import annotations

import libcst as cst

from devlint.analysis.events import Made
from devlint.analysis.interp import code_of
from devlint.findings import Confidence, Severity
from devlint.knowledge import torch as tk
from devlint.rules.base import Report, Rule

rule = Rule(
    code="DEV303",
    name="tensor-rebuilt-each-step",
    severity=Severity.INFO,
    summary="A constant tensor is created and moved to the device inside the loop body.",
    why="""
        `torch.tensor(class_weights).to(device)` inside the training loop builds the same tensor
        from Python data and copies it to the GPU on every step: a host-to-device copy (and a
        synchronisation) per step for a value that never changes. Build it once, on the device,
        before the loop.
    """,
    bad="""
        import torch
        from torch.utils.data import DataLoader, TensorDataset

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = torch.nn.Linear(8, 3).to(device)
        loader = DataLoader(TensorDataset(torch.randn(64, 8), torch.randint(0, 3, (64,))), batch_size=16)
        for x, y in loader:
            weights = torch.tensor([0.2, 0.3, 0.5]).to(device)
            loss = torch.nn.functional.cross_entropy(model(x.to(device)), y.to(device), weight=weights)
    """,
    good="""
        import torch
        from torch.utils.data import DataLoader, TensorDataset

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = torch.nn.Linear(8, 3).to(device)
        loader = DataLoader(TensorDataset(torch.randn(64, 8), torch.randint(0, 3, (64,))), batch_size=16)
        weights = torch.tensor([0.2, 0.3, 0.5]).to(device)
        for x, y in loader:
            loss = torch.nn.functional.cross_entropy(model(x.to(device)), y.to(device), weight=weights)
    """,
    default_enabled=False,
    limits="""
        Only `torch.tensor` / `torch.as_tensor` / `torch.Tensor`-style constructors inside a loop
        over batches are checked, when their data is a literal list or a name the loop never
        rebinds. A number literal (`torch.tensor(0.0, device=device)`, usually an accumulator
        reset each step) is not reported.
    """,
)


class _Loops(cst.CSTVisitor):
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


def _constant(expr: cst.BaseExpression, bound: set[str] | None) -> bool:
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


_DATA = tk.DATA_FACTORIES - {"torch.from_numpy"}


@rule.check
def tensor_rebuilt_each_step(program):
    candidates: list[tuple[Made, bool]] = []
    moved_later = {}
    for move in program.moves:
        origin = move.subject.origin
        if origin is not None and origin.node is not None and move.target.on_device and move.ctx.in_data_loop:
            moved_later.setdefault(id(origin.node), move)
    for made in program.made("factory"):
        if made.qual not in _DATA or not made.ctx.in_data_loop or not isinstance(made.node, cst.Call):
            continue
        positional = [a for a in made.node.args if a.keyword is None and not a.star]
        if not positional:
            continue
        on_device = made.value.place.on_device or id(made.node) in moved_later
        if on_device:
            candidates.append((made, True))
    if not candidates:
        return
    finder = _Loops({id(m.node) for m, _ in candidates})
    program.module.visit(finder)
    for made, _ in candidates:
        bound = finder.found.get(id(made.node), None)
        data = next(a.value for a in made.node.args if a.keyword is None and not a.star)
        if not _constant(data, bound):
            continue
        move = moved_later.get(id(made.node))
        how = ("built on the device" if move is None or made.value.place.on_device
               else f"moved with `.{move.method}(...)`")
        yield Report(
            node=made.node,
            message=(
                f"`{code_of(made.node)}` is the same tensor on every batch, yet it is rebuilt from Python data and "
                f"{how} on every step: a host-to-device copy per step. Build it once, on the device, "
                f"before the loop."
            ),
            confidence=Confidence.DEFINITE,
            ctx=made.ctx,
        )
