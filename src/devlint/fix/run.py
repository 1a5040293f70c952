"""`check --fix` / `--diff`: apply the findings' fixes file by file, through devlint.fix.apply.

Only the files the run was asked to check are written (a finding reached in an excluded or
unnamed file through an import is reported, never fixed), and only as devlint read them: a file
that changed since it was checked, or changes while it is fixed, is left alone and named. A
file that cannot be written (read-only, a read-only folder, a full disk) is named with the
reason; the other files are still fixed and every finding is still reported.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field, replace

from devlint.fix.apply import (FixResult, fix_source, notebook_bytes, notebook_cells_after, source_bytes, wanted)
from devlint.runner import CheckSettings, RunResult, check_unit
from devlint.source import SourceUnit, read_source_bytes

UNCHANGED = "left unchanged"


@dataclass
class FixRun:
    results: list[FixResult] = field(default_factory=list)

    @property
    def changed(self) -> list[FixResult]:
        return [r for r in self.results if r.changed]

    @property
    def refused(self) -> list[FixResult]:
        return [r for r in self.results if r.refused]


def fix_files(result: RunResult, settings: CheckSettings, *, unsafe: bool, write: bool,
              paths: Collection[str] | None = None) -> FixRun:
    """Fix every file that has a wanted fix (of `paths`, the display paths the run checked, when
    given); write it back when `write`."""
    run = FixRun()
    by_path: dict[str, list] = {}
    for finding in result.findings:
        by_path.setdefault(finding.path, []).append(finding)
    for path, findings in sorted(by_path.items()):
        if (paths is not None and path not in paths) or not any(wanted(f, unsafe) for f in findings):
            continue
        checked = result.sources.get(path)
        unit, data = read_source_bytes(checked.path if checked is not None else path, display=path)
        if not unit.ok or unit.text is None or data is None:
            run.results.append(_left(path, "", f"cannot read it any more ({unit.error})"))
            continue
        if unit.lossy:  # bytes it could not decode: writing it back would change them
            run.results.append(_left(path, unit.text, "it holds bytes that are not valid in its encoding"))
            continue
        if checked is None or checked.text != unit.text:
            run.results.append(_left(path, unit.text, "it changed since devlint read it"))
            continue
        fixed = fix_unit(unit, findings, settings, unsafe=unsafe)
        if fixed.changed and write:
            fixed = _write(unit, data, fixed)
        run.results.append(fixed)
    return run


def _left(path: str, text: str, why: str, refused: str | None = None) -> FixResult:
    reason = f"{why}; {UNCHANGED}"
    return FixResult(path, text, text, refused=f"{reason} ({refused})" if refused else reason)


def _write(unit: SourceUnit, data: bytes, fixed: FixResult) -> FixResult:
    """Write the fixed text over the file when it still holds `data`; otherwise, or when the
    write fails, the file is left as it is and the result says why."""
    from devlint.atomic import write_atomically

    if unit.is_notebook:
        cells = notebook_cells_after(unit, fixed.fixed)
        new = notebook_bytes(unit, data, cells) if cells is not None else None
        if new is None:
            return _left(fixed.path, fixed.original, "its notebook JSON cannot be rewritten cell by cell")
    else:
        try:
            new = source_bytes(unit, fixed.fixed)
        except UnicodeError as exc:
            return _left(fixed.path, fixed.original, f"the fix cannot be written in {unit.encoding} ({exc})")
    try:
        with open(unit.path, "rb") as handle:
            now = handle.read()
    except OSError as exc:
        return _left(fixed.path, fixed.original, f"cannot read it any more ({exc.strerror or exc})")
    if now != data:
        return _left(fixed.path, fixed.original, "it changed while devlint was fixing it")
    try:
        write_atomically(unit.path, new, durable=True)
    except OSError as exc:
        return _left(fixed.path, fixed.original, f"cannot write it: {exc.strerror or exc}", fixed.refused)
    return fixed


def fix_unit(unit: SourceUnit, findings: list, settings: CheckSettings, *, unsafe: bool) -> FixResult:
    def recheck(text: str) -> list:
        return [f for f in check_unit(replace(unit, text=text), settings) if f.path == unit.display]

    def within_cells(text: str) -> str | None:
        if notebook_cells_after(unit, text) is None:
            return "it would cross notebook cells or change a magic line"
        return None

    assert unit.text is not None
    return fix_source(unit.display, unit.text, findings, recheck, unsafe=unsafe,
                      accept=within_cells if unit.is_notebook else None)
