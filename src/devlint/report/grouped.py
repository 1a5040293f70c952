"""`--output-format grouped`: the findings under the name of their file, as Ruff's `grouped`.

    train.py:
      13:9  DEV107 [error] [*] `inputs.to(...)` returns a moved copy ...
      26:25 DEV101 [error] `labels` is still on the CPU here ...

Files in path order, findings in the order of their lines, positions padded so that the codes
line up, and a blank line after each file. A notebook finding's position starts with its cell
(`cell 2:3:1`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from devlint.report import fixable_marker

if TYPE_CHECKING:  # pragma: no cover
    from devlint.findings import Finding
    from devlint.report import ReportOptions
    from devlint.runner import RunResult


def _position(finding: "Finding") -> str:
    where = f"{finding.line}:{finding.column}"
    return f"cell {finding.cell}:{where}" if finding.cell is not None else where


def render(result: "RunResult", stream: TextIO, options: "ReportOptions | None" = None) -> None:
    by_path: dict[str, list["Finding"]] = {}
    for finding in result.findings:
        by_path.setdefault(finding.path, []).append(finding)
    for path in sorted(by_path):
        group = sorted(by_path[path], key=lambda f: (f.cell or 0, f.line, f.column, f.code))
        width = max(len(_position(f)) for f in group)
        stream.write(f"{path}:\n")
        for finding in group:
            message = " ".join(finding.message.split())
            stream.write(f"  {_position(finding):<{width}} {finding.code} [{finding.severity.value}] "
                         f"{fixable_marker(finding, options)}{message}\n")
        stream.write("\n")
