"""Reporters: turn a ranked RunResult into text on a stream.

Each format lives in its own module and is imported only when chosen, so `--format json` in a
CI job never pays for importing rich.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, TextIO

if TYPE_CHECKING:  # pragma: no cover
    from devlint.findings import Evidence, Finding
    from devlint.runner import RunResult

__all__ = ["FORMATS", "STATISTICS_FORMATS", "ReportOptions", "render", "render_statistics", "summary_line", "location",
           "shown_path", "step_where", "fixable_marker"]

# format name -> module under devlint.report
FORMATS: dict[str, str] = {
    "text": "text",
    "concise": "concise",
    "json": "json_",
    "sarif": "sarif",
    "github": "github",
    "json-lines": "json_lines",
    "junit": "junit",
    "gitlab": "gitlab",
    "pylint": "pylint",
    "rdjson": "rdjson",
    "azure": "azure",
    "grouped": "grouped",
}
# the formats whose renderer takes no ReportOptions (nothing in them depends on the flags)
_PLAIN = frozenset({"json", "sarif", "github"})
# `--statistics` writes a table, or a JSON list with json; a format made for another tool has no
# place for it, so asking for both is a usage error rather than a report that ignores one
STATISTICS_FORMATS = ("text", "concise", "grouped", "json")

Renderer = Callable[["RunResult", TextIO], None]


@dataclass(frozen=True)
class ReportOptions:
    """How a report is shown: `color` auto|always|never (auto: a terminal without NO_COLOR),
    and whether unsafe fixes count as applicable (`--unsafe-fixes`, for the `[*]` marker)."""

    color: str = "auto"
    unsafe_fixes: bool = False
    to_terminal: bool = True
    quiet: bool = False  # -q: the findings only (the text report drops its header line)


def render(format_name: str, result: "RunResult", stream: TextIO, options: ReportOptions | None = None) -> None:
    """Write `result` to `stream` in `format_name` (one of FORMATS)."""
    module = importlib.import_module(f"devlint.report.{FORMATS[format_name]}")
    if options is not None and format_name not in _PLAIN:
        module.render(result, stream, options)
    else:
        module.render(result, stream)


def applicable(finding: "Finding", unsafe_fixes: bool) -> bool:
    """Would `--fix` (with `--unsafe-fixes` when given) apply this finding's fix?"""
    fix = finding.fix
    return fix is not None and bool(fix.edits) and (fix.safe or unsafe_fixes)


def fixable_marker(finding: "Finding", options: ReportOptions | None) -> str:
    """`[*] ` before the message of a finding `--fix` repairs, as Ruff marks them."""
    return "[*] " if applicable(finding, options.unsafe_fixes if options else False) else ""


def statistics(result: "RunResult", unsafe_fixes: bool = False) -> list[dict]:
    """Count per code, most frequent first: code, name, count, fixable (with --fix)."""
    rows: dict[str, dict] = {}
    for finding in result.findings:
        row = rows.setdefault(finding.code, {"code": finding.code, "name": finding.name, "count": 0, "fixable": 0})
        row["count"] += 1
        row["fixable"] += applicable(finding, unsafe_fixes)
    return sorted(rows.values(), key=lambda r: (-r["count"], r["code"]))


def render_statistics(format_name: str, result: "RunResult", stream: TextIO,
                      options: ReportOptions | None = None) -> None:
    """`--statistics`: one line per code (`count  CODE  [*] name`), or a JSON list with --format json."""
    rows = statistics(result, options.unsafe_fixes if options else False)
    if format_name == "json":
        import json

        json.dump([{**row, "fixable": row["fixable"] > 0, "fixable_count": row["fixable"]} for row in rows],
                  stream, indent=2)
        stream.write("\n")
        return
    width = max((len(str(row["count"])) for row in rows), default=1)
    for row in rows:
        marker = "[*]" if row["fixable"] else "   "
        stream.write(f"{row['count']:>{width}}\t{row['code']}\t{marker} {row['name']}\n")


def shown_path(path: str) -> str:
    """A file name as text reports print it: one line, nothing the terminal interprets. A
    newline or an escape code in a name is written as Python escapes it (`\\n`, `\\x1b`), and a
    byte that is not UTF-8 (kept by the file system's surrogate escapes) as `\\xe9`. JSON and
    SARIF keep the name exact instead (json_.py)."""
    if path.isprintable():
        return path
    out = []
    for char in path:
        code = ord(char)
        if 0xDC80 <= code <= 0xDCFF:  # os.fsdecode's stand-in for an undecodable byte
            out.append(f"\\x{code - 0xDC00:02x}")
        elif char.isprintable():
            out.append(char)
        else:
            out.append(repr(char)[1:-1])
    return "".join(out)


def location(path: str, line: int, column: int, cell: int | None) -> str:
    """`path:line:col`, or `path:cell N:line:col` for a notebook finding (the path as
    `shown_path` prints it)."""
    path = shown_path(path)
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


def summary_line(result: "RunResult", unsafe_fixes: bool = False) -> str:
    """The line on stderr after a run; then how many findings `--fix` repairs, and how many
    more `--unsafe-fixes` would."""
    if not result.findings:
        if result.files_checked == 0:
            return "No Python files or notebooks found to check."
        return f"All checks passed ({_plural(result.files_checked, 'file')})."
    line = f"Found {', '.join(severity_counts(result))} in {_plural(result.files_with_findings, 'file')}."
    fixable = sum(applicable(f, unsafe_fixes) for f in result.findings)
    more = 0 if unsafe_fixes else sum(applicable(f, True) for f in result.findings) - fixable
    if fixable:
        line += f"\n[*] {fixable} fixable with `--fix`."
    if more:
        line += f"\n{more} more fixable with `--fix --unsafe-fixes`." if fixable else \
            f"\n{more} fixable with `--fix --unsafe-fixes`."
    return line
