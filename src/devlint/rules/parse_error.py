"""DEV000 parse-error: a file that cannot be read or parsed is reported, never skipped silently."""

from typing import TYPE_CHECKING

from devlint.findings import Severity
from devlint.limits import (MAX_BRACKET_DEPTH, MAX_DATA_ITEMS, MAX_EXPRESSION_DEPTH, MAX_SOURCE_BYTES,
                            MAX_STATEMENT_DEPTH, MAX_STATEMENT_ITEMS)
from devlint.rules.base import Rule

if TYPE_CHECKING:  # pragma: no cover
    from devlint.findings import Finding

rule = Rule(
    code="DEV000",
    name="parse-error",
    severity=Severity.ERROR,
    summary="The file cannot be read or parsed, so nothing in it was checked.",
    why="""
        devlint reads every file it is given. A file with a syntax error or bytes that are
        not valid in its encoding cannot be analysed, so a device bug in it would go unseen;
        reporting it keeps a CI job from passing by accident. Every other file is still checked.
        What is a syntax error is decided by the interpreter that runs devlint (its `compile()`,
        never executed), at its line and column, and no suppression comment silences DEV000.
        In a notebook, where IPython runs each cell on its own, a cell that does not parse is
        reported and the other cells are checked.
    """,
    limits=f"""
        Besides syntax errors and undecodable bytes, a file is reported, and not analysed, when
        its Python text is larger than {MAX_SOURCE_BYTES / 1_000_000:g} MB (such files are generated:
        leave them out with the `exclude` setting; a notebook's outputs do not count), when
        brackets nest more than {MAX_BRACKET_DEPTH} levels (CPython refuses those too), when one
        statement nests more than {MAX_EXPRESSION_DEPTH} operators deep, when blocks nest more than
        {MAX_STATEMENT_DEPTH} levels (an `elif` counting as one more), or when data literals hold more
        than {MAX_STATEMENT_ITEMS:,} items in one statement or {MAX_DATA_ITEMS:,} elements in a file.
        No hand-written program comes near these limits; beyond them the parser's time and memory
        grow without bound. Files that are binary (NUL bytes), encoded as UTF-16 or UTF-32,
        notebooks that are not valid JSON, folders, unreadable paths, links that lead nowhere and
        paths that are not regular files (a FIFO, a device) are reported the same way. A file
        Python compiles but libcst cannot parse is not reported: it is left unanalysed.
    """,
    bad="""
        def train(model, loader:
            ...
    """,
    good="""
        def train(model, loader):
            ...
    """,
)
# DEV000 findings are produced by the engine when parsing fails; the rule has no check.


def finding(path: str, message: str, line: int = 1, column: int = 1) -> "Finding":
    """The DEV000 finding for a file that could not be read, parsed or analysed."""
    from devlint.findings import make_finding

    return make_finding(rule.code, rule.name, rule.severity, path, (line, column, line, column), message)
