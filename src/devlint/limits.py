"""What devlint refuses to analyse, decided cheaply before the parser sees the text.

libcst's native parser overflows its stack (a segmentation fault, taking the whole run with it)
on expressions nested some thousands of levels deep, and its time grows much faster than
linearly with nesting and with file size: a 20 MB generated file takes minutes and gigabytes.
No hand-written program comes near these limits, so a text beyond them becomes one DEV000
finding that says which limit it passed, and every other file of the run is still checked.

* `MAX_SOURCE_BYTES`: the Python text of one file (a notebook's joined code cells, not its
  outputs). Larger files are generated code (protobuf stubs, exported weights, vendored
  bundles); the message suggests excluding them.
* brackets nested more than `MAX_BRACKET_DEPTH` levels: CPython itself refuses them
  ("too many nested parentheses"), so such a file is not a Python program at all.
* `MAX_EXPRESSION_DEPTH`: an upper bound of how deeply one statement's syntax tree nests
  (operators, attribute and call chains, unary operators, brackets), counted on tokens.
  Real code stays below a hundred; chains of thousands of `-`, `not`, `+` or `.x` are
  generated or hostile input.
* `MAX_STATEMENT_DEPTH`: blocks nested in blocks, an `elif` counting as one level more than
  the branch before it. Real code stays below fifty; an `elif` chain of thousands of branches
  is generated.
* `MAX_STATEMENT_ITEMS`: the operators, commas and brackets of one statement. A statement of
  more than that is a data table (a literal list of numbers), not code that places devices.
  `MAX_FILE_ITEMS` bounds the same count over a whole file, and `MAX_DATA_ITEMS` the elements
  of literals (tables split over many statements).

These are devlint's limits, not Python's: the engine asks CPython first (devlint.validity),
so a file that is not Python at all is reported with CPython's own message and position.
"""

from __future__ import annotations

import re

__all__ = ["MAX_SOURCE_BYTES", "MAX_BRACKET_DEPTH", "MAX_EXPRESSION_DEPTH", "MAX_STATEMENT_DEPTH",
           "MAX_STATEMENT_ITEMS", "MAX_FILE_ITEMS", "MAX_DATA_ITEMS", "size_problem", "nesting_problem"]

MAX_SOURCE_BYTES = 2_000_000  # as project.MAX_PROJECT_FILE_BYTES, for files imported by a check
MAX_BRACKET_DEPTH = 200  # CPython's tokenizer limit (MAXLEVEL)
MAX_EXPRESSION_DEPTH = 1000
# blocks inside blocks, each `elif` of a chain counting as one more (libcst nests an `elif` in
# the `else` of the `if` before it): CPython 3.11 compiles chains of about 3,000, and libcst's
# parser overflows its stack near 8,300; the analysis' time grows with the square of a chain
MAX_STATEMENT_DEPTH = 500
# operators, commas and brackets in one statement: a data table (a list of 50,000 numbers),
# whose tree takes seconds and hundreds of megabytes and where no device is ever placed
MAX_STATEMENT_ITEMS = 50_000
# the same counted over a file: code has about 80,000 a megabyte (so a 2 MB file of code passes),
# a file of data literals three times as many
MAX_FILE_ITEMS = 250_000
# commas right after a number or a string, over a file: the elements of data literals (code has a
# few thousand; each costs libcst and the analysis about a tenth of a millisecond and 4 KB)
MAX_DATA_ITEMS = 100_000

_STRING = r"""[rRbBuUfF]{0,2}(?:\"\"\"(?:\\[\s\S]|[^\\])*?\"\"\"|'''(?:\\[\s\S]|[^\\])*?'''
    |"(?:\\[\s\S]|[^"\\\r\n])*"|'(?:\\[\s\S]|[^'\\\r\n])*')"""
# keywords that add a level to the tree (comparisons, `in` and `is` are flat in every parser)
_KEYWORD = r"(?:and|or|not|if|else|lambda|await|yield)\b"
# One match per token that can change the nesting count. Everything else (strings, comments,
# line continuations, numbers, other names, other characters) is skipped inside the regex
# engine, as the prefix of the next match: the Python loop below sees about half the tokens.
# Every character is covered by the skipped part or by a group, and `end` matches at the end of
# the text, so a match never fails and never backtracks further than one skipped item. A run of
# spaces (a third of a file: indentation) is skipped in one step, before anything else is tried.
_TOKEN = re.compile(
    r"""
    (?:[ \t\f]+|""" + _STRING + r"""
        |\#[^\r\n]*|\\(?:\r\n|\r|\n)|\d[\w.]*|\.\d\w*|(?!""" + _KEYWORD + r""")[^\W\d]\w*
        |[^-+*/%@&|^~.()\[\]{},;\r\n\w\\\#'"<>:]|<(?!<)|>(?!>)|:(?!=)|['"\\]
    )*
    (?:(?P<nl>\r\n|\r|\n)
        |(?P<name>""" + _KEYWORD + r""")
        |(?P<open>[(\[{])
        |(?P<close>[)\]}])
        |(?P<sep>[,;])
        |(?P<op>\*\*|//|<<|>>|:=|[-+*/%@&|^~.])
        |(?P<end>\Z))
    """,
    re.VERBOSE,
)


