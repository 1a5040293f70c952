"""`check --diff` of a notebook: one unified diff per changed code cell.

A diff of the joined cells matches nothing on disk (the file is JSON); a diff per cell, named
`path:cell N`, says exactly which cell changes and how, and each one applies to that cell's
source."""

from __future__ import annotations

import difflib

from devlint.fix.apply import FixResult, notebook_cells_after, unified_diff
from devlint.source import SourceUnit


def notebook_diff(unit: SourceUnit, result: FixResult) -> str:
    """The per-cell diffs of a fixed notebook (the joined diff when cells cannot be told apart)."""
    cells = notebook_cells_after(unit, result.fixed) if unit.cells is not None else None
    if cells is None or unit.cells is None:
        return unified_diff(result)
    out = []
    for number, (before, after) in enumerate(zip(unit.cells, cells), start=1):
        if before != after:
            out.append("".join(difflib.unified_diff(
                before.splitlines(keepends=True), after.splitlines(keepends=True),
                fromfile=f"a/{result.path}:cell {number}", tofile=f"b/{result.path}:cell {number}")))
            if not out[-1].endswith("\n"):
                out[-1] += "\n\\ No newline at end of cell\n"
    return "".join(out)
