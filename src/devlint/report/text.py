"""`--format text` (default): ranked findings with the source around each, for people.

rich is imported here and only here, when this format is chosen. Colour is used only when
standard output is a terminal and NO_COLOR is not set; lines are never wrapped, so piped output
stays greppable.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, TextIO

from devlint.findings import Finding
from devlint.report import location, severity_counts

if TYPE_CHECKING:  # pragma: no cover
    from devlint.runner import RunResult
    from devlint.source import SourceUnit

_SEVERITY_STYLE = {"error": "bold red", "warning": "bold yellow", "info": "bold blue"}
_CONTEXT = 1  # lines shown before and after the reported lines
_MAX_SPAN = 4  # longest reported span quoted in full


def render(result: "RunResult", stream: TextIO) -> None:
    if not result.findings:
        return  # the summary on stderr says so; nothing to show
    from rich.console import Console
    from rich.text import Text

    console = Console(
        file=stream,
        # NO_COLOR: no escape sequences at all (rich alone would still emit bold and dim)
        color_system=None if os.environ.get("NO_COLOR") else "auto",
        highlight=False,
        markup=False,
        emoji=False,
        soft_wrap=True,
    )
    header = Text("devlint: ", style="bold")
    header.append(", ".join(severity_counts(result)), style="bold")
    files = result.files_with_findings
    header.append(f" in {files} file{'s' if files != 1 else ''}, most urgent first")
    console.print(header)
    for finding in result.findings:
        console.print()
        console.print(_headline(finding, Text))
        unit = result.sources.get(finding.path)
        for line in _excerpt(finding, unit, Text):
            console.print(line)
        if finding.fix is not None:
            safety = "safe" if finding.fix.safe else "unsafe: changes behaviour"
            fix_line = Text("    fix", style="bold green")
            fix_line.append(f" ({safety}): {finding.fix.description}")
            console.print(fix_line)


def _headline(finding: Finding, Text) -> "object":
    where = location(finding.path, finding.line, finding.column, finding.cell)
    line = Text(where, style="bold")
    line.append(" ")
    line.append(finding.code, style=_SEVERITY_STYLE.get(finding.severity.value, "bold"))
    line.append(f" [{finding.severity.value}] ", style=_SEVERITY_STYLE.get(finding.severity.value, ""))
    line.append(finding.message)
    return line


def _excerpt(finding: Finding, unit: "SourceUnit | None", Text) -> list:
    """Numbered source lines around the finding, with a caret line under a one-line span."""
    if unit is None or not unit.ok:
        return []
    lines = unit.lines(finding.cell)
    if not lines or not 1 <= finding.line <= len(lines):
        return []
    last = max(finding.line, min(finding.end_line, finding.line + _MAX_SPAN - 1, len(lines)))
    first_shown = max(1, finding.line - _CONTEXT)
    last_shown = min(len(lines), last + _CONTEXT)
    width = len(str(last_shown))
    out = []
    for number in range(first_shown, last_shown + 1):
        reported = finding.line <= number <= last
        gutter = Text(f"  {'>' if reported else ' '} {number:>{width}} | ", style="cyan" if reported else "dim")
        gutter.append(lines[number - 1].expandtabs(), style="" if reported else "dim")
        out.append(gutter)
        if number == finding.line and finding.end_line == finding.line:
            source = lines[number - 1]
            start = len(source[: max(finding.column - 1, 0)].expandtabs())
            end = len(source[: max(finding.end_column - 1, finding.column)].expandtabs())
            carets = Text(f"    {' ' * width} | " + " " * start, style="dim")
            carets.append("^" * max(1, end - start), style=_SEVERITY_STYLE.get(finding.severity.value, "bold"))
            out.append(carets)
    return out
