"""devlint's findings and changes in the Language Server Protocol's terms (lsprotocol types).

devlint counts lines from 1 and columns in code points from 1 (end column exclusive); LSP
counts both from 0, and columns in the units of the position encoding the client and server
agreed on (UTF-16 unless both prefer another), so every column is converted with the line it
is on. Positions of evidence steps in files that are not open are converted as code points
(exact for ASCII lines).
"""

from __future__ import annotations

import re
from typing import Callable, Sequence

from lsprotocol import types

from devlint.docs import GENERATED_NOTE, rule_markdown, rule_text, rule_url
from devlint.findings import Finding, Severity

Units = Callable[[str], int]  # how many client units a string is
StepTarget = Callable[[str, "int | None"], "tuple[str, Sequence[str] | None] | None"]

SOURCE = "devlint"
_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # the line breaks of LSP (and of Python)
SEVERITIES = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFO: types.DiagnosticSeverity.Information,
}


def position(lines: Sequence[str] | None, line: int, column: int, units: Units) -> types.Position:
    """LSP position of devlint's (line, column), both 1-based."""
    index = max(line - 1, 0)
    if lines is None:
        return types.Position(line=index, character=max(column - 1, 0))
    if index >= len(lines):
        return types.Position(line=len(lines), character=0)
    return types.Position(line=index, character=units(lines[index][: max(column - 1, 0)]))


def span(lines: Sequence[str] | None, line: int, column: int, end_line: int, end_column: int,
         units: Units) -> types.Range:
    start = position(lines, line, column, units)
    end = position(lines, max(end_line, line), end_column, units)
    if (end.line, end.character) < (start.line, start.character):
        end = start
    return types.Range(start=start, end=end)


def finding_data(finding: Finding) -> dict:
    """What a diagnostic carries back to the server in a code action request."""
    return {
        "code": finding.code,
        "line": finding.line,
        "column": finding.column,
        "cell": finding.cell,
        "fix": None if finding.fix is None else ("safe" if finding.fix.safe else "unsafe"),
    }


def diagnostic(finding: Finding, lines: Sequence[str], units: Units, step_target: StepTarget) -> types.Diagnostic:
    """The diagnostic of one finding; `step_target(path, cell)` gives the URI and lines of an
    evidence step's file or cell (None when it cannot be named)."""
    related = []
    for step in finding.evidence:
        target = step_target(step.path, step.cell)
        if target is None:
            continue
        uri, step_lines = target
        where = position(step_lines, step.line, step.column, units)
        related.append(types.DiagnosticRelatedInformation(
            location=types.Location(uri=uri, range=types.Range(start=where, end=where)),
            message=" ".join(step.message.split()),
        ))
    return types.Diagnostic(
        range=span(lines, finding.line, finding.column, finding.end_line, finding.end_column, units),
        message=finding.message,
        severity=SEVERITIES.get(finding.severity, types.DiagnosticSeverity.Warning),
        code=finding.code,
        code_description=types.CodeDescription(href=rule_url(finding.code)),
        source=SOURCE,
        related_information=related or None,
        data=finding_data(finding),
    )


def text_edit(old: str, new: str, units: Units) -> types.TextEdit:
    """One edit that turns `old` into `new`: the changed middle between the common prefix and
    suffix, so the editor keeps the cursor, folds and marks of everything else."""
    start = 0
    limit = min(len(old), len(new))
    while start < limit and old[start] == new[start]:
        start += 1
    end_old, end_new = len(old), len(new)
    while end_old > start and end_new > start and old[end_old - 1] == new[end_new - 1]:
        end_old -= 1
        end_new -= 1
    return types.TextEdit(range=types.Range(start=_offset_position(old, start, units),
                                            end=_offset_position(old, end_old, units)),
                          new_text=new[start:end_new])


def _offset_position(text: str, offset: int, units: Units) -> types.Position:
    line, line_start = 0, 0
    for match in _LINE_BREAK.finditer(text):
        if match.end() > offset:  # past the offset, or a CRLF the offset splits
            break
        line, line_start = line + 1, match.end()
    return types.Position(line=line, character=units(text[line_start:offset]))


def hover_text(findings: Sequence[Finding], markdown: bool) -> str:
    """The explanation of each rule reported at a position, as `devlint explain` prints it."""
    from devlint.rules import rule_by_code

    parts = []
    for code in dict.fromkeys(f.code for f in findings):
        rule = rule_by_code(code)
        if rule is None:
            continue
        if markdown:
            parts.append("\n".join(line for line in rule_markdown(rule).splitlines() if line != GENERATED_NOTE)
                         + f"\n\n[{code} documentation]({rule_url(code)})")
        else:
            parts.append(rule_text(rule))
    return ("\n\n---\n\n" if markdown else "\n\n").join(parts)
