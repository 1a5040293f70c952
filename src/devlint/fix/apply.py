"""Applying fixes without ever breaking a file.

A fixed source must parse and must not bring a finding that was not there before; otherwise the
file is left exactly as it was and the refusal is reported. Files are written atomically (a
temporary file beside it, then a rename) in their own encoding, BOM and newline style, keeping
the file mode. Fixing again changes nothing (fixes are applied until none is left, a few rounds
at most). Notebooks are fixed cell by cell, keeping outputs and metadata.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Iterable

import libcst as cst

from devlint.atomic import write_atomically
from devlint.findings import Finding
from devlint.source import SourceUnit, split_lines

Recheck = Callable[[str], list[Finding]]
MAX_ROUNDS = 4


@dataclass
class FixResult:
    path: str
    original: str
    fixed: str
    applied: list[Finding] = field(default_factory=list)
    refused: str | None = None  # why no fix was applied, when one was attempted

    @property
    def changed(self) -> bool:
        return self.fixed != self.original


def wanted(finding: Finding, unsafe: bool) -> bool:
    return finding.fix is not None and bool(finding.fix.edits) and (finding.fix.safe or unsafe)


def _offsets(text: str) -> list[int]:
    """Start offset of every line (1-based line i starts at offsets[i - 1])."""
    starts = [0]
    for index, char in enumerate(text):
        if char == "\n":
            starts.append(index + 1)
        elif char == "\r" and (index + 1 == len(text) or text[index + 1] != "\n"):
            starts.append(index + 1)
    return starts


def apply_edits(text: str, edits: Iterable[tuple[int, int, int, int, str]]) -> str:
    """Apply non-overlapping (line, col, end_line, end_col, replacement) edits; later ones win
    nothing: an edit overlapping an earlier-applied one is skipped."""
    starts = _offsets(text)
    newline = "\r\n" if "\r\n" in text else "\n"

    def offset(line: int, col: int) -> int:
        if line - 1 >= len(starts):
            return len(text)
        return min(starts[line - 1] + col - 1, len(text))

    spans = []
    for line, col, end_line, end_col, replacement in edits:
        spans.append((offset(line, col), offset(end_line, end_col), replacement.replace("\n", newline)
                      if newline != "\n" else replacement))
    spans.sort(key=lambda s: (s[0], s[1]), reverse=True)
    out = text
    last_start = len(text) + 1
    for start, end, replacement in spans:
        if end > last_start:
            continue  # overlaps a later edit already applied
        out = out[:start] + replacement + out[end:]
        last_start = start
    return out


def fix_source(path: str, text: str, findings: list[Finding], recheck: Recheck, *, unsafe: bool) -> FixResult:
    """Apply the wanted fixes of `findings` to `text`, re-checking after each round.

    `findings` must be all of the file's findings, not only the fixable ones: a fix is refused
    when the fixed file has more findings of a code than the file had before, and a finding
    that no fix touches is still there afterwards."""
    result = FixResult(path, text, text)
    current, current_findings = text, findings
    before = Counter(f.code for f in findings)
    for _ in range(MAX_ROUNDS):
        todo, seen = [], set()
        for finding in current_findings:
            # one repair per description a round: `labels` used on two lines is moved once
            if wanted(finding, unsafe) and finding.fix.description not in seen:  # type: ignore[union-attr]
                seen.add(finding.fix.description)  # type: ignore[union-attr]
                todo.append(finding)
        if not todo:
            break
        candidate = apply_edits(current, (e for f in todo for e in f.fix.edits))  # type: ignore[union-attr]
        if candidate == current:
            break
        try:
            cst.parse_module(candidate)
        except Exception as exc:
            result.refused = f"the fixed source would not parse ({type(exc).__name__}); file left unchanged"
            return FixResult(path, text, text, refused=result.refused)
        after = recheck(candidate)
        counts = Counter(f.code for f in after)
        new_codes = [code for code in counts if counts[code] > before.get(code, 0)]
        if new_codes:
            result.refused = (f"the fix would introduce {', '.join(sorted(new_codes))}; file left unchanged")
            return FixResult(path, text, text, refused=result.refused)
        result.applied.extend(todo)
        current, current_findings = candidate, after
    result.fixed = current
    return result


def unified_diff(result: FixResult) -> str:
    return "".join(difflib.unified_diff(
        result.original.splitlines(keepends=True), result.fixed.splitlines(keepends=True),
        fromfile=f"a/{result.path}", tofile=f"b/{result.path}"))


# --- writing --------------------------------------------------------------------------------

def write_source(unit: SourceUnit, fixed: str) -> None:
    """Write `fixed` over the file of `unit`, atomically, in its own encoding, BOM and mode."""
    data = fixed.encode(unit.encoding)
    if unit.bom:
        data = b"\xef\xbb\xbf" + data
    write_atomically(unit.path, data, durable=True)


def write_notebook(unit: SourceUnit, fixed_cells: list[str]) -> None:
    """Replace the source of each code cell, keeping outputs, metadata and formatting style."""
    with open(unit.path, "rb") as handle:
        raw = handle.read()
    document = json.loads(raw.decode("utf-8-sig"))
    index = 0
    for cell in document.get("cells", []):
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            if index < len(fixed_cells):
                was_list = isinstance(cell.get("source"), list)
                new = fixed_cells[index]
                old = "".join(cell["source"]) if was_list else cell.get("source")
                if new != old:  # an unchanged cell keeps its source as written (`[""]` stays so)
                    cell["source"] = new.splitlines(keepends=True) if was_list else new
            index += 1
    indent = 1 if b'\n "' in raw[:200] else (2 if b'\n  "' in raw[:200] else None)
    text = json.dumps(document, indent=indent, ensure_ascii=False)
    if raw.endswith(b"\n"):
        text += "\n"
    write_atomically(unit.path, text.encode("utf-8"), durable=True)


_TEMP_NAME = re.compile(r"^\.devlint-(\d+)-[A-Za-z0-9_]+\.tmp$")  # atomic.TEMP_PREFIX ... TEMP_SUFFIX
STALE_AFTER_S = 3600.0  # a temporary file this old is stale whoever wrote it


def remove_stale_temp_files(directories: Iterable[str]) -> list[str]:
    """Delete the temporary files a killed `--fix` run left in `directories`; returns their paths.

    A run killed between writing its temporary file and renaming it over the source leaves
    `.devlint-<pid>-<random>.tmp` beside the file (the source itself is intact: the rename is
    atomic). Only names of exactly that shape are touched, and only when the process that wrote
    them is gone or the file is over an hour old, so a concurrent run's file is never removed."""
    removed: list[str] = []
    now = time.time()
    for directory in sorted(set(directories)):
        try:
            with os.scandir(directory or ".") as entries:
                names = [(entry.name, entry.path) for entry in entries
                         if _TEMP_NAME.match(entry.name) and entry.is_file(follow_symlinks=False)]
        except OSError:
            continue
        for name, path in names:
            match = _TEMP_NAME.match(name)
            assert match is not None
            try:
                old = now - os.stat(path, follow_symlinks=False).st_mtime > STALE_AFTER_S
                if old or not _process_alive(int(match.group(1))):
                    os.unlink(path)
                    removed.append(path)
            except OSError:
                continue
    return removed


