"""`check --add-noqa`: a `# noqa: CODE` on every line with a finding, to adopt devlint on a code base.

As Ruff's `--add-noqa`, and beside the baseline (which keeps the findings out of the report
without touching the code): each reported line gets the codes reported on it. The comment goes
where devlint reads it (suppress.py): the finding's line, or another line of its statement when
a comment cannot end that one (inside a multi-line string, or before a backslash continuation).
An existing `# noqa: E501` gets the codes added (`# noqa: E501, DEV101`), any other comment is
kept and the directive follows it. Running it again adds nothing, since the findings it
silenced are no longer reported. A file is written only if it still parses, atomically and in
its own encoding; a notebook cell by cell. DEV000 (a file that does not parse) and DEV001 (a
comment that silences nothing) are never silenced this way.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass, field
from typing import Iterable

from devlint.findings import Finding

__all__ = ["AddNoqaResult", "add_noqa", "add_to_text"]

NEVER = frozenset({"DEV000", "DEV001"})
_NOQA_CODES = re.compile(r"(#\s*noqa\s*:\s*)([A-Za-z]+[0-9]+(?:[\s,]+[A-Za-z]+[0-9]+)*)", re.IGNORECASE)
_BARE_NOQA = re.compile(r"#\s*noqa\b(?!\s*:)", re.IGNORECASE)


@dataclass
class AddNoqaResult:
    added: int = 0  # directives written (one per line)
    files: int = 0
    refused: list[str] = field(default_factory=list)  # "path: why" for what was left alone


def _unsafe_lines(text: str) -> set[int]:
    """Lines a comment cannot end: inside a multi-line string (all but its last line), ended by a
    backslash continuation, and everything after the point where tokenizing fails."""
    unsafe: set[int] = set()
    lines = text.splitlines()
    # Python 3.12+ splits an f-string into tokens: from its start to its end line is one string
    fstring_start, fstring_end = getattr(tokenize, "FSTRING_START", -1), getattr(tokenize, "FSTRING_END", -1)
    open_fstrings: list[int] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.STRING and token.end[0] > token.start[0]:
                unsafe.update(range(token.start[0], token.end[0]))
            elif token.type == fstring_start:
                open_fstrings.append(token.start[0])
            elif token.type == fstring_end and open_fstrings:
                unsafe.update(range(open_fstrings.pop(), token.end[0]))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return set(range(1, len(lines) + 1))
    for number, line in enumerate(lines, start=1):
        if line.rstrip().endswith("\\") and "#" not in line:
            unsafe.add(number)
        if line.lstrip().startswith(("%", "!")):  # an IPython magic in a notebook cell
            unsafe.add(number)
    return unsafe


def _comments(text: str) -> dict[int, int]:
    """Line -> column (0-based) where its comment starts."""
    found: dict[int, int] = {}
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                found[token.start[0]] = token.start[1]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    return found


def _target(finding: Finding, unsafe: set[int], line_count: int) -> int | None:
    first, last = finding.statement_lines or (finding.line, finding.line)
    candidates = [finding.line, *range(first, last + 1)]
    return next((line for line in candidates if 1 <= line <= line_count and line not in unsafe), None)


def _with_codes(line: str, comment_at: int | None, codes: set[str]) -> str | None:
    """`line` (without its newline) carrying a noqa for `codes`; None when nothing is to add."""
    if comment_at is not None:
        comment = line[comment_at:]
        match = _NOQA_CODES.search(comment)
        if match is not None:
            have = [c for c in re.split(r"[\s,]+", match.group(2)) if c]
            new = [c for c in sorted(codes) if c.upper() not in {h.upper() for h in have}]
            if not new:
                return None
            merged = match.group(1) + ", ".join(have + new)
            return line[:comment_at] + comment[: match.start()] + merged + comment[match.end():]
        if _BARE_NOQA.search(comment):
            return None  # a bare `# noqa` silences every code already
    return f"{line.rstrip()}  # noqa: {', '.join(sorted(codes))}"


def add_to_text(text: str, findings: Iterable[Finding]) -> tuple[str, int]:
    """`text` with the directives for `findings` (positions in `text`), and how many lines changed."""
    lines = text.splitlines(keepends=True)
    unsafe = _unsafe_lines(text)
    wanted: dict[int, set[str]] = {}
    for finding in findings:
        if finding.code in NEVER:
            continue
        line = _target(finding, unsafe, len(lines))
        if line is not None:
            wanted.setdefault(line, set()).add(finding.code)
    comments = _comments(text)
    changed = 0
    for number, codes in wanted.items():
        original = lines[number - 1]
        body = original.rstrip("\r\n")
        ending = original[len(body):]
        new = _with_codes(body, comments.get(number), codes)
        if new is not None:
            lines[number - 1] = new + ending
            changed += 1
    return "".join(lines), changed


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return True


def add_noqa(findings: Iterable[Finding], sources: dict) -> AddNoqaResult:
    """Write the directives for `findings` into their files (`sources`: path -> SourceUnit)."""
    from devlint.fix.apply import write_notebook, write_source
    from devlint.source import read_source

    result = AddNoqaResult()
    by_path: dict[str, list[Finding]] = {}
    for finding in findings:
        if finding.code not in NEVER:
            by_path.setdefault(finding.path, []).append(finding)
    for path, group in sorted(by_path.items()):
        unit = sources.get(path) or read_source(path)
        if not unit.ok or unit.text is None or unit.lossy:  # lossy: its text is not its bytes
            continue
        if unit.is_notebook:
            cells = list(unit.cells or ())
            count = 0
            for index, cell in enumerate(cells, start=1):
                mine = [f for f in group if f.cell == index]
                if mine:
                    cells[index - 1], added = add_to_text(cell, mine)
                    count += added
            if count and not write_notebook(unit, cells):
                result.refused.append(f"{path}: its notebook JSON cannot be rewritten cell by cell; left unchanged")
                continue
        else:
            text, count = add_to_text(unit.text, group)
            if count and not _parses(text):
                result.refused.append(f"{path}: adding the comments would break the file; left unchanged")
                continue
            if count:
                write_source(unit, text)
        if count:
            result.added += count
            result.files += 1
    return result
