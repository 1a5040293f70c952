"""`--output-format gitlab`: a GitLab Code Quality report (`artifacts:reports:codequality`).

GitLab reads a JSON list of issues, each with `description`, `check_name`, `fingerprint`,
`severity` (info, minor, major, critical, blocker) and `location.path` /
`location.lines.begin`, and shows the new and fixed ones on the merge request. The fingerprint
is how GitLab tells an issue of the merge request from one already on the target branch, so it
is the one SARIF uses (file, code, enclosing function, normalised statement, never the line):
an issue moved by unrelated edits is not reported as new. Paths are relative to the project
(`CI_PROJECT_DIR` in a job, else the working directory); a notebook finding is placed at the
line of the `.ipynb` file that holds its cell line, and its message names the cell.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import TYPE_CHECKING, Any, TextIO

from devlint.findings import Severity
from devlint.report.places import cell_prefix, disk_span, working_path

if TYPE_CHECKING:  # pragma: no cover
    from devlint.report import ReportOptions
    from devlint.runner import RunResult

# a device error crashes the run: GitLab's "critical"; a warning may crash on some machines
SEVERITIES = {Severity.ERROR: "critical", Severity.WARNING: "major", Severity.INFO: "info"}


def to_document(result: "RunResult") -> list[dict[str, Any]]:
    from devlint.report.sarif import fingerprints

    root = os.environ.get("CI_PROJECT_DIR") or None
    issues = []
    for finding, fingerprint in zip(result.findings, fingerprints(result)):
        line, _, end_line, _ = disk_span(finding)
        issues.append({
            "description": f"{cell_prefix(finding)}{' '.join(finding.message.split())}",
            "check_name": finding.code,
            "fingerprint": hashlib.sha256(fingerprint.encode("utf-8")).hexdigest(),
            "severity": SEVERITIES[finding.severity],
            "categories": ["Bug Risk"],
            "location": {"path": working_path(finding.path, root), "lines": {"begin": line, "end": end_line}},
        })
    return issues


def render(result: "RunResult", stream: TextIO, options: "ReportOptions | None" = None) -> None:
    json.dump(to_document(result), stream, indent=2, ensure_ascii=False)
    stream.write("\n")
