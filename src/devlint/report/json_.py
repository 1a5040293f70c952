"""`--format json`: the schema of the CLI contract (cli.md), one object on stdout and nothing else."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, TextIO

from devlint import __version__
from devlint.docs import rule_url
from devlint.findings import Evidence, Finding

if TYPE_CHECKING:  # pragma: no cover
    from devlint.runner import RunResult


def finding_to_dict(finding: Finding) -> dict[str, Any]:
    """One finding as the schema shapes it (`cell` only for notebooks)."""
    data: dict[str, Any] = {
        "code": finding.code,
        "name": finding.name,
        "severity": finding.severity.value,
        "path": finding.path,
    }
    if finding.cell is not None:
        data["cell"] = finding.cell
    data.update(
        line=finding.line,
        column=finding.column,
        end_line=finding.end_line,
        end_column=finding.end_column,
        message=finding.message,
        rank=finding.rank,
        fixable=finding.fixable,
        confidence=finding.confidence.value,
        phase=finding.phase.value,
        evidence=[_step(step) for step in finding.evidence],
        fix=_fix(finding),
        url=rule_url(finding.code),
    )
    return data


def _fix(finding: Finding) -> dict[str, Any] | None:
    """Ruff's shape: `applicability` safe (applied by --fix) or unsafe (needs --unsafe-fixes),
    the message, and the edits as 1-based (line, column) ranges."""
    fix = finding.fix
    if fix is None or not fix.edits:
        return None
    return {
        "applicability": "safe" if fix.safe else "unsafe",
        "message": fix.description,
        "edits": [{"location": {"line": line, "column": col}, "end_location": {"line": end_line, "column": end_col},
                   "content": content} for line, col, end_line, end_col, content in fix.edits],
    }


def _step(step: Evidence) -> dict[str, Any]:
    data: dict[str, Any] = {"path": step.path}
    if step.cell is not None:
        data["cell"] = step.cell
    data.update(line=step.line, column=step.column, message=step.message)
    return data


def to_document(result: "RunResult") -> dict[str, Any]:
    return {
        "version": __version__,
        "files_checked": result.files_checked,
        "findings": [finding_to_dict(f) for f in sorted(result.findings, key=lambda f: f.rank)],
    }


def render(result: "RunResult", stream: TextIO) -> None:
    text = json.dumps(to_document(result), indent=2, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # a file name with bytes that are not UTF-8 (os.fsdecode's surrogate escapes): written
        # as \\udcXX escapes, which os.fsencode turns back into the exact bytes, not as "?"
        text = json.dumps(to_document(result), indent=2, ensure_ascii=True)
    stream.write(text)
    stream.write("\n")
