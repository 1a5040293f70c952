"""Building fixes: libcst nodes in, source edits out.

A rule that knows the repair builds the new node (or the line to insert) with libcst and turns
it into an edit of the exact span the old node occupied, so the rest of the file keeps every
byte, comment and blank line. The fixer (devlint.fix.apply) applies edits, re-parses the result and
refuses anything that breaks the file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from devlint.findings import Fix

if TYPE_CHECKING:  # pragma: no cover
    from devlint.analysis.program import Program

_EMPTY = cst.Module(body=[])


def code(node: cst.CSTNode) -> str:
    return _EMPTY.code_for_node(node)


def replace_node(program: "Program", node: cst.CSTNode, new: cst.CSTNode | str, description: str,
                 *, safe: bool) -> Fix:
    """Replace the source span of `node` with `new` (a node, or source text)."""
    line, col, end_line, end_col = program.position(node)
    text = new if isinstance(new, str) else code(new)
    return Fix(description, safe, ((line, col, end_line, end_col, text),))


def insert_line_before(program: "Program", statement: cst.CSTNode, line_text: str, description: str,
                       *, safe: bool) -> Fix:
    line, col, _, _ = program.position(statement)
    indent = " " * (col - 1)
    return Fix(description, safe, ((line, 1, line, 1, f"{indent}{line_text}\n"),))


def delete_statement(program: "Program", statement: cst.SimpleStatementLine, description: str,
                     *, safe: bool) -> Fix:
    """Remove a whole simple-statement line (its trailing newline included)."""
    line, _, end_line, _ = program.position(statement)
    return Fix(description, safe, ((line, 1, end_line + 1, 1, ""),))


def add_keyword(program: "Program", call: cst.Call, keyword: str, value: str, description: str,
                *, safe: bool) -> Fix:
    """`f(a, b)` -> `f(a, b, keyword=value)`, built as a libcst transformation of the call."""
    args = list(call.args)
    new_arg = cst.Arg(value=cst.parse_expression(value), keyword=cst.Name(keyword),
                      equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                            whitespace_after=cst.SimpleWhitespace("")))
    if args:
        last = args[-1]
        if last.comma is cst.MaybeSentinel.DEFAULT:
            args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        else:
            new_arg = new_arg.with_changes(comma=last.comma)
            args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    args.append(new_arg)
    return replace_node(program, call, call.with_changes(args=args), description, safe=safe)
