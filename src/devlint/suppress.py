"""Suppression comments: `# noqa`, `# noqa: DEV101`, `# devlint: ignore[DEV101]` on a line, and
`# devlint: noqa` / `# devlint: noqa: DEV101, DEV107` on a line of its own for the whole file
(as Ruff's `# ruff: noqa`).

Comments are found with `tokenize`, so `"# noqa"` inside a string literal suppresses nothing.
A comment silences a finding on its reported line or, for a finding whose statement spans
several lines, on any line of that statement (a long call formatted over many lines can carry
the comment on its closing line). `# noqa: E501` names no devlint code and so silences nothing
here, as flake8 does for other plugins' codes; a bare `# noqa` (or `# devlint: ignore`)
silences every code on its line. No comment silences DEV000 (as in Ruff): a file Python cannot
run, or that devlint could not check, is never hidden by a `# noqa` on the broken line or a
`# devlint: noqa` for the file. `unused_suppressions` finds the comments that name devlint
codes and silence nothing (DEV001, off by default): a stale `# noqa: DEV107` would hide the next
real bug on that line.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field
from typing import Iterable, Literal

from devlint.findings import Finding

__all__ = ["Suppressions", "parse_suppressions", "apply_suppressions", "unused_suppressions", "Unused"]

_NOQA = re.compile(
    r"#\s*noqa\b(?:\s*:\s*(?P<codes>[A-Za-z]+[0-9]+(?:[\s,]+[A-Za-z]+[0-9]+)*))?",
    re.IGNORECASE,
)
_DEVLINT = re.compile(r"#\s*devlint\s*:\s*ignore\b(?:\s*\[(?P<codes>[^\]]*)\])?", re.IGNORECASE)
_FILE = re.compile(
    r"^#\s*devlint\s*:\s*noqa\b(?:\s*:\s*(?P<codes>[A-Za-z]+[0-9]+(?:[\s,]+[A-Za-z]+[0-9]+)*))?",
    re.IGNORECASE,
)
# the parse error: nothing in the file was checked, so no comment in it can vouch for it
UNSILENCEABLE = frozenset({"DEV000"})
_OWN_CODE = re.compile(r"^DEV[0-9]{3}$")
# every suppression comment holds one of these words: a text without them has none
_ANY_SUPPRESSION = re.compile(r"noqa|devlint", re.IGNORECASE)


@dataclass(frozen=True)
class Suppressions:
    """Per line (1-based): the codes silenced there, or None for all of them."""

    by_line: dict[int, frozenset[str] | None]
    # `# devlint: noqa` on a line of its own: None silences the whole file, a set those codes
    whole_file: frozenset[str] | None = frozenset()
    columns: dict[int, int] = field(default_factory=dict)  # where each line's comment starts

    def silences(self, finding: Finding) -> bool:
        if finding.code.upper() in UNSILENCEABLE:
            return False
        if self.whole_file is None or finding.code.upper() in self.whole_file:
            return True
        return self.silencing_line(finding) is not None

    def silencing_line(self, finding: Finding) -> int | None:
        """The line whose comment silences `finding` (None: no line comment does)."""
        if finding.code.upper() in UNSILENCEABLE:
            return None
        lines = {finding.line}
        if finding.statement_lines is not None:
            first, last = finding.statement_lines
            lines.update(range(first, last + 1))
        code = finding.code.upper()
        for line in lines:
            if line not in self.by_line:
                continue
            codes = self.by_line[line]
            if codes is None or code in codes:
                return line
        return None


def _codes_in(comment: str) -> frozenset[str] | None | Literal[False]:
    """What one comment silences: None (everything), a code set, or False (nothing)."""
    result: set[str] = set()
    bare = False
    found = False
    for match in _NOQA.finditer(comment):
        found = True
        if match.group("codes"):
            result.update(code.upper() for code in re.split(r"[\s,]+", match.group("codes")) if code)
        else:
            bare = True
    for match in _DEVLINT.finditer(comment):
        found = True
        codes = match.group("codes")
        if codes is None:
            bare = True
        else:
            result.update(code.upper() for code in re.split(r"[\s,]+", codes) if code)
    if not found:
        return False
    return None if bare else frozenset(result)


def _comments(text: str) -> Iterable[tuple[int, int, str, bool]]:
    """(line, column, comment text, alone on its line) of every real comment; stops quietly
    where tokenizing fails."""
    readline = io.StringIO(text).readline
    try:
        for token in tokenize.generate_tokens(readline):
            if token.type == tokenize.COMMENT:
                alone = not token.line[: token.start[1]].strip()
                yield token.start[0], token.start[1] + 1, token.string, alone
    except (tokenize.TokenError, SyntaxError, ValueError, UnicodeError):
        # an unterminated string or bracket, a bad dedent: keep the comments seen so far
        return


def parse_suppressions(text: str) -> Suppressions:
    """Find every suppression comment in `text` (which may be any text, even invalid Python)."""
    by_line: dict[int, frozenset[str] | None] = {}
    columns: dict[int, int] = {}
    whole_file: frozenset[str] | None = frozenset()
    if _ANY_SUPPRESSION.search(text) is None:  # tokenizing costs more than the analysis of most files
        return Suppressions(by_line, whole_file, columns)
    for line, column, comment, alone in _comments(text):
        whole = _FILE.match(comment) if alone else None
        if whole is not None:
            named = whole.group("codes")
            if named is None or whole_file is None:
                whole_file = None
            else:
                whole_file = whole_file | {code.upper() for code in re.split(r"[\s,]+", named) if code}
            continue
        codes = _codes_in(comment)
        columns[line] = column
        if codes is False:
            continue
        previous = by_line.get(line, frozenset())
        if codes is None or previous is None:
            by_line[line] = None
        else:
            by_line[line] = previous | codes
    return Suppressions(by_line, whole_file, columns)


def apply_suppressions(findings: Iterable[Finding], text: str | None) -> list[Finding]:
    """The findings that no comment in `text` silences."""
    findings = list(findings)
    if not findings or not text:
        return findings
    table = parse_suppressions(text)
    if not table.by_line and table.whole_file == frozenset():
        return findings
    return [finding for finding in findings if not table.silences(finding)]


@dataclass(frozen=True)
class Unused:
    """A suppression comment that silenced nothing: where it is, and the codes it names."""

    line: int
    column: int
    codes: tuple[str, ...]  # empty for a bare `# devlint: ignore`


def unused_suppressions(findings: Iterable[Finding], text: str | None, enabled: frozenset[str]) -> list[Unused]:
    """Comments naming devlint codes (or a bare `# devlint: ignore`) that silence none of
    `findings` (all of the file's findings, before suppression). Codes of rules that did not
    run are not judged, and a bare `# noqa` may be meant for another tool: neither is reported."""
    if not text:
        return []
    table = parse_suppressions(text)
    if not table.by_line:
        return []
    used: dict[int, set[str]] = {}
    for finding in findings:
        line = table.silencing_line(finding)
        if line is not None:
            used.setdefault(line, set()).add(finding.code.upper())
    if table.whole_file is None or "DEV001" in table.whole_file:
        return []  # `# devlint: noqa` (or `: DEV001`) for the file
    out = []
    for line, codes in sorted(table.by_line.items()):
        if codes is not None and "DEV001" in codes:
            continue  # the comment itself says it may stand unused
        if codes is None:
            if line not in used and _bare_devlint_comment(text, line):
                out.append(Unused(line, table.columns.get(line, 1), ()))
            continue
        # a code in devlint's form that no rule has (`# noqa: DEV999`, a typo) silences nothing ever
        stale = tuple(sorted(code for code in codes if _OWN_CODE.match(code)
                             and (code in enabled or code not in _known_codes())
                             and code not in used.get(line, set())))
        if stale:
            out.append(Unused(line, table.columns.get(line, 1), stale))
    return out


def _known_codes() -> frozenset[str]:
    from devlint.rules import all_rules

    return frozenset(rule.code for rule in all_rules())


def _bare_devlint_comment(text: str, line: int) -> bool:
    lines = text.splitlines()
    return 0 < line <= len(lines) and bool(re.search(r"#\s*devlint\s*:\s*ignore\b(?!\s*\[)", lines[line - 1],
                                                      re.IGNORECASE))
