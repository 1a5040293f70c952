"""`--format concise`: one `path:line:col: CODE [severity] message` line per finding, for editors
and grep. The severity is said as in the text report, so a reader of a CI log can tell an error
that fails the job from an info finding without looking the code up."""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from devlint.report import fixable_marker, location

if TYPE_CHECKING:  # pragma: no cover
    from devlint.report import ReportOptions
    from devlint.runner import RunResult


def render(result: "RunResult", stream: TextIO, options: "ReportOptions | None" = None) -> None:
    """`[*]` marks a finding `--fix` repairs (with the flags given), as in Ruff's output."""
    for finding in result.findings:
        message = " ".join(finding.message.split())
        where = location(finding.path, finding.line, finding.column, finding.cell)
        severity = finding.severity.value
        stream.write(f"{where}: {finding.code} [{severity}] {fixable_marker(finding, options)}{message}\n")
