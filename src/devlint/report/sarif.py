"""`--format sarif`: SARIF 2.1.0 for code-scanning uploads (GitHub, GitLab, Azure DevOps).

One run with devlint as the tool: `tool.driver.rules` describes every rule (the same text as
`devlint explain` and docs/rules/), and each finding becomes a result that points at its rule
by id and index. Paths are URIs relative to the working directory (`%SRCROOT%`), which is the
repository root in a CI job, so code scanning can place them. `partialFingerprints` are keyed
like baselines (file, code, enclosing function, normalised statement; never the line), so a
result keeps its identity when unrelated edits move it. Results come in ranked order, the same
findings in the same order as every other format. A finding's evidence steps become
`relatedLocations` and a `codeFlows` thread flow, which code scanning shows as the alert's path.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO
from urllib.parse import quote

from devlint import __version__
from devlint.findings import Finding, Severity
from devlint.report.places import disk_position

if TYPE_CHECKING:  # pragma: no cover
    from devlint.rules.base import Rule
    from devlint.runner import RunResult

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
SRCROOT = "%SRCROOT%"
FINGERPRINT = "devlint/v1"
LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
_PROBLEM_SEVERITY = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "recommendation"}


def _tags(code: str) -> list[str]:
    family = {"1": "correctness", "2": "portability", "3": "performance"}.get(code[3:4], "correctness")
    return ["pytorch", "device-placement", family]


def rule_descriptor(rule: "Rule") -> dict[str, Any]:
    """`reportingDescriptor` of one rule: what code scanning shows next to its results."""
    from devlint.docs import rule_markdown, rule_text

    level = LEVELS[rule.severity]
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": " ".join(rule.why.split()) or rule.summary},
        "help": {"text": rule_text(rule), "markdown": rule_markdown(rule)},
        "defaultConfiguration": {"level": level, "enabled": rule.default_enabled},
        "properties": {
            "tags": _tags(rule.code),
            "precision": "high",
            "problem.severity": _PROBLEM_SEVERITY[rule.severity],
        },
    }


def _artifact(path: str) -> dict[str, str]:
    """A relative URI under %SRCROOT% (the working directory); an absolute one outside it."""
    absolute = os.path.abspath(path)
    try:
        relative: str | None = os.path.relpath(absolute, os.getcwd())
    except ValueError:  # another drive on Windows
        relative = None
    if relative is None or relative == ".." or relative.startswith(".." + os.sep):
        return {"uri": Path(absolute).as_uri()}
    return {"uri": quote(relative.replace(os.sep, "/")), "uriBaseId": SRCROOT}


def _region(line: int, column: int, end_line: int, end_column: int) -> dict[str, int]:
    line = max(line, 1)
    column = max(column, 1)
    end_line = max(end_line, line)
    end_column = max(end_column, 1)
    if end_line == line and end_column < column:
        end_column = column
    return {"startLine": line, "startColumn": column, "endLine": end_line, "endColumn": end_column}


def _fixes(finding: Finding, artifact: dict[str, str]) -> list[dict[str, Any]]:
    fix = finding.fix
    # notebook fixes are in joined-text coordinates, which a .ipynb file does not have
    if fix is None or not fix.edits or finding.cell is not None:
        return []
    replacements = [
        {"deletedRegion": _region(line, col, end_line, end_col), "insertedContent": {"text": text}}
        for line, col, end_line, end_col, text in fix.edits
    ]
    return [
        {
            "description": {"text": fix.description},
            "artifactChanges": [{"artifactLocation": dict(artifact), "replacements": replacements}],
            "properties": {"safe": fix.safe},
        }
    ]


def _step_location(path: str, line: int, column: int, message: str, cell: int | None) -> dict[str, Any]:
    line, column, _, _ = disk_position(path, cell, line, column, line, column)
    location: dict[str, Any] = {
        "physicalLocation": {
            "artifactLocation": _artifact(path),
            "region": {"startLine": max(line, 1), "startColumn": max(column, 1)},
        },
        "message": {"text": message},
    }
    if cell is not None:  # the region is in the .ipynb file; the cell is said too, as for results
        location["properties"] = {"cell": cell}
    return location


def evidence_members(finding: Finding) -> dict[str, Any]:
    """`relatedLocations` and a one-thread `codeFlows` from the finding's evidence steps (none
    without evidence). The thread flow is the path GitHub code scanning draws for the alert: the
    steps in order, then the result's own location when the last step is not already there."""
    if not finding.evidence:
        return {}
    related = []
    flow = []
    for number, step in enumerate(finding.evidence):
        message = " ".join(step.message.split())
        related.append({"id": number, **_step_location(step.path, step.line, step.column, message, step.cell)})
        flow.append({"location": _step_location(step.path, step.line, step.column, message, step.cell),
                     "executionOrder": number + 1})
    last = finding.evidence[-1]
    if (os.path.abspath(last.path), last.cell, last.line, last.column) != \
            (os.path.abspath(finding.path), finding.cell, finding.line, finding.column):
        flow.append({"location": _step_location(finding.path, finding.line, finding.column,
                                                f"{finding.code} is reported here", finding.cell),
                     "executionOrder": len(flow) + 1, "importance": "essential"})
    return {
        "relatedLocations": related,
        "codeFlows": [{"threadFlows": [{"locations": flow}]}],
    }


