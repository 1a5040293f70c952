"""`--output-format rdjson`: reviewdog's diagnostic format (`reviewdog -f=rdjson`).

One JSON object: `source` (devlint and its documentation), then `diagnostics`, each with its
`message`, `location` (`path`, and a `range` whose `end` is exclusive), `severity` (ERROR,
WARNING, INFO), `code` (`value` and the rule's page as `url`) and, for a finding `--fix` would
repair with the flags given, `suggestions` (the fix's edits), which reviewdog posts as suggested
changes on the pull request. reviewdog counts columns in UTF-8 bytes, so a column after
non-ASCII text on its line is converted from the character column devlint keeps. A notebook
finding is placed at the line of the `.ipynb` file that holds its cell line, without
suggestions (its edits are in cell coordinates), and its message names the cell.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Callable, TextIO

from devlint.docs import rule_docs_base, rule_url
from devlint.findings import Finding, Severity
from devlint.report.places import cell_prefix, disk_span

if TYPE_CHECKING:  # pragma: no cover
    from devlint.report import ReportOptions
    from devlint.runner import RunResult

SEVERITIES = {Severity.ERROR: "ERROR", Severity.WARNING: "WARNING", Severity.INFO: "INFO"}
ByteColumn = Callable[[int, int], int]


def _byte_columns(text: str | None) -> ByteColumn:
    """(line, character column) -> UTF-8 byte column, both 1-based, for one file's text."""
    lines = text.splitlines() if text else []

    def convert(line: int, column: int) -> int:
        if not 1 <= line <= len(lines):
            return column
        return len(lines[line - 1][: column - 1].encode("utf-8")) + 1

    return convert


def _position(line: int, column: int, byte_column: ByteColumn) -> dict[str, int]:
    return {"line": line, "column": byte_column(line, column)}


def _suggestions(finding: Finding, byte_column: ByteColumn, unsafe_fixes: bool) -> list[dict[str, Any]]:
    from devlint.report import applicable

    if finding.cell is not None or not applicable(finding, unsafe_fixes):
        return []
    assert finding.fix is not None
    return [{"range": {"start": _position(line, col, byte_column), "end": _position(end_line, end_col, byte_column)},
             "text": text} for line, col, end_line, end_col, text in finding.fix.edits]


def diagnostic(finding: Finding, text: str | None, unsafe_fixes: bool = False) -> dict[str, Any]:
    """One finding as a reviewdog `Diagnostic`; `text` is its file's source, for byte columns."""
    byte_column = _byte_columns(text if finding.cell is None else None)
    line, column, end_line, end_column = disk_span(finding)
    data: dict[str, Any] = {
        "message": f"{cell_prefix(finding)}{' '.join(finding.message.split())}",
        "location": {"path": finding.path, "range": {"start": _position(line, column, byte_column),
                                                     "end": _position(end_line, end_column, byte_column)}},
        "severity": SEVERITIES[finding.severity],
        "code": {"value": finding.code, "url": rule_url(finding.code)},
    }
    suggestions = _suggestions(finding, byte_column, unsafe_fixes)
    if suggestions:
        data["suggestions"] = suggestions
    return data


def to_document(result: "RunResult", unsafe_fixes: bool = False) -> dict[str, Any]:
    def text_of(path: str) -> str | None:
        unit = result.sources.get(path)
        return unit.text if unit is not None and not unit.is_notebook else None

    return {
        "source": {"name": "devlint", "url": rule_docs_base().split("{code}")[0]},
        "diagnostics": [diagnostic(f, text_of(f.path), unsafe_fixes) for f in result.findings],
    }


def render(result: "RunResult", stream: TextIO, options: "ReportOptions | None" = None) -> None:
    json.dump(to_document(result, options.unsafe_fixes if options else False), stream, indent=2,
              ensure_ascii=False)
    stream.write("\n")
