"""Applying fixes without ever breaking a file.

A fix is applied only when the fixed source parses, reads no name where it is not bound
(devlint.fix.bindings) and brings no finding that was not there before; a fix that fails is
refused alone, and the refusal is reported. Fixes are applied until none is left, so a second
run changes nothing. Files are written through devlint.atomic in their own encoding, BOM and
newline style; notebooks cell by cell, every byte outside the fixed cells kept
(devlint.fix.notebook_write).
"""

from __future__ import annotations

import difflib
import os
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Iterable

import libcst as cst

from devlint.atomic import write_atomically
from devlint.fix.bindings import gained, unbound_reads
from devlint.findings import Finding
from devlint.source import SourceUnit, split_lines

Recheck = Callable[[str], list[Finding]]
# what else a fixed text must satisfy (a notebook: no fix crosses cells): a reason to refuse, or None
Accept = Callable[[str], "str | None"]
# a safety net, never reached on real code: each round applies every fix left or refuses one
MAX_ROUNDS = 200


@dataclass
class FixResult:
    path: str
    original: str
    fixed: str
    applied: list[Finding] = field(default_factory=list)
    refused: str | None = None  # the fixes that were not applied, and why

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


def newline_of(text: str) -> str:
    """The file's own line ending (an inserted line ends like the others)."""
    if "\r\n" in text:
        return "\r\n"
    if "\r" in text and "\n" not in text:
        return "\r"
    return "\n"


def _spans(text: str, edits: Iterable[tuple[int, int, int, int, str]]) -> list[tuple[int, int, str]]:
    starts = _offsets(text)
    newline = newline_of(text)

    def offset(line: int, col: int) -> int:
        if line - 1 >= len(starts):
            return len(text)
        return min(starts[line - 1] + col - 1, len(text))

    return [(offset(line, col), offset(end_line, end_col),
             replacement.replace("\n", newline) if newline != "\n" else replacement)
            for line, col, end_line, end_col, replacement in edits]


def apply_edits(text: str, edits: Iterable[tuple[int, int, int, int, str]]) -> str:
    """Apply non-overlapping (line, col, end_line, end_col, replacement) edits; later ones win
    nothing: an edit overlapping an earlier-applied one is skipped."""
    spans = sorted(_spans(text, edits), key=lambda s: (s[0], s[1]), reverse=True)
    out = text
    last_start = len(text) + 1
    for start, end, replacement in spans:
        if end > last_start:
            continue  # overlaps a later edit already applied
        out = out[:start] + replacement + out[end:]
        last_start = start
    return out


def _key(finding: Finding, text: str) -> tuple:
    """What names a fix from one round to the next, whatever lines earlier fixes added: its
    code, its description, its new text and the line it applies to."""
    assert finding.fix is not None
    lines = split_lines(text)
    first = finding.fix.edits[0][0]
    where = lines[first - 1].strip() if 0 < first <= len(lines) else ""
    return (finding.code, finding.fix.description, tuple(e[4] for e in finding.fix.edits), where)


def _round(text: str, findings: list[Finding], unsafe: bool, rejected: dict) -> list[Finding]:
    """The fixes to try this round: wanted, not refused before, edits that overlap no other.
    A line inserted for one name (`labels = labels.to(device)`) is inserted once a round:
    the re-check says whether a later use still needs it."""
    todo: list[Finding] = []
    seen: set = set()
    taken: list[tuple[int, int]] = []
    for finding in findings:
        if not wanted(finding, unsafe) or _key(finding, text) in rejected:
            continue
        fix = finding.fix
        assert fix is not None
        inserts_line = any(e[:2] == e[2:4] and e[4].endswith("\n") for e in fix.edits)
        once = fix.description if inserts_line else fix.edits
        spans = [(start, end) for start, end, _ in _spans(text, fix.edits)]
        if once in seen or any(s < e2 and s2 < e or (s == e == s2 == e2) for s, e in spans for s2, e2 in taken):
            continue
        seen.add(once)
        taken.extend(spans)
        todo.append(finding)
    return todo


