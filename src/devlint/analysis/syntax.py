"""libcst syntax helpers: source text of nodes, literal values, blocks, and the one tree walker.

Everything here reads syntax and nothing else; the analysis and the phase oracle use it, the
rules never do. Walking is done over the nodes' dataclass fields with an explicit stack:
libcst's own visitors rebuild every node of the tree, and `isinstance` against libcst's
abstract base classes costs more than the walk itself, so node types are classified once.
"""

from __future__ import annotations

import dataclasses
from typing import Iterable, Iterator

import libcst as cst

from devlint.analysis.codegen import text_of
from devlint.knowledge.conventions import SETTING_HOLDERS


OPERATORS: dict[type, str] = {
    cst.Add: "+", cst.Subtract: "-", cst.Multiply: "*", cst.Divide: "/", cst.FloorDivide: "//",
    cst.Modulo: "%", cst.Power: "**", cst.MatrixMultiply: "@", cst.BitAnd: "&", cst.BitOr: "|",
    cst.BitXor: "^", cst.LeftShift: "<<", cst.RightShift: ">>", cst.Equal: "==",
    cst.NotEqual: "!=", cst.LessThan: "<", cst.LessThanEqual: "<=", cst.GreaterThan: ">",
    cst.GreaterThanEqual: ">=", cst.AddAssign: "+", cst.SubtractAssign: "-",
    cst.MultiplyAssign: "*", cst.DivideAssign: "/", cst.MatrixMultiplyAssign: "@",
    cst.FloorDivideAssign: "//", cst.ModuloAssign: "%", cst.PowerAssign: "**",
    cst.BitAndAssign: "&", cst.BitOrAssign: "|", cst.BitXorAssign: "^",
    cst.LeftShiftAssign: "<<", cst.RightShiftAssign: ">>",
}
_EMPTY_MODULE = cst.Module(body=[])


def dotted(node: cst.BaseExpression) -> str | None:
    """`a.b.c` as a string, or None for anything that is not a plain dotted name."""
    parts = []
    while type(node) is cst.Attribute:
        parts.append(node.attr.value)
        node = node.value
    if type(node) is cst.Name:
        parts.append(node.value)
        return ".".join(reversed(parts))
    return None
_CODE_CACHE: dict[int, tuple[cst.CSTNode, str]] = {}


def code_of(node: cst.CSTNode) -> str:
    """Source text of a node, for messages and device expressions.

    Names, dotted names and operators are read directly; anything else is generated once and
    cached, because libcst's code generation costs more than the analysis of the node."""
    if type(node) is cst.Name:
        return node.value
    op = OPERATORS.get(type(node))
    if op is not None:
        return op
    if type(node) is cst.Attribute:
        text = dotted(node)
        if text is not None:
            return text
    if type(node) is cst.Integer or type(node) is cst.Float or type(node) is cst.SimpleString:
        return node.value
    cached = _CODE_CACHE.get(id(node))
    if cached is not None and cached[0] is node:
        return cached[1]
    text = text_of(node)  # the common expressions, written without libcst's code generation
    if text is not None:
        text = text.strip()
    else:
        try:
            text = _EMPTY_MODULE.code_for_node(node).strip()
        except Exception:  # pragma: no cover - defensive: messages must never crash the run
            text = "?"
    if len(_CODE_CACHE) > 50_000:
        _CODE_CACHE.clear()
    _CODE_CACHE[id(node)] = (node, text)
    return text


# --- literals --------------------------------------------------------------------------------

def string_value(node: cst.BaseExpression) -> str | None:
    """The value of a (possibly concatenated) string literal; None for anything else."""
    if type(node) is cst.SimpleString:
        raw = node.value
        quote = raw[-1]
        body_start = raw.index(quote)
        prefix = raw[:body_start].lower()
        if "b" in prefix:
            return None
        if "\\" not in raw and "f" not in prefix:  # no escapes: strip prefix and quotes
            width = 3 if raw[body_start:body_start + 3] in ('"""', "'''") else 1
            return raw[body_start + width:len(raw) - width]
        try:
            value = node.evaluated_value
        except Exception:
            return None
        return value if isinstance(value, str) else None
    if type(node) is cst.ConcatenatedString:
        left, right = string_value(node.left), string_value(node.right)
        if left is not None and right is not None:
            return left + right
    return None


