"""The source text of the expressions the analysis names, read from their nodes' fields.

The analysis needs the text of `if` tests (a path condition is its text), of factory calls (a
finding quotes them) and of the subscripts it names. libcst's own code generation builds a
state object and walks every node through two generic methods and a context manager each,
which cost as much as the rest of a test's analysis. The tests and calls of real code are made
of a few node types; `text_of` writes those the way their `_codegen_impl` methods do, token for
token, and answers None for anything else (a multi-line expression, a lambda, an f-string), which
`syntax.code_of` then hands to libcst. tests/test_codegen.py holds the two to the same text for
every expression of the fixture corpus.
"""

from __future__ import annotations

from typing import Any, Callable

import libcst as cst
from libcst import MaybeSentinel

# writes one node's text: each takes the node type it is registered for in _WRITERS
Writer = Callable[[Any, list[str]], None]


def text_of(node: cst.CSTNode) -> str | None:
    """libcst's `Module([]).code_for_node(node)` for the covered node types, else None."""
    out: list[str] = []
    try:
        _write(node, out)
    except _NotCovered:
        return None
    return "".join(out)


class _NotCovered(Exception):
    """A node this module does not write (libcst generates its text)."""


def _write(node: object, out: list[str]) -> None:
    writer = _WRITERS.get(type(node))
    if writer is None:
        raise _NotCovered
    writer(node, out)


def _space(node: object, out: list[str]) -> None:
    if type(node) is not cst.SimpleWhitespace:
        raise _NotCovered  # a line break inside brackets, a comment
    out.append(node.value)


def _parenthesized(node: cst.BaseExpression, out: list[str], inner: Writer) -> None:
    for lpar in node.lpar:
        out.append("(")
        _space(lpar.whitespace_after, out)
    inner(node, out)
    for rpar in node.rpar:
        _space(rpar.whitespace_before, out)
        out.append(")")


def _value(node: cst.CSTNode, out: list[str]) -> None:
    out.append(node.value)  # type: ignore[attr-defined]


def _token(node: cst.CSTNode, out: list[str]) -> None:
    _parenthesized(node, out, _value)  # type: ignore[arg-type]


def _one_token_op(node: cst.CSTNode, out: list[str]) -> None:
    _space(node.whitespace_before, out)  # type: ignore[attr-defined]
    out.append(node._get_token())  # type: ignore[attr-defined]
    _space(node.whitespace_after, out)  # type: ignore[attr-defined]


def _two_token_op(node: cst.CSTNode, out: list[str]) -> None:
    first, second = node._get_tokens()  # type: ignore[attr-defined]
    _space(node.whitespace_before, out)  # type: ignore[attr-defined]
    out.append(first)
    _space(node.whitespace_between, out)  # type: ignore[attr-defined]
    out.append(second)
    _space(node.whitespace_after, out)  # type: ignore[attr-defined]


def _unary_op(node: cst.CSTNode, out: list[str]) -> None:
    out.append(node._get_token())  # type: ignore[attr-defined]
    _space(node.whitespace_after, out)  # type: ignore[attr-defined]


def _or_default(node: object, default: str, out: list[str]) -> None:
    """A comma, an `=` or a colon as parsed, or libcst's default text where the node left it
    unset (`MaybeSentinel.DEFAULT`: the last argument's comma, a slice without a second colon)."""
    if node is MaybeSentinel.DEFAULT:
        out.append(default)
    else:
        _write(node, out)


def _call(node: cst.Call, out: list[str]) -> None:
    _write(node.func, out)
    _space(node.whitespace_after_func, out)
    out.append("(")
    _space(node.whitespace_before_args, out)
    last = len(node.args) - 1
    for index, arg in enumerate(node.args):
        out.append(arg.star)
        _space(arg.whitespace_after_star, out)
        if arg.keyword is not None:
            _write(arg.keyword, out)
        _or_default(arg.equal, " = " if arg.keyword is not None else "", out)
        _write(arg.value, out)
        _or_default(arg.comma, ", " if index != last else "", out)
        _space(arg.whitespace_after_arg, out)
    out.append(")")


def _subscript(node: cst.Subscript, out: list[str]) -> None:
    _write(node.value, out)
    _space(node.whitespace_after_value, out)
    out.append("[")
    _space(node.lbracket.whitespace_after, out)
    last = len(node.slice) - 1
    for index, element in enumerate(node.slice):
        part = element.slice
        if type(part) is cst.Index:
            if part.star is not None:
                out.append(part.star)
            if part.whitespace_after_star is not None:
                _space(part.whitespace_after_star, out)
            _write(part.value, out)
        elif type(part) is cst.Slice:
            _slice(part, out)
        else:
            raise _NotCovered
        _or_default(element.comma, ", " if index != last else "", out)
    _space(node.rbracket.whitespace_before, out)
    out.append("]")


def _slice(node: cst.Slice, out: list[str]) -> None:
    if node.lower is not None:
        _write(node.lower, out)
    _write(node.first_colon, out)
    if node.upper is not None:
        _write(node.upper, out)
    _or_default(node.second_colon, ":" if node.step is not None else "", out)
    if node.step is not None:
        _write(node.step, out)


def _comparison(node: cst.Comparison, out: list[str]) -> None:
    _write(node.left, out)
    for target in node.comparisons:
        _write(target.operator, out)
        _write(target.comparator, out)


def _expression(inner: Writer) -> Writer:
    return lambda node, out: _parenthesized(node, out, inner)


def _parts(*fields: str) -> Writer:
    """A writer of an expression made of these parts, in this order (`a.b`, `a + b`, `not a`)."""
    def write(node: cst.CSTNode, out: list[str]) -> None:
        for name in fields:
            _write(getattr(node, name), out)
    return _expression(write)


_WRITERS: dict[type, Writer] = {
    cst.Name: _token, cst.Integer: _token, cst.Float: _token, cst.Imaginary: _token, cst.SimpleString: _token,
    cst.Ellipsis: _expression(lambda n, o: o.append("...")),
    cst.Attribute: _parts("value", "dot", "attr"),
    cst.Call: _expression(_call),
    cst.Subscript: _expression(_subscript),
    cst.Comparison: _expression(_comparison),
    cst.BooleanOperation: _parts("left", "operator", "right"),
    cst.BinaryOperation: _parts("left", "operator", "right"),
    cst.UnaryOperation: _parts("operator", "expression"),
    cst.NotIn: _two_token_op, cst.IsNot: _two_token_op,
    cst.Not: _unary_op, cst.Minus: _unary_op, cst.Plus: _unary_op, cst.BitInvert: _unary_op,
}
for _op in (cst.Dot, cst.Comma, cst.Colon, cst.AssignEqual, cst.And, cst.Or, cst.Equal, cst.NotEqual,
            cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual, cst.In, cst.Is,
            cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.FloorDivide, cst.Modulo, cst.Power,
            cst.MatrixMultiply, cst.BitAnd, cst.BitOr, cst.BitXor, cst.LeftShift, cst.RightShift):
    _WRITERS[_op] = _one_token_op
