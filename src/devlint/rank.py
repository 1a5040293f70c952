"""Ranking: the order in which findings are worth the user's attention.

Severity first; then how much a crash would cost (one in the evaluation loop or at checkpoint
reload wastes the hours of training before it, so it outranks a crash at the first step); then
confidence (definite before likely); then position, so the order is total and stable.
"""

from __future__ import annotations

from typing import Iterable

from devlint.findings import Confidence, Finding

__all__ = ["sort_key", "rank_findings"]

_CONFIDENCE_ORDER = {Confidence.DEFINITE: 0, Confidence.LIKELY: 1}


def sort_key(finding: Finding) -> tuple:
    """The ranking order; every field takes part so equal keys mean equal findings."""
    return (
        finding.severity.order,
        -finding.phase.cost,
        _CONFIDENCE_ORDER.get(finding.confidence, len(_CONFIDENCE_ORDER)),
        finding.path,
        finding.cell or 0,
        finding.line,
        finding.column,
        finding.code,
        finding.end_line,
        finding.end_column,
        finding.message,
    )


def rank_findings(findings: Iterable[Finding]) -> list[Finding]:
    """Sorted findings with `rank` set to 1..n (1 = most urgent)."""
    ordered = sorted(findings, key=sort_key)
    return [finding.with_(rank=index) for index, finding in enumerate(ordered, start=1)]