def fstring_prefix(node: cst.BaseExpression) -> str | None:
    """The literal text parts of an f-string, joined; None for anything else."""
    if type(node) is cst.FormattedString:
        return "".join(p.value for p in node.parts if type(p) is cst.FormattedStringText)
    return None


def constant_key(node: cst.Subscript) -> object | None:
    """The literal key of `x["labels"]` / `x[0]` / `x[-1]`; None for any other subscript."""
    if len(node.slice) != 1 or type(node.slice[0].slice) is not cst.Index:
        return None
    value = node.slice[0].slice.value
    text = string_value(value)
    if text is not None:
        return text
    if type(value) is cst.Integer:
        try:
            return int(value.value, 0)
        except ValueError:
            return None
    if type(value) is cst.UnaryOperation and type(value.operator) is cst.Minus \
            and type(value.expression) is cst.Integer:
        return -int(value.expression.value, 0)
    return None


def display_items(node: cst.CSTNode) -> tuple[str, ...] | None:
    """The elements of a list or tuple display as written (a starred one keeps its star)."""
    if type(node) is not cst.List and type(node) is not cst.Tuple:
        return None
    return tuple(("*" + code_of(el.value)) if type(el) is cst.StarredElement else code_of(el.value)
                 for el in node.elements)


_NUMBER_METHODS = frozenset({"size", "dim", "numel", "item", "ndimension", "nelement", "element_size"})
_NUMBER_FUNCTIONS = frozenset({"min", "max", "abs", "int", "float", "round", "len", "sum", "pow"})
_ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.FloorDivide, cst.Modulo, cst.Power)


def is_number_expression(node: cst.BaseExpression) -> bool:
    """Arithmetic that visibly makes a Python number (`(max_position - 1) / mid`, `min(a, b)`,
    `math.log(n)`) even when its operands are unknown: `torch.tensor` of it is 0-dim."""
    if type(node) in (cst.Integer, cst.Float):
        return True
    if type(node) is cst.UnaryOperation:
        return type(node.operator) in (cst.Minus, cst.Plus) and is_number_expression(node.expression)
    if type(node) is cst.BinaryOperation and isinstance(node.operator, _ARITHMETIC):
        sides = (node.left, node.right)
        if any(type(side) in (cst.List, cst.Tuple, cst.ListComp, cst.Set, cst.Dict) for side in sides):
            return False  # `[0] * n` is a list
        return any(is_number_expression(side) for side in sides)
    if type(node) is cst.Call:
        name = dotted(node.func) or ""
        if type(node.func) is cst.Attribute and node.func.attr.value in _NUMBER_METHODS \
                and (node.args or node.func.attr.value != "size"):
            return True  # `x.size(-1)`, `x.dim()`, `x.numel()`, `t.item()`
        return name in _NUMBER_FUNCTIONS or name.startswith("math.")
    if type(node) is cst.Attribute and type(node.value) is cst.Call:
        # `torch.finfo(x.dtype).min`: a limit of a number type is a Python number
        return (dotted(node.value.func) or "").rsplit(".", 1)[-1] in ("finfo", "iinfo")
    return False


def option_dest(call: cst.Call) -> str | None:
    """The attribute `add_argument(...)` stores into: `dest=`, else the first long option
    (`--num-workers` gives `num_workers`), else the positional name."""
    names = []
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "dest":
            dest = arg.value.evaluated_value if type(arg.value) is cst.SimpleString else None
            return dest if isinstance(dest, str) else None  # (not a bytes literal)
        if arg.keyword is None and type(arg.value) is cst.SimpleString:
            text = arg.value.evaluated_value
            if isinstance(text, str):
                names.append(text)
    if not names:
        return None
    chosen = next((n for n in names if n.startswith("--")), names[0])
    return chosen.lstrip("-").replace("-", "_") or None


