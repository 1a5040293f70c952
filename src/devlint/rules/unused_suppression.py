"""DEV001 unused-suppression: a `# noqa: DEV107` that silences nothing is itself reported."""

from typing import TYPE_CHECKING

from devlint.findings import Severity
from devlint.rules.base import Rule

if TYPE_CHECKING:  # pragma: no cover
    from devlint.findings import Finding

rule = Rule(
    code="DEV001",
    name="unused-suppression",
    severity=Severity.INFO,
    summary="A suppression comment names a devlint code that is not reported on its line.",
    why="""
        A `# noqa: DEV107` written for a bug that has since been fixed stays on the line, and
        silences the next real finding there without anyone deciding to. Reporting the comments
        that silence nothing keeps every suppression a decision someone made (like Ruff's
        RUF100). Off by default, as the DEV3xx rules: select it with `--extend-select DEV001`.
    """,
    bad="""
        for x, y in loader:
            x = x.to(device)  # noqa: DEV107
            out = model(x)
    """,
    good="""
        for x, y in loader:
            x = x.to(device)
            out = model(x)
    """,
    default_enabled=False,
    limits="""
        Only codes of rules that ran are judged (a comment for a rule you turned off is left
        alone), and a bare `# noqa` is never reported: it may be meant for another tool. A bare
        `# devlint: ignore` that silences nothing is reported, and so is a code that no rule
        has (`# noqa: DEV999`, a typo), which can never silence anything.
    """,
)
# DEV001 findings are produced by devlint.runner after suppression comments are applied.


def finding(path: str, line: int, column: int, codes: tuple[str, ...]) -> "Finding":
    """The DEV001 finding for a suppression comment at (line, column) that silenced nothing."""
    from devlint.findings import make_finding

    from devlint.rules import all_rules

    known = {r.code for r in all_rules()}
    unknown = [code for code in codes if code not in known]
    named = ", ".join(codes)
    if unknown:
        message = (f"unknown code in a suppression: {', '.join(unknown)} is not a devlint rule (see `devlint rules`), "
                   f"so it silences nothing; correct or remove `{named}`")
    elif codes:
        message = f"unused suppression: nothing on this line is reported as {named}; remove `{named}` from the comment"
    else:
        message = "unused suppression: `# devlint: ignore` silences nothing on this line; remove it"
    return make_finding(rule.code, rule.name, rule.severity, path, (line, column, line, column + 1), message,
                        statement_lines=(line, line))
