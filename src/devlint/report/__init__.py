"""Reporters: turn a ranked RunResult into text on a stream.

Each format lives in its own module and is imported only when chosen, so `--format json` in a
CI job never pays for importing rich.
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Callable, TextIO

if TYPE_CHECKING:  # pragma: no cover
    from devlint.findings import Evidence, Finding
    from devlint.runner import RunResult

__all__ = ["FORMATS", "render", "summary_line", "location", "step_where"]

# format name -> module under devlint.report
FORMATS: dict[str, str] = {
    "text": "text",
    "concise": "concise",
    "json": "json_",
    "sarif": "sarif",
    "github": "github",
}

Renderer = Callable[["RunResult", TextIO], None]


def render(format_name: str, result: "RunResult", stream: TextIO) -> None:
    """Write `result` to `stream` in `format_name` (one of FORMATS)."""
    module = importlib.import_module(f"devlint.report.{FORMATS[format_name]}")
    module.render(result, stream)


def location(path: str, line: int, column: int, cell: int | None) -> str:
    """`path:line:col`, or `path:cell N:line:col` for a notebook finding."""
    if cell is not None:
        return f"{path}:cell {cell}:{line}:{column}"
    return f"{path}:{line}:{column}"


def step_where(step: "Evidence", finding: "Finding", path: Callable[[str], str] = str) -> str:
    """Where an evidence step is, said from its finding: "line 7" in the same file (or cell),
    "cell 2, line 7" in another cell of the same notebook, and in another file `path:line:col`
    with that file named (`path` turns the step's path into the form the report uses)."""
    if step.path != finding.path and os.path.abspath(step.path) != os.path.abspath(finding.path):
        return location(path(step.path), step.line, step.column, step.cell)
    if step.cell is not None and step.cell != finding.cell:
        return f"cell {step.cell}, line {step.line}"
    return f"line {step.line}"


def _plural(count: int, word: str) -> str:
    if word == "info":
        return f"{count} info"
    return f"{count} {word}" + ("" if count == 1 else "s")


def severity_counts(result: "RunResult") -> list[str]:
    """["3 errors", "1 warning"]: the non-zero counts, most severe first."""
    counts = {"error": 0, "warning": 0, "info": 0}
    for finding in result.findings:
        counts[finding.severity.value] += 1
    return [_plural(n, name) for name, n in counts.items() if n]


def summary_line(result: "RunResult") -> str:
    """The one line on stderr after a run."""
    if not result.findings:
        if result.files_checked == 0:
            return "No Python files or notebooks found to check."
        return f"All checks passed ({_plural(result.files_checked, 'file')})."
    return f"Found {', '.join(severity_counts(result))} in {_plural(result.files_with_findings, 'file')}."
