"""Which fixes a project accepts, and as which safety: `fixable` / `unfixable` and
`extend-safe-fixes` / `extend-unsafe-fixes`, as Ruff's settings of the same names.

A rule's fix is safe or unsafe by the rule's own judgement (rules/base.py, FixSafety). A project
may know better: a team that always reviews `--fix` output may take DEV101's inserted move as
safe, another may refuse every automatic edit of DEV201 in its checkpoints code. The policy is
applied to each file's findings where they are made (runner.check_unit), so `--fix`, `--diff`,
the `[*]` marker, every report's fix and the editor's code actions all see the same fixes.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Iterable

from devlint.findings import Finding
from devlint.selection import expand

if TYPE_CHECKING:  # pragma: no cover
    from devlint.config import Config

__all__ = ["apply_fix_policy"]


def _policy(config: "Config") -> tuple[frozenset[str] | None, frozenset[str], frozenset[str], frozenset[str]]:
    fixable = expand(config.fixable) if config.fixable is not None else None
    return fixable, expand(config.unfixable), expand(config.extend_safe_fixes), expand(config.extend_unsafe_fixes)


def apply_fix_policy(findings: Iterable[Finding], config: "Config") -> list[Finding]:
    """`findings` with the fixes the policy refuses removed (a finding of an unfixable code is
    still reported, without a fix) and the safety the policy names; `extend-unsafe-fixes` wins
    over `extend-safe-fixes` for a code in both (the cautious reading)."""
    findings = list(findings)
    if config.fixable is None and not (config.unfixable or config.extend_safe_fixes or config.extend_unsafe_fixes):
        return findings
    fixable, unfixable, safe, unsafe = _policy(config)
    out = []
    for finding in findings:
        fix = finding.fix
        if fix is not None:
            if (fixable is not None and finding.code not in fixable) or finding.code in unfixable:
                finding = finding.with_(fix=None)
            elif finding.code in unsafe and fix.safe:
                finding = finding.with_(fix=replace(fix, safe=False))
            elif finding.code in safe and finding.code not in unsafe and not fix.safe:
                finding = finding.with_(fix=replace(fix, safe=True))
        out.append(finding)
    return out
