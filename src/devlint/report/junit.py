"""`--output-format junit`: a JUnit XML test report, for CI services that show test results.

Jenkins, GitLab (`artifacts:reports:junit`), Azure Pipelines and most test dashboards read
the same shape, the one Ruff writes: `<testsuites>` holding one `<testsuite>` per file with
findings, one `<testcase>` per finding (name `devlint.CODE`, classname the file's path without
its suffix, `file`, `line` and `column` attributes) with a `<failure>` whose `message` is the
finding's message and whose text says where it is. A run without findings writes one passing
test case, so that a dashboard shows the check ran. The document is built with ElementTree,
which escapes what XML needs escaped (quotes in messages, `<` in `<module>`).
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:  # pragma: no cover
    from devlint.findings import Finding
    from devlint.report import ReportOptions
    from devlint.runner import RunResult

SUITE_NAME = "devlint"


def _failure_text(finding: "Finding") -> str:
    where = f"cell {finding.cell}, line {finding.line}" if finding.cell is not None else f"line {finding.line}"
    return f"{where}, col {finding.column}, {' '.join(finding.message.split())}"


def to_element(result: "RunResult") -> ET.Element:
    """The `<testsuites>` element of `result`."""
    findings = result.findings
    root = ET.Element("testsuites", name=SUITE_NAME, tests=str(max(len(findings), 1)),
                      failures=str(len(findings)), errors="0")
    if not findings:
        suite = ET.SubElement(root, "testsuite", name=SUITE_NAME, tests="1", disabled="0", errors="0",
                              failures="0", package=SUITE_NAME)
        ET.SubElement(suite, "testcase", name="No errors found", classname=SUITE_NAME)
        return root
    by_path: dict[str, list["Finding"]] = {}
    for finding in findings:
        by_path.setdefault(finding.path, []).append(finding)
    for path in sorted(by_path):
        group = sorted(by_path[path], key=lambda f: (f.cell or 0, f.line, f.column, f.code))
        suite = ET.SubElement(root, "testsuite", name=path, tests=str(len(group)), disabled="0", errors="0",
                              failures=str(len(group)), package=SUITE_NAME)
        classname = os.path.splitext(path)[0]
        for finding in group:
            case = ET.SubElement(suite, "testcase", name=f"{SUITE_NAME}.{finding.code}", classname=classname,
                                 file=path, line=str(finding.line), column=str(finding.column))
            failure = ET.SubElement(case, "failure", message=" ".join(finding.message.split()),
                                    type=finding.severity.value)
            failure.text = _failure_text(finding)
    return root


def render(result: "RunResult", stream: TextIO, options: "ReportOptions | None" = None) -> None:
    element = to_element(result)
    ET.indent(element, space="  ")
    stream.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    stream.write(ET.tostring(element, encoding="unicode"))
    stream.write("\n")
