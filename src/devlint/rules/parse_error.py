"""DEV000 parse-error: a file that cannot be read or parsed is reported, never skipped silently."""

from devlint.findings import Severity
from devlint.limits import MAX_BRACKET_DEPTH, MAX_EXPRESSION_DEPTH, MAX_SOURCE_BYTES
from devlint.rules.base import Rule

rule = Rule(
    code="DEV000",
    name="parse-error",
    severity=Severity.ERROR,
    summary="The file cannot be read or parsed, so nothing in it was checked.",
    why="""
        devlint reads every file it is given. A file with a syntax error or bytes that are
        not valid in its encoding cannot be analysed, so a device bug in it would go unseen;
        reporting it keeps a CI job from passing by accident. Every other file is still checked.
        In a notebook, where IPython runs each cell on its own, a cell that does not parse is
        reported and the other cells are checked.
    """,
    limits=f"""
        Besides syntax errors and undecodable bytes, a file is reported, and not analysed, when
        its Python text is larger than {MAX_SOURCE_BYTES / 1_000_000:g} MB (such files are generated:
        leave them out with the `exclude` setting; a notebook's outputs do not count), when
        brackets nest more than {MAX_BRACKET_DEPTH} levels (CPython refuses those too), or when
        one statement nests more than {MAX_EXPRESSION_DEPTH} operators deep. No hand-written program comes near these limits; beyond them the
        parser's time and memory grow without bound. Files that are binary (NUL bytes), encoded
        as UTF-16 or UTF-32, notebooks that are not valid JSON, folders and unreadable paths
        are reported the same way.
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


def finding(path: str, message: str, line: int = 1, column: int = 1):
    """The DEV000 finding for a file that could not be read, parsed or analysed."""
    from devlint.findings import make_finding

    return make_finding(rule.code, rule.name, rule.severity, path, (line, column, line, column), message)