def _process_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    if os.name == "nt":  # os.kill(pid, 0) would signal it there: rely on the age alone
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True  # another user's process, or not ours to judge
    return True


def notebook_cells_after(unit: SourceUnit, fixed_joined: str) -> list[str] | None:
    """Map a fixed joined notebook text back to cells; None if a fix crossed cell boundaries
    or changed a line the notebook reader had commented out (a magic)."""
    assert unit.cell_map is not None and unit.cells is not None and unit.text is not None
    old_lines = split_lines(unit.text)
    new_lines = split_lines(fixed_joined)
    matcher = difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False)
    cells = [split_lines(c) for c in unit.cells]
    # rebuild each cell from the joined lines, cell by cell, following the line map
    rebuilt: list[list[str]] = [[] for _ in cells]
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for offset in range(i2 - i1):
                cell, line = unit.cell_map[i1 + offset]
                rebuilt[cell - 1].append(cells[cell - 1][line - 1])
            continue
        # a changed block: it must sit in one cell, on lines that were plain Python
        touched = {unit.cell_map[i][0] for i in range(i1, i2)} if i2 > i1 else \
            {unit.cell_map[max(i1 - 1, 0)][0]}
        if len(touched) != 1:
            return None
        cell = touched.pop()
        for i in range(i1, i2):
            c, line = unit.cell_map[i]
            if cells[c - 1][line - 1] != old_lines[i]:
                return None  # a magic line
        rebuilt[cell - 1].extend(new_lines[j1:j2])
    out = []
    for original, lines in zip(unit.cells, rebuilt):
        text = "\n".join(lines)
        if original.endswith("\n") and lines:
            text += "\n"
        out.append(text)
    return out
