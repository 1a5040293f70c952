"""DEV000 parse-error: a file that cannot be read or parsed is reported, never skipped silently."""

from devlint.findings import Severity
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
