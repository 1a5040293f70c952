"""`devlint server` whose findings carry synthetic evidence steps, for the server tests.

The device rules fill `Finding.evidence` from the analysis (test_server.py checks that with the
real server); the other rules do not. So that the conversion is tested with steps at known
places for every rule, this wrapper replaces each finding's steps as the engine makes it with two
(the first line of the file, and the second line of `models.py` beside it when there is one,
else of the same file), then runs the real command. Everything else is the real server.

    python tests/evidence_server.py      # instead of `python -m devlint server`
"""

from __future__ import annotations

import os
import sys

import devlint.engine as engine
from devlint.findings import Evidence

_make = engine.finding_of


def finding_of(program, rule, report):  # type: ignore[no-untyped-def]
    finding = _make(program, rule, report)
    models = os.path.join(os.path.dirname(os.path.abspath(finding.path)), "models.py")
    other = models if os.path.isfile(models) and os.path.abspath(finding.path) != models else finding.path
    return finding.with_(evidence=(
        Evidence(finding.path, 1, 1, f"{finding.code}: the story starts here"),
        Evidence(other, 2, 5, "and goes on here"),
    ))


engine.finding_of = finding_of

if __name__ == "__main__":
    from devlint.cli import main

    sys.argv = ["devlint", "server"]
    main()