# --- statements and blocks ---------------------------------------------------------------------

def block(node: cst.BaseSuite) -> list[cst.CSTNode]:
    """The statements of a suite (an indented block, or `if x: a; b` on one line)."""
    if type(node) is cst.IndentedBlock:
        return list(node.body)
    if type(node) is cst.SimpleStatementSuite:
        return [cst.SimpleStatementLine(body=node.body)]
    return []


def terminates(body: Iterable[cst.CSTNode]) -> bool:
    """True when a block always leaves (return / raise / continue / break as last statement)."""
    stmts = list(body)
    if not stmts:
        return False
    last = stmts[-1]
    if type(last) is cst.SimpleStatementLine:
        return any(type(s) in (cst.Return, cst.Raise, cst.Continue, cst.Break) for s in last.body)
    return False


def is_main_guard(stmt: cst.CSTNode) -> bool:
    """`if __name__ == "__main__":` (either operand order, either quote)."""
    if type(stmt) is not cst.If or type(stmt.test) is not cst.Comparison:
        return False
    test = stmt.test
    if len(test.comparisons) != 1 or type(test.comparisons[0].operator) is not cst.Equal:
        return False
    sides = {code_of(test.left).strip(), code_of(test.comparisons[0].comparator).strip()}
    return "__name__" in sides and bool(sides & {'"__main__"', "'__main__'"})


def count_lines(module: cst.Module) -> int:
    """A cheap size measure (statements are what the step budget counts; lines track them)."""
    if not module.body:
        return 0
    return sum(1 + len(getattr(getattr(stmt, "body", None), "body", ()) or ()) for stmt in module.body)


def statements(body: Iterable[cst.CSTNode]) -> Iterator[cst.CSTNode]:
    """Every statement in a block, descending into compound statements but never expressions."""
    stack = list(reversed(list(body)))
    while stack:
        node = stack.pop()
        yield node
        if type(node) is cst.SimpleStatementLine:
            continue
        children: list[cst.CSTNode] = []
        for attr in ("body", "orelse", "handlers", "finalbody", "cases"):
            part = getattr(node, attr, None)
            if part is None:
                continue
            if isinstance(part, (list, tuple)):
                children.extend(part)
            elif isinstance(part, cst.BaseSuite):
                inner = part.body
                children.extend(inner if isinstance(inner, (list, tuple)) else [])
            else:
                children.append(part)
        stack.extend(reversed(children))


# --- the tree walker ---------------------------------------------------------------------------

_SUITE_HOLDERS = (cst.BaseCompoundStatement, cst.BaseSuite, cst.Else, cst.Finally, cst.ExceptHandler,
                  cst.ExceptStarHandler, cst.MatchCase, cst.If)
# layout nodes hold no calls and no loops: a walk for code never descends into them
_LAYOUT = (cst.BaseParenthesizableWhitespace, cst.TrailingWhitespace, cst.EmptyLine, cst.Comment,
           cst.Newline, cst.Comma, cst.Dot, cst.LeftParen, cst.RightParen, cst.LeftSquareBracket,
           cst.RightSquareBracket, cst.LeftCurlyBrace, cst.RightCurlyBrace, cst.Semicolon, cst.Colon,
           cst.AssignEqual, cst.BaseBinaryOp, cst.BaseBooleanOp, cst.BaseCompOp, cst.BaseUnaryOp,
           cst.BaseAugOp, cst.Name, cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString)
_LAYOUT_FIELDS = frozenset({
    "lpar", "rpar", "comma", "semicolon", "leading_lines", "lines_after_decorators", "header", "footer",
    "newline", "dot", "colon", "equal", "operator", "lbracket", "rbracket", "lbrace", "rbrace",
    "trailing_whitespace", "star", "asynchronous",
})
NESTED_SCOPES = frozenset({cst.FunctionDef, cst.ClassDef, cst.Lambda})