def size_problem(size: int) -> str | None:
    """Why a Python text of `size` bytes is not analysed, or None when it is small enough."""
    if size <= MAX_SOURCE_BYTES:
        return None
    return (f"too large to analyse: {_megabytes(size)} of Python source, devlint analyses files up to "
            f"{_megabytes(MAX_SOURCE_BYTES)} (large files are usually generated: leave them out with the "
            f"`exclude` setting)")


def _megabytes(size: int) -> str:
    return f"{size / 1_000_000:.1f} MB"


def nesting_problem(text: str) -> tuple[str, int] | None:
    """(why, line) when `text` nests deeper than devlint parses, else None.

    One pass over the tokens (strings and comments skipped). The expression depth is an upper
    bound: every nesting operator of a statement counts, except that a comma or a new statement
    starts counting again, and a bracketed part counts as deep as its deepest element. The
    statement depth is read at the start of each logical line (see `_Blocks`)."""
    if len(text) < MAX_BRACKET_DEPTH:
        return None
    saved: list[tuple[int, int]] = []  # per open bracket: the enclosing level's (ops, finished max)
    carried = 0  # depth of the enclosing levels: their operators so far plus one per bracket
    ops = 0  # nesting operators of the current element at the current level
    done = 0  # deepest finished element at the current level
    blocks = _Blocks()
    items = 0  # tokens seen in the current statement
    statement_start = 0
    total = 0  # tokens seen in the file
    data = 0  # commas right after a number or a string
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup
        items += 1
        total += 1
        if total > MAX_FILE_ITEMS:
            return (f"the file holds more than {MAX_FILE_ITEMS:,} operators, commas and brackets (data "
                    f"tables, not code that places devices), more than devlint analyses",
                    _line_of(text, match.start()))
        if items > MAX_STATEMENT_ITEMS:
            return (f"one statement holds more than {MAX_STATEMENT_ITEMS:,} operators, commas and brackets "
                    f"(a data table, not code that places devices), more than devlint analyses",
                    _line_of(text, statement_start))
        if kind == "op" or kind == "name":
            ops += 1
            if carried + ops > MAX_EXPRESSION_DEPTH:
                return (f"an expression nests more than {MAX_EXPRESSION_DEPTH} levels deep, deeper than "
                        f"devlint parses", _line_of(text, match.start(kind)))
        elif kind == "open":
            if len(saved) >= MAX_BRACKET_DEPTH:
                return (f"brackets are nested more than {MAX_BRACKET_DEPTH} levels deep, which Python itself "
                        f"refuses", _line_of(text, match.start(kind)))
            saved.append((ops, done))
            carried += ops + 1
            ops = done = 0
        elif kind == "close":
            if not saved:
                continue  # unbalanced: the parser reports it
            inner = max(ops, done) + 1
            ops, done = saved.pop()
            carried -= ops + 1
            ops += inner
            if carried + ops > MAX_EXPRESSION_DEPTH:
                return (f"an expression nests more than {MAX_EXPRESSION_DEPTH} levels deep, deeper than "
                        f"devlint parses", _line_of(text, match.start(kind)))
        elif kind == "sep" or (kind == "nl" and not saved):
            if kind == "sep" and match.start(kind) and text[match.start(kind) - 1] in _DATA_END:
                data += 1
                if data > MAX_DATA_ITEMS:
                    return (f"the file's literals hold more than {MAX_DATA_ITEMS:,} elements (data tables, not "
                            f"code that places devices), more than devlint analyses",
                            _line_of(text, statement_start))
            done, ops = max(done, ops), 0
            if not saved:
                done = 0  # a new statement
            if kind == "nl" and not saved:
                items = 0
                statement_start = match.end()
                if blocks.line(text, statement_start) > MAX_STATEMENT_DEPTH:
                    return (f"blocks nest more than {MAX_STATEMENT_DEPTH} levels deep (an `elif` counts as one "
                            f"level inside the branch before it), deeper than devlint analyses",
                            _line_of(text, statement_start))
    return None


_DATA_END = frozenset("0123456789'\"")  # the last character of a number or a string literal
_LINE_START = re.compile(r"([ \t\f]*)(elif\b|else\b|[^\s#\\])?")


class _Blocks:
    """How deeply the statement starting a logical line nests: one level per enclosing
    indented block, plus one per `elif` before it in its chain.

    Indentation is compared by its width in characters, which is all an upper bound needs;
    blank and comment-only lines change nothing, and a line that starts inside brackets, a
    string or after a backslash is never seen here (the caller asks at logical line starts)."""

    def __init__(self) -> None:
        self.widths: list[int] = [0]  # open blocks' indentation
        self.chains: list[int] = [0]  # per open block: the `elif`s of the chain at its level
        self.depth = 0  # sum of both, kept up to date

    def line(self, text: str, start: int) -> int:
        match = _LINE_START.match(text, start)
        if match is None or match.group(2) is None:
            return self.depth  # blank or comment-only line
        word, width = match.group(2), len(match.group(1))
        widths, chains = self.widths, self.chains
        while width < widths[-1]:
            widths.pop()
            self.depth -= 1 + chains.pop()
        if width > widths[-1]:
            widths.append(width)
            chains.append(0)
            self.depth += 1
        if word == "elif":
            chains[-1] += 1
            self.depth += 1
        elif word != "else":
            self.depth -= chains[-1]
            chains[-1] = 0
        return self.depth


def _line_of(text: str, offset: int) -> int:
    return len(re.findall(r"\r\n|\r|\n", text[:offset])) + 1