def fix_source(path: str, text: str, findings: list[Finding], recheck: Recheck, *, unsafe: bool,
               accept: Accept | None = None) -> FixResult:
    """Apply every wanted fix of `findings` to `text`, until none is left (the fixed point: a
    second run changes nothing).

    `findings` must be all of the file's findings, not only the fixable ones: a fix is refused
    when the fixed file would not parse, would read a name where it is not bound
    (devlint.fix.bindings), would have more findings of a code than the file had before, still
    has the finding it fixes, or fails `accept`. A refused fix refuses only itself: the fixes of
    a round are tried together, and one by one when that fails."""
    result = FixResult(path, text, text)
    before = Counter(f.code for f in findings)
    base_unbound = unbound_reads(text)
    current, current_findings = text, findings
    rejected: dict[tuple, str] = {}

    def attempt(todo: list[Finding]) -> tuple[str, list[Finding] | str]:
        candidate = apply_edits(current, (e for f in todo for e in f.fix.edits))  # type: ignore[union-attr]
        if candidate == current:
            return candidate, "it changes nothing"
        why = _broken(candidate, base_unbound) or (accept(candidate) if accept is not None else None)
        if why:
            return candidate, why
        after = recheck(candidate)
        counts = Counter(f.code for f in after)
        new_codes = sorted(code for code in counts if counts[code] > before.get(code, 0))
        if new_codes:
            return candidate, f"it would introduce {', '.join(new_codes)}"
        # a fix that leaves its own finding (and so would be applied again and again) is no fix
        again = {_key(f, candidate) for f in after if wanted(f, unsafe)}
        if any(_key(f, current) in again for f in todo):
            return candidate, "it does not resolve its finding"
        return candidate, after

    for _ in range(MAX_ROUNDS):
        todo = _round(current, current_findings, unsafe, rejected)
        if not todo:
            break
        candidate, outcome = attempt(todo)
        if isinstance(outcome, str) and len(todo) > 1:
            for finding in todo:  # one by one: the first that passes starts the next round
                candidate, outcome = attempt([finding])
                if not isinstance(outcome, str):
                    todo = [finding]
                    break
                rejected[_key(finding, current)] = _refusal(finding, outcome)
        if isinstance(outcome, str):
            for finding in todo:
                rejected.setdefault(_key(finding, current), _refusal(finding, outcome))
            continue
        result.applied.extend(todo)
        current, current_findings = candidate, outcome
    result.fixed = current
    reasons = [why for why in rejected.values() if why]
    if reasons:
        result.refused = "; ".join(reasons)
    return result


def _broken(candidate: str, base_unbound: Counter | None) -> str | None:
    """Why a fixed text breaks the program, or None."""
    try:
        cst.parse_module(candidate)
    except Exception as exc:
        return f"the fixed source would not parse ({type(exc).__name__})"
    after = unbound_reads(candidate)
    if after is None and base_unbound is not None:
        return "the fixed source would not compile"
    names = gained(base_unbound, after)
    if names:
        return f"it would read {', '.join(f'`{n}`' for n in names)} where it is not bound"
    return None


def _refusal(finding: Finding, why: str) -> str:
    if why == "it changes nothing":
        return ""
    assert finding.fix is not None
    return f"fix for {finding.code} at line {finding.line} not applied ({finding.fix.description}): {why}"


def unified_diff(result: FixResult) -> str:
    return "".join(difflib.unified_diff(
        result.original.splitlines(keepends=True), result.fixed.splitlines(keepends=True),
        fromfile=f"a/{result.path}", tofile=f"b/{result.path}"))


# --- writing --------------------------------------------------------------------------------

def source_bytes(unit: SourceUnit, fixed: str) -> bytes:
    """`fixed` in the file's own encoding and BOM (its newlines are the text's own)."""
    data = fixed.encode(unit.encoding)
    return b"\xef\xbb\xbf" + data if unit.bom else data


def notebook_bytes(unit: SourceUnit, raw: bytes, fixed_cells: list[str]) -> bytes | None:
    """The notebook `raw` with the fixed code cells' sources; every other byte kept. None when
    its JSON cannot be rewritten that way."""
    from devlint.fix.notebook_write import replace_code_cells

    assert unit.cells is not None
    return replace_code_cells(raw, list(unit.cells), fixed_cells)


def write_source(unit: SourceUnit, fixed: str) -> None:
    """Write `fixed` over the file of `unit`, atomically, in its own encoding, BOM and mode."""
    write_atomically(unit.path, source_bytes(unit, fixed), durable=True)


def write_notebook(unit: SourceUnit, fixed_cells: list[str]) -> bool:
    """Replace the changed code cells' sources in the notebook of `unit`, keeping every other
    byte (outputs, metadata, indentation, escapes); False (nothing written) when its JSON cannot
    be rewritten that way or the file changed since it was read."""
    with open(unit.path, "rb") as handle:
        raw = handle.read()
    new = notebook_bytes(unit, raw, fixed_cells)
    if new is None:
        return False
    write_atomically(unit.path, new, durable=True)
    return True


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