class _NodeType:
    """What a walk needs to know of one node type, decided once."""

    __slots__ = ("is_node", "holds_blocks", "is_code", "fields", "code_fields")

    def __init__(self, kind: type) -> None:
        self.is_node = issubclass(kind, cst.CSTNode)
        self.holds_blocks = self.is_node and issubclass(kind, _SUITE_HOLDERS)
        self.is_code = self.is_node and not issubclass(kind, _LAYOUT)
        names = tuple(f.name for f in dataclasses.fields(kind)) if self.is_node else ()
        self.fields = names
        self.code_fields = tuple(n for n in names if "whitespace" not in n and n not in _LAYOUT_FIELDS)


_TYPES: dict[type, _NodeType] = {}


def node_type(kind: type) -> _NodeType:
    known = _TYPES.get(kind)
    if known is None:
        known = _TYPES[kind] = _NodeType(kind)
    return known


def _parts(node: cst.CSTNode, names: tuple[str, ...]) -> Iterator[object]:
    for name in names:
        value = getattr(node, name)
        if type(value) is tuple or type(value) is list:
            yield from value
        else:
            yield value


def code_children(node: cst.CSTNode, scopes: bool = True) -> list[cst.CSTNode]:
    """The child nodes that can hold code; nested functions, classes and lambdas only when
    `scopes` (layout nodes never matter to a walk for code)."""
    out: list[cst.CSTNode] = []
    for part in _parts(node, node_type(type(node)).code_fields):
        kind = type(part)
        if (_TYPES.get(kind) or node_type(kind)).is_code and (scopes or kind not in NESTED_SCOPES):
            out.append(part)  # type: ignore[arg-type]
    return out


def walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Every node under `node` (itself included), in no particular order."""
    stack: list[cst.CSTNode] = [node]
    while stack:
        current = stack.pop()
        yield current
        for part in _parts(current, node_type(type(current)).fields):
            if (_TYPES.get(type(part)) or node_type(type(part))).is_node:
                stack.append(part)  # type: ignore[arg-type]


def function_ids(module: cst.Module) -> set[int]:
    """ids of every FunctionDef in the module, found through statement blocks only (a def can
    only stand in one), so no expression is visited."""
    ids: set[int] = set()
    stack: list[cst.CSTNode] = list(module.body)
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is cst.FunctionDef:
            ids.add(id(node))
        elif kind is cst.SimpleStatementLine or not node_type(kind).holds_blocks:
            continue
        for part in _parts(node, node_type(kind).fields):
            if (_TYPES.get(type(part)) or node_type(type(part))).holds_blocks:
                stack.append(part)  # type: ignore[arg-type]
    return ids


def mentions_yield(fn: cst.FunctionDef) -> bool:
    """Whether the function's own statements (nested functions and classes left out) contain the
    text "yield": a `yield`, or a name, string or comment holding it.

    The same answer as looking for "yield" in the generated code of those statements, read from
    the nodes' fields instead: generating the code cost more than the rest of the analysis."""
    stack: list[object] = [stmt for stmt in block(fn.body)
                           if type(stmt) is not cst.FunctionDef and type(stmt) is not cst.ClassDef]
    while stack:
        node = stack.pop()
        if type(node) is cst.Yield:
            return True
        for name in node_type(type(node)).fields:
            value = getattr(node, name)
            kind = type(value)
            if kind is str:
                if "yield" in value:
                    return True
            elif kind is tuple or kind is list:
                for item in value:
                    if type(item) is str:
                        if "yield" in item:
                            return True
                    elif (_TYPES.get(type(item)) or node_type(type(item))).is_node:
                        stack.append(item)
            elif (_TYPES.get(kind) or node_type(kind)).is_node:
                stack.append(value)
    return False


# --- loops (DEV303: is a factory's data the same on every iteration?) --------------------------

_REBINDING_METHODS = frozenset({"append", "extend", "insert", "update", "pop", "clear"})
_BOUND: dict[int, tuple[cst.CSTNode, frozenset[str]]] = {}


