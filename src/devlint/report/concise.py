"""`--format concise`: one `path:line:col: CODE message` line per finding, for editors and grep."""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from devlint.report import location

if TYPE_CHECKING:  # pragma: no cover
    from devlint.runner import RunResult


def render(result: "RunResult", stream: TextIO) -> None:
    for finding in result.findings:
        message = " ".join(finding.message.split())
        where = location(finding.path, finding.line, finding.column, finding.cell)
        stream.write(f"{where}: {finding.code} {message}\n")
