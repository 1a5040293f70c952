"""Inline suppression comments: `# noqa`, `# noqa: DEV101`, `# devlint: ignore[DEV101]`.

Comments are found with `tokenize`, so `"# noqa"` inside a string literal suppresses nothing.
A comment silences a finding on its reported line or, for a finding whose statement spans
several lines, on any line of that statement (a long call formatted over many lines can carry
the comment on its closing line). `# noqa: E501` names no devlint code and so silences nothing
here, as flake8 does for other plugins' codes; a bare `# noqa` (or `# devlint: ignore`)
silences every code on its line.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass
from typing import Iterable

from devlint.findings import Finding

__all__ = ["Suppressions", "parse_suppressions", "apply_suppressions"]

_NOQA = re.compile(
    r"#\s*noqa\b(?:\s*:\s*(?P<codes>[A-Za-z]+[0-9]+(?:[\s,]+[A-Za-z]+[0-9]+)*))?",
    re.IGNORECASE,
)
_DEVLINT = re.compile(r"#\s*devlint\s*:\s*ignore\b(?:\s*\[(?P<codes>[^\]]*)\])?", re.IGNORECASE)


@dataclass(frozen=True)
class Suppressions:
    """Per line (1-based): the codes silenced there, or None for all of them."""

    by_line: dict[int, frozenset[str] | None]

    def silences(self, finding: Finding) -> bool:
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
                return True
        return False


def _codes_in(comment: str) -> frozenset[str] | None | bool:
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


def _comments(text: str) -> Iterable[tuple[int, str]]:
    """(line, comment text) of every real comment; stops quietly where tokenizing fails."""
    readline = io.StringIO(text).readline
    try:
        for token in tokenize.generate_tokens(readline):
            if token.type == tokenize.COMMENT:
                yield token.start[0], token.string
    except (tokenize.TokenError, SyntaxError, ValueError, UnicodeError):
        # an unterminated string or bracket, a bad dedent: keep the comments seen so far
        return


def parse_suppressions(text: str) -> Suppressions:
    """Find every suppression comment in `text` (which may be any text, even invalid Python)."""
    by_line: dict[int, frozenset[str] | None] = {}
    for line, comment in _comments(text):
        codes = _codes_in(comment)
        if codes is False:
            continue
        previous = by_line.get(line, frozenset())
        if codes is None or previous is None:
            by_line[line] = None
        else:
            by_line[line] = previous | codes
    return Suppressions(by_line)


def apply_suppressions(findings: Iterable[Finding], text: str | None) -> list[Finding]:
    """The findings that no comment in `text` silences."""
    findings = list(findings)
    if not findings or not text:
        return findings
    table = parse_suppressions(text)
    if not table.by_line:
        return findings
    return [finding for finding in findings if not table.silences(finding)]
