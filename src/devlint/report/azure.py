"""`--output-format azure`: Azure Pipelines logging commands, which annotate the build.

One line per finding, as Ruff writes them:

    ##vso[task.logissue type=error;sourcepath=train.py;linenumber=24;columnnumber=22;code=DEV101;]message

Azure knows two types, `error` and `warning`: an info finding is a warning there. Property
values are escaped as the agent decodes them (`%` -> %AZP25, `;` -> %3B, `]` -> %5D, CR -> %0D,
LF -> %0A), the message the same way except for `;` and `]`, so a message cannot end the command
early or start another. A notebook finding is placed at the line of the `.ipynb` file that
holds its cell line, and its message names the cell.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from devlint.findings import Finding, Severity
from devlint.report.places import cell_prefix, disk_span, working_path

if TYPE_CHECKING:  # pragma: no cover
    from devlint.report import ReportOptions
    from devlint.runner import RunResult

TYPES = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "warning"}


def escape_data(text: str) -> str:
    return text.replace("%", "%AZP25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(";", "%3B").replace("]", "%5D")


def command(finding: Finding) -> str:
    """The logging command for one finding."""
    line, column, _, _ = disk_span(finding)
    properties = [("type", TYPES[finding.severity]), ("sourcepath", working_path(finding.path)),
                  ("linenumber", str(line)), ("columnnumber", str(column)), ("code", finding.code)]
    rendered = "".join(f"{name}={escape_property(value)};" for name, value in properties)
    message = f"{cell_prefix(finding)}{' '.join(finding.message.split())}"
    return f"##vso[task.logissue {rendered}]{escape_data(message)}"


def render(result: "RunResult", stream: TextIO, options: "ReportOptions | None" = None) -> None:
    for finding in result.findings:
        stream.write(command(finding) + "\n")
