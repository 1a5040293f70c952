"""One file in, findings out: parse, analyse, run the enabled rules.

This is the unit of work a worker process runs; it takes and returns plain data.
"""

from __future__ import annotations

from devlint.findings import Finding


def check_text(
    text: str,
    path: str,
    *,
    enabled: frozenset[str] | None = None,
    project: object | None = None,
) -> list[Finding]:
    """Analyse one Python source and return its findings (unsuppressed, unranked).

    `enabled` limits the rules that run (None: every rule). A source that cannot be parsed
    gives one DEV000 finding. Suppression comments, configuration and ranking are applied
    by the caller (devlint.runner).
    """
    raise NotImplementedError  # filled in by the analysis core
