"""One `devlint check` run: discovered files in, ranked findings out.

discover -> read -> engine.check_text -> per-file-ignores -> suppression comments -> notebook
cell mapping -> ranking. `check_unit` is the per-file unit of work and takes and returns plain,
picklable data, so worker processes and a result cache can wrap it later without changing it.
A file that cannot be read or decoded becomes a DEV000 finding for that file; the other files
are checked as usual. Anything else that goes wrong is a bug in devlint and propagates (the CLI
turns it into exit 3).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Callable, Sequence

from devlint import engine
from devlint import rules as _rules
from devlint.config import Config
from devlint.discover import DiscoveredFile
from devlint.findings import Finding, Phase, Severity
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
        cell=cell, line=line, end_line=end_line, end_column=end_column, statement_lines=statement_lines,
        message=_LINE_MENTION.sub(lambda m: _cell_line(unit, int(m.group(1)), cell), finding.message),
    )


# "moved at line 9" in a message counts lines of the joined cells; say where that is in the notebook
_LINE_MENTION = re.compile(r"\bline (\d+)\b")


def _cell_line(unit: SourceUnit, joined_line: int, cell: int) -> str:
    where = unit.to_cell(joined_line)
    if where is None or joined_line > len(unit.cell_map or ()):
        return f"line {joined_line}"
    return f"line {where[1]}" if where[0] == cell else f"line {where[1]} of cell {where[0]}"


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
    own = [f for f in findings if f.path == unit.display]
    own = [f for f in own if f.code in settings.enabled and f.code not in ignored]
    own = apply_suppressions(own, unit.text)
    if unit.is_notebook:
        own = [_to_cells(unit, finding) for finding in own]
    return own + _other_files(unit, [f for f in findings if f.path != unit.display], settings)


def _other_files(unit: SourceUnit, findings: list[Finding], settings: CheckSettings) -> list[Finding]:
    """Findings the check of `unit` located in other project files (`self.mask` in models.py,
    reached from train.py): they keep their own path, and that file's per-file-ignores and
    suppression comments apply to them."""
    kept: list[Finding] = []
    by_path: dict[str, list[Finding]] = {}
    for finding in findings:
        # shown like the checked file: absolute if it was named so, else relative to here
        path = os.path.abspath(finding.path)
        if not os.path.isabs(unit.display):
            path = os.path.relpath(path)
        by_path.setdefault(path, []).append(finding if path == finding.path else finding.with_(path=path))
    for path, group in by_path.items():
        ignored = settings.config.ignored_for(path)
        group = [f for f in group if f.code in settings.enabled and f.code not in ignored]
        if group:
            kept.extend(apply_suppressions(group, read_source(path, display=path).text))
    return kept


def run_check(
    files: Sequence[DiscoveredFile],
    settings: CheckSettings,
    *,
    progress: ProgressFn | None = None,
) -> RunResult:
    """Check every file and rank all findings together."""
    findings: list[Finding] = []
    sources: dict[str, SourceUnit] = {}
    # a finding in models.py is reached from each script that uses it: keep one, preferring the
    # copy from a program that tells when it crashes (models.py alone cannot; train.py can)
    seen: dict[tuple, int] = {}
    total = len(files)
    for index, file in enumerate(files, start=1):
        unit = read_source(file.path, display=file.display)
        found = []
        for finding in check_unit(unit, settings):
            key = (os.path.abspath(finding.path), finding.cell, finding.line, finding.column, finding.code)
            if key not in seen:
                seen[key] = len(findings) + len(found)
                found.append(finding)
            elif (seen[key] < len(findings) and finding.phase is not Phase.UNKNOWN
                  and findings[seen[key]].phase is Phase.UNKNOWN):
                findings[seen[key]] = finding.with_(path=findings[seen[key]].path)
        for finding in found:
            if finding.path not in sources:
                sources[finding.path] = unit if finding.path == unit.display else read_source(finding.path)
        findings.extend(found)
        if progress is not None:
            progress(index, total, file.display, len(found))
    return RunResult(files_checked=total, findings=rank_findings(findings), sources=sources)


def check_source(unit: SourceUnit, settings: CheckSettings) -> RunResult:
    """Check one already-read source (standard input); same result shape as run_check."""
    found = check_unit(unit, settings)
    sources = {f.path: unit if f.path == unit.display else read_source(f.path) for f in found}
    return RunResult(
        files_checked=1,
        findings=rank_findings(found),
        sources=sources,
    )
