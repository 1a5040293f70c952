"""One `devlint check` run: discovered files in, ranked findings out.

discover -> read -> engine.check_text -> per-file-ignores -> suppression comments -> notebook
cell mapping -> ranking. `check_unit` is the per-file unit of work and takes and returns plain,
picklable data, so worker processes and a result cache can wrap it later without changing it.
A file that cannot be read or decoded becomes a DEV000 finding for that file; the other files
are checked as usual. Anything else that goes wrong is a bug in devlint and propagates (the CLI
turns it into exit 3).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

from devlint import engine
from devlint import rules as _rules
from devlint.config import Config
from devlint.discover import DiscoveredFile
from devlint.findings import Finding, Severity
from devlint.rank import rank_findings
from devlint.selection import PARSE_ERROR_CODE
from devlint.source import SourceUnit, read_source
from devlint.suppress import apply_suppressions

__all__ = ["CheckSettings", "RunResult", "check_unit", "run_check", "read_error_finding"]


@dataclass(frozen=True)
class CheckSettings:
    """Everything a file check depends on besides the file (what a cache key would hash)."""

    enabled: frozenset[str]
    config: Config = field(default_factory=Config)


@dataclass
class RunResult:
    files_checked: int
    findings: list[Finding]
    # the sources of files that have findings, for reporters that quote source lines
    sources: dict[str, SourceUnit] = field(default_factory=dict)

    @property
    def files_with_findings(self) -> int:
        return len({finding.path for finding in self.findings})


ProgressFn = Callable[[int, int, str, int], None]  # (index, total, display path, findings)


def read_error_finding(unit: SourceUnit) -> Finding:
    """DEV000 for a file whose bytes could not be turned into text."""
    rule = _rules.rule_by_code(PARSE_ERROR_CODE)
    line = unit.error_line or 1
    return Finding(
        code=PARSE_ERROR_CODE,
        name=rule.name if rule else "parse-error",
        severity=rule.severity if rule else Severity.ERROR,
        path=unit.display,
        line=line,
        column=1,
        end_line=line,
        end_column=1,
        message=f"cannot read this file ({unit.error}); nothing in it was checked",
    )


def _to_cells(unit: SourceUnit, finding: Finding) -> Finding:
    """Re-express a finding on a notebook's joined text in (cell, line in cell) terms."""
    start = unit.to_cell(finding.line)
    if start is None:
        return finding
    cell, line = start
    end_cell, end_line = unit.to_cell(finding.end_line) or start
    end_column = finding.end_column
    if end_cell != cell:  # a span across cells cannot be shown; keep its start
        end_line, end_column = line, finding.column
    statement_lines = finding.statement_lines
    if statement_lines is not None:
        first = unit.to_cell(statement_lines[0]) or start
        last = unit.to_cell(statement_lines[1]) or start
        statement_lines = (first[1], last[1] if last[0] == first[0] else first[1])
    return finding.with_(
        cell=cell, line=line, end_line=end_line, end_column=end_column, statement_lines=statement_lines
    )


def check_unit(unit: SourceUnit, settings: CheckSettings) -> list[Finding]:
    """Findings of one read file after rule selection, per-file-ignores and suppression comments."""
    if not unit.ok:
        if PARSE_ERROR_CODE not in settings.enabled:
            return []
        findings = [read_error_finding(unit)]
    else:
        assert unit.text is not None
        helpers: dict[str, frozenset[str]] = {}
        if settings.config.move_helpers:
            helpers["move_helpers"] = frozenset(settings.config.move_helpers)
        if settings.config.device_helpers:
            helpers["device_helpers"] = frozenset(settings.config.device_helpers)
        findings = engine.check_text(unit.text, unit.display, enabled=settings.enabled, **helpers)
    ignored = settings.config.ignored_for(unit.path)
    findings = [
        finding if finding.path == unit.display else finding.with_(path=unit.display)
        for finding in findings
        if finding.code in settings.enabled and finding.code not in ignored
    ]
    findings = apply_suppressions(findings, unit.text)
    if unit.is_notebook:
        findings = [_to_cells(unit, finding) for finding in findings]
    return findings


def run_check(
    files: Sequence[DiscoveredFile],
    settings: CheckSettings,
    *,
    progress: ProgressFn | None = None,
) -> RunResult:
    """Check every file and rank all findings together."""
    findings: list[Finding] = []
    sources: dict[str, SourceUnit] = {}
    total = len(files)
    for index, file in enumerate(files, start=1):
        unit = read_source(file.path, display=file.display)
        found = check_unit(unit, settings)
        if found:
            findings.extend(found)
            sources[unit.display] = unit
        if progress is not None:
            progress(index, total, file.display, len(found))
    return RunResult(files_checked=total, findings=rank_findings(findings), sources=sources)


def check_source(unit: SourceUnit, settings: CheckSettings) -> RunResult:
    """Check one already-read source (standard input); same result shape as run_check."""
    found = check_unit(unit, settings)
    return RunResult(
        files_checked=1,
        findings=rank_findings(found),
        sources={unit.display: unit} if found else {},
    )
