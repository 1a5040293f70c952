"""`--format github`: GitHub Actions workflow commands that annotate the pull request.

One line per finding, in ranked order:

    ::error file=train.py,line=24,col=22,endLine=24,endColumn=35,title=DEV101::`labels` is ...

Errors are `::error`, warnings `::warning`, info `::notice`. GitHub reads the message up to the
end of the line and the properties up to `,` and `::`, so both are escaped the way the runner
decodes them: `%` -> %25, CR -> %0D, LF -> %0A, and in properties also `:` -> %3A, `,` -> %2C.
Paths are relative to the working directory (the checkout in a workflow) with `/` separators.
A notebook finding names its cell in the message: the line numbers GitHub knows for a .ipynb
file are those of its JSON, not of a cell, so it gets no line properties. A finding's evidence
steps follow its message, one numbered line each ("2. models.py:12:9: `model` is moved ...").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from devlint.findings import Finding, Severity
from devlint.report import step_where
from devlint.report.places import working_path

if TYPE_CHECKING:  # pragma: no cover
    from devlint.runner import RunResult

COMMANDS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def escape_data(text: str) -> str:
    """The message part of a workflow command."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A property value (file=, title=) of a workflow command."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(finding: Finding) -> str:
    """The workflow command for one finding."""
    properties = [("file", working_path(finding.path))]
    message = finding.message
    if finding.cell is None:
        properties += [
            ("line", str(finding.line)),
            ("col", str(finding.column)),
            ("endLine", str(max(finding.end_line, finding.line))),
            ("endColumn", str(finding.end_column)),
        ]
    else:
        # GitHub shows the .ipynb file as it is on disk: point at the JSON line holding the
        # cell's source line, and say the cell and line people see in the notebook
        from devlint.notebook_lines import raw_position

        where = raw_position(finding.path, finding.cell, finding.line, finding.column)
        if where is not None:
            properties += [("line", str(where[0])), ("col", str(where[1]))]
        message = f"cell {finding.cell}, line {finding.line}: {message}"
    message += _evidence_lines(finding)
    properties.append(("title", finding.code))
    rendered = ",".join(f"{name}={escape_property(value)}" for name, value in properties)
    return f"::{COMMANDS[finding.severity]} {rendered}::{escape_data(message)}"


def _evidence_lines(finding: Finding) -> str:
    """The evidence steps as numbered lines after the message (the annotation shows them as
    lines: the newlines are escaped like the rest of the message); "" without evidence."""
    return "".join(f"\n{number}. {step_where(step, finding, working_path)}: {' '.join(step.message.split())}"
                   for number, step in enumerate(finding.evidence, start=1))


def render(result: "RunResult", stream: TextIO) -> None:
    for finding in result.findings:
        stream.write(annotation(finding) + "\n")
