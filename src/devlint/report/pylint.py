"""`--output-format pylint`: `path:line: [CODE] message`, pylint's parseable format as Ruff writes it.

For tools that parse pylint's output (Jenkins' warnings plugin, editors' problem matchers,
SonarQube's pylint import). A notebook finding is placed at the line of the `.ipynb` file that
holds its cell line, which a `path:line` parser can open, and its message names the cell.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from devlint.report.places import cell_prefix, disk_span

if TYPE_CHECKING:  # pragma: no cover
    from devlint.report import ReportOptions
    from devlint.runner import RunResult


def render(result: "RunResult", stream: TextIO, options: "ReportOptions | None" = None) -> None:
    for finding in result.findings:
        line = disk_span(finding)[0]
        message = " ".join(finding.message.split())
        stream.write(f"{finding.path}:{line}: [{finding.code}] {cell_prefix(finding)}{message}\n")
