"""`--output-format json-lines`: one finding per line, each the object `--format json` lists.

For tools that read a stream (`jq -c`, log shippers, `rdjsonl`-style converters): a line is a
complete JSON object, so a consumer can act on the first finding before the last is written,
and an empty run writes nothing at all. The objects are those of the JSON report (cli.md), in
ranked order.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, TextIO

from devlint.report.json_ import finding_to_dict

if TYPE_CHECKING:  # pragma: no cover
    from devlint.report import ReportOptions
    from devlint.runner import RunResult


def render(result: "RunResult", stream: TextIO, options: "ReportOptions | None" = None) -> None:
    for finding in sorted(result.findings, key=lambda f: f.rank):
        stream.write(json.dumps(finding_to_dict(finding), ensure_ascii=False) + "\n")
