"""`check --fix` / `--diff`: apply the findings' fixes file by file, through devlint.fix.apply."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from devlint.fix.apply import FixResult, fix_source, notebook_cells_after, wanted, write_notebook, write_source
from devlint.runner import CheckSettings, RunResult, check_unit
from devlint.source import SourceUnit, read_source


@dataclass
class FixRun:
    results: list[FixResult] = field(default_factory=list)

    @property
    def changed(self) -> list[FixResult]:
        return [r for r in self.results if r.changed]

    @property
    def refused(self) -> list[FixResult]:
        return [r for r in self.results if r.refused]


def fix_files(result: RunResult, settings: CheckSettings, *, unsafe: bool, write: bool) -> FixRun:
    """Fix every file that has a wanted fix; write it back when `write`."""
    run = FixRun()
    by_path: dict[str, list] = {}
    for finding in result.findings:
        by_path.setdefault(finding.path, []).append(finding)
    for path, findings in sorted(by_path.items()):
        if not any(wanted(f, unsafe) for f in findings):
            continue
        unit = result.sources.get(path) or read_source(path)
        if not unit.ok or unit.text is None or unit.lossy:  # lossy: writing it back would change its bytes
            continue
        fixed = fix_unit(unit, findings, settings, unsafe=unsafe)
        if fixed.changed and write:
            if unit.is_notebook:
                cells = notebook_cells_after(unit, fixed.fixed)
                if cells is None:
                    fixed = FixResult(path, fixed.original, fixed.original,
                                      refused="a fix would cross notebook cells; notebook left unchanged")
                else:
                    write_notebook(unit, cells)
            else:
                write_source(unit, fixed.fixed)
        run.results.append(fixed)
    return run


def fix_unit(unit: SourceUnit, findings: list, settings: CheckSettings, *, unsafe: bool) -> FixResult:
    def recheck(text: str) -> list:
        return [f for f in check_unit(replace(unit, text=text), settings) if f.path == unit.display]

    assert unit.text is not None
    return fix_source(unit.display, unit.text, findings, recheck, unsafe=unsafe)