def fingerprints(result: "RunResult") -> list[str]:
    """A fingerprint per finding, in order: the baseline key hashed, plus which copy it is."""
    from devlint.baseline import finding_key

    root = os.getcwd()
    seen: Counter = Counter()
    out = []
    for finding in result.findings:
        key = finding_key(finding, result.sources.get(finding.path), root)
        digest = hashlib.sha256("\0".join(key).encode("utf-8")).hexdigest()[:32]
        seen[digest] += 1
        out.append(f"{digest}:{seen[digest]}")
    return out


def to_document(result: "RunResult") -> dict[str, Any]:
    from devlint.rules import all_rules

    rules = list(all_rules())
    index = {rule.code: i for i, rule in enumerate(rules)}
    descriptors = [rule_descriptor(rule) for rule in rules]
    results = []
    for finding, fingerprint in zip(result.findings, fingerprints(result)):
        if finding.code not in index:  # a code outside the registry still gets a descriptor
            index[finding.code] = len(descriptors)
            descriptors.append({"id": finding.code, "name": finding.name,
                                "defaultConfiguration": {"level": LEVELS[finding.severity]}})
        artifact = _artifact(finding.path)
        properties: dict[str, Any] = {
            "rank": finding.rank,
            "phase": finding.phase.value,
            "confidence": finding.confidence.value,
        }
        if finding.cell is not None:
            properties["cell"] = finding.cell
        entry: dict[str, Any] = {
            "ruleId": finding.code,
            "ruleIndex": index[finding.code],
            "level": LEVELS[finding.severity],
            "message": {"text": finding.message},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": artifact,
                        "region": _region(*disk_position(finding.path, finding.cell, finding.line, finding.column,
                                                    finding.end_line, finding.end_column)),
                    }
                }
            ],
            "partialFingerprints": {FINGERPRINT: fingerprint},
            "properties": properties,
        }
        fixes = _fixes(finding, artifact)
        if fixes:
            entry["fixes"] = fixes
        entry.update(evidence_members(finding))
        results.append(entry)
    return {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "devlint",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "rules": descriptors,
                    }
                },
                "originalUriBaseIds": {SRCROOT: {"uri": Path(os.getcwd()).as_uri().rstrip("/") + "/"}},
                "invocations": [{"executionSuccessful": True}],
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }


def render(result: "RunResult", stream: TextIO) -> None:
    json.dump(to_document(result), stream, indent=2, ensure_ascii=False)
    stream.write("\n")