def _target_names(node: cst.CSTNode) -> list[str]:
    if type(node) is cst.Name:
        return [node.value]
    if type(node) is cst.Tuple or type(node) is cst.List:
        out = []
        for el in node.elements:
            out.extend(_target_names(el.value))
        return out
    if type(node) is cst.StarredElement:
        return _target_names(node.value)
    if type(node) is cst.Subscript or type(node) is cst.Attribute:
        return _target_names(node.value)  # `w[i] = ...` / `cfg.w = ...` changes `w` / `cfg`
    return []


def bound_names(loop: cst.CSTNode) -> frozenset[str]:
    """The names a loop (its target, its body, everything nested in it) binds or mutates."""
    cached = _BOUND.get(id(loop))
    if cached is not None and cached[0] is loop:
        return cached[1]
    names: set[str] = set()
    for node in walk(loop):
        kind = type(node)
        if kind is cst.Assign:
            for target in node.targets:  # type: ignore[attr-defined]
                names.update(_target_names(target.target))
        elif kind in (cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor, cst.NamedExpr):
            names.update(_target_names(node.target))  # type: ignore[attr-defined]
        elif kind is cst.WithItem and node.asname is not None:  # type: ignore[attr-defined]
            names.update(_target_names(node.asname.name))  # type: ignore[attr-defined]
        elif kind is cst.Call:
            func = node.func  # type: ignore[attr-defined]
            # `xs.append(...)`, `xs.extend(...)`: the list changes in the loop
            if type(func) is cst.Attribute and type(func.value) is cst.Name \
                    and func.attr.value in _REBINDING_METHODS:
                names.add(func.value.value)
    frozen = frozenset(names)
    if len(_BOUND) > 4096:
        _BOUND.clear()
    _BOUND[id(loop)] = (loop, frozen)
    return frozen


def constant_across_iterations(expr: cst.BaseExpression, bound: frozenset[str] | None) -> bool:
    """The expression has the same value on every iteration (literal data, or names the loop
    never rebinds; `bound` None when no loop of the same function encloses it), and is not a
    plain number."""
    if type(expr) is cst.List or type(expr) is cst.Tuple:
        return bool(expr.elements) and all(
            type(el) is not cst.StarredElement and _literal(el.value) for el in expr.elements)
    if bound is None:
        return False
    names = _target_names(expr) if type(expr) in (cst.Name, cst.Attribute) else []
    return bool(names) and not (set(names) & bound)


def _literal(expr: cst.BaseExpression) -> bool:
    if type(expr) in (cst.Integer, cst.Float):
        return True
    if type(expr) is cst.UnaryOperation and type(expr.operator) is cst.Minus:
        return _literal(expr.expression)
    if type(expr) is cst.List or type(expr) is cst.Tuple:
        return bool(expr.elements) and all(_literal(el.value) for el in expr.elements
                                           if type(el) is not cst.StarredElement)
    if type(expr) is cst.Name:
        return expr.value in ("True", "False")
    return False


def is_setting_attribute(node: cst.CSTNode | None) -> bool:
    """`args.device`, `self.device`, `self.cfg.device`: an attribute of a name (or of a settings
    object held by `self`) that holds the program's settings (the chosen device), not of a
    tensor the analysis cannot see."""
    if type(node) is not cst.Attribute:
        return False
    holder = node.value
    if type(holder) is cst.Attribute and type(holder.value) is cst.Name and holder.value.value == "self":
        holder = holder.attr  # `self.cfg.device`: the settings object the instance keeps
    return type(holder) is cst.Name and holder.value in SETTING_HOLDERS


def follows_a_tensor(test: cst.BaseExpression) -> bool:
    """`"cuda" if x.is_cuda else "cpu"` names the device a tensor is already on: it is no CPU
    fallback the program offers (a `.cuda()` elsewhere still needs a GPU, DEV202)."""
    return type(test) is cst.Attribute and test.attr.value == "is_cuda"
