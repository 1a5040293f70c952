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
                 *, safe: bool) -> Fix | None:
    """Replace the source span of `node` with `new` (a node, or source text)."""
    if file_of(program, node) is None:
        return None
    line, col, end_line, end_col = program.position(node)
    text = new if isinstance(new, str) else code(new)
    return Fix(description, safe, ((line, col, end_line, end_col, text),))


def file_of(program: "Program", node: cst.CSTNode) -> str | None:
    """The file that holds `node`: the checked one, or a project file the analysis read."""
    found = program.find(node)
    return found[0] if found is not None else None


def same_file(program: "Program", node: cst.CSTNode, other: cst.CSTNode) -> bool:
    """A fix edits the file its finding is reported in: a repair at `node` for a finding at
    `other` is made only when both are in one file (a module built in models.py and called in
    train.py is not repaired through train.py's finding)."""
    path = file_of(program, node)
    return path is not None and path == file_of(program, other)


def source_of(program: "Program", node: cst.CSTNode | None = None) -> str:
    """The text of the file that holds `node` (the checked file by default), as its positions
    count it: one codegen per file, kept while that file is the one fixes are built for."""
    global _LAST
    path = file_of(program, node) if node is not None else program.path
    module = program.module if path in (None, program.path) else program.reached.get(path, program.module)
    if module is program.module and program.source is not None:
        return program.source
    if _LAST is None or _LAST[0] is not module:
        _LAST = (module, module.code)
    return _LAST[1]


_LAST: tuple[cst.Module, str] | None = None


def indentation(program: "Program", node: cst.CSTNode, line: int) -> str:
    """The whitespace that starts line `line` of `node`'s file, as written (tabs stay tabs)."""
    lines = source_of(program, node).splitlines()
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    return text[: len(text) - len(text.lstrip(" \t\f"))]


def insert_line_before(program: "Program", statement: cst.CSTNode, line_text: str, description: str,
                       *, safe: bool) -> Fix | None:
    if file_of(program, statement) is None:
        return None
    line, col, _, _ = program.position(statement)
    indent = indentation(program, statement, line)
    if len(indent) != col - 1:
        return None  # the statement does not start its line (`if x: y`, `a = 1; b = a`)
    return Fix(description, safe, ((line, 1, line, 1, f"{indent}{line_text}\n"),))


def delete_statement(program: "Program", statement: cst.SimpleStatementLine, description: str,
                     *, safe: bool) -> Fix | None:
    """Remove a whole simple-statement line (its trailing newline included)."""
    if file_of(program, statement) is None:
        return None
    line, _, end_line, _ = program.position(statement)
    return Fix(description, safe, ((line, 1, end_line + 1, 1, ""),))


def add_keyword(program: "Program", call: cst.Call, keyword: str, value: str, description: str,
                *, safe: bool) -> Fix | None:
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
