"""`--format text` (default): ranked findings with the source around each, for people.

The header says what will happen if the program runs as it is ("2 errors will crash this run:
one at the first training step in `train()`, one after the first epoch in `evaluate()`"), so
the reader knows at once what the report costs to ignore. Each finding follows in ranked order:
its location and message, laid out one clause a line (the value that stayed on the CPU and
where it came from; the device value it meets and where that was moved; when it crashes), the
source lines around it with the reported span underlined, and the fix.

rich is imported here and only here, when this format is chosen. Colour is used only when
standard output is a terminal and NO_COLOR is not set; source lines are never wrapped, so piped
output stays greppable.
"""

from __future__ import annotations

import os
from types import SimpleNamespace
from typing import TYPE_CHECKING, Iterable, TextIO

from devlint.findings import Confidence, Finding, Phase, Severity
from devlint.report import fixable_marker, location, severity_counts, step_where

if TYPE_CHECKING:  # pragma: no cover
    from devlint.report import ReportOptions
    from devlint.runner import RunResult
    from devlint.source import SourceUnit

_SEVERITY_STYLE = {"error": "bold red", "warning": "bold yellow", "info": "bold blue"}
_CONTEXT = 1  # lines shown before and after the reported lines
_MAX_SPAN = 4  # longest reported span quoted in full
_PARSE_ERROR = "DEV000"

# when the crash happens, as the header says it
_WHEN = {
    Phase.TRAINING: "at the first training step",
    Phase.EVALUATION: "after the first epoch",
    Phase.CHECKPOINT: "when the checkpoint is reloaded",
    Phase.INFERENCE: "in inference",
    Phase.MODULE: "as soon as the script starts",
    Phase.UNKNOWN: "when the line runs",
}
_NUMBER_WORDS = {1: "one"}


def render(result: "RunResult", stream: TextIO, options: "ReportOptions | None" = None) -> None:
    if not result.findings:
        return  # the summary on stderr says so; nothing to show
    from rich.console import Console
    from rich.text import Text

    color = options.color if options is not None else "auto"
    console = Console(
        file=stream,
        # NO_COLOR or --color never: no escape sequences at all (rich alone would still emit
        # bold and dim); --color always: colour even into a pipe or a file
        color_system=None if color == "never" or (color == "auto" and os.environ.get("NO_COLOR"))
        else ("standard" if color == "always" else "auto"),
        force_terminal=True if color == "always" else None,
        highlight=False,
        markup=False,
        emoji=False,
        soft_wrap=True,
    )
    for number, line in enumerate(header_lines(result) if options is None or not options.quiet else []):
        console.print(Text(line, style="bold" if number == 0 else ""))
    quiet = options is not None and options.quiet
    for index, finding in enumerate(result.findings):
        if index or not quiet:
            console.print()
        clauses = message_clauses(finding)
        console.print(_headline(finding, fixable_marker(finding, options) + (clauses[0] if clauses else ""), Text))
        for clause in clauses[1:]:
            console.print(Text(f"    {clause}"))
        unit = result.sources.get(finding.path)
        for line in _excerpt(finding, unit, Text):
            console.print(line)
        for line in _evidence_notes(finding, Text):
            console.print(line)
        if finding.fix is not None:
            safety = "safe" if finding.fix.safe else "unsafe: changes behaviour"
            fix_line = Text("    fix", style="bold green")
            fix_line.append(f" ({safety}): {finding.fix.description}")
            console.print(fix_line)


# --- the header ------------------------------------------------------------------------------


def when(phase: Phase, functions: Iterable[str] = ()) -> str:
    """"after the first epoch in `evaluate()`": when a crash happens, and where."""
    text = _WHEN.get(phase, _WHEN[Phase.UNKNOWN])
    names = [f"`{name}()`" for name in dict.fromkeys(functions) if name and name != "<module>"]
    if not names or phase is Phase.MODULE:
        return text
    if len(names) > 3:
        names = names[:2] + [f"{len(names) - 2} other functions"]
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return f"{text}{', in' if phase is Phase.INFERENCE else ' in'} {listed}"


def _count(n: int) -> str:
    return _NUMBER_WORDS.get(n, str(n))


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def crash_sentence(findings: Iterable[Finding], files: int) -> str:
    """"2 errors will crash this run: one at the first training step, one after the first
    epoch in `evaluate()`." from the error findings (parse errors aside), grouped by when they
    crash, in ranked order."""
    errors = [f for f in findings if f.severity is Severity.ERROR and f.code != _PARSE_ERROR]
    if not errors:
        return ""
    groups: dict[Phase, list[Finding]] = {}
    for finding in errors:
        groups.setdefault(finding.phase, []).append(finding)
    parts = [f"{_count(len(group))} {when(phase, (f.context for f in group))}" for phase, group in groups.items()]
    likely = sum(1 for f in errors if f.confidence is Confidence.LIKELY)
    subject = _plural(len(errors), "error")
    where = "this run" if files <= 1 else "these programs"
    if files > 1:
        subject += f" in {files} files"
    if likely == len(errors):
        verb, qualifier = "can crash", ""
    else:
        verb, qualifier = "will crash", (f" ({likely} only on some paths)" if likely else "")
    if len(errors) == 1:
        (group,) = groups.items()
        return f"{subject} {verb} {where} {when(group[0], (f.context for f in group[1]))}"
    return f"{subject} {verb} {where}{qualifier}: {', '.join(parts)}"


def header_lines(result: "RunResult") -> list[str]:
    """The one or two lines above the findings."""
    findings = result.findings
    files = result.files_with_findings
    crash = crash_sentence(findings, len({f.path for f in findings if f.severity is Severity.ERROR
                                          and f.code != _PARSE_ERROR}))
    parse_errors = sum(1 for f in findings if f.code == _PARSE_ERROR)
    others = [f for f in findings if f.severity is not Severity.ERROR]
    lines = []
    if crash:
        first = f"devlint: {crash}."
        if parse_errors:
            first += f" {_plural(parse_errors, 'file')} could not be parsed."
        lines.append(first)
        if others:
            counts = severity_counts(SimpleNamespace(findings=others))  # type: ignore[arg-type]
            lines.append(f"Also {', '.join(counts)}. Most urgent first.")
    else:
        counts = severity_counts(result)
        lines.append(f"devlint: {', '.join(counts)} in {_plural(files, 'file')}, most urgent first")
    return lines


# --- one finding -----------------------------------------------------------------------------


def _split(message: str) -> list[str]:
    """The message cut into clauses at its top-level joints: before ", but ...", after
    "...: this crashes" / "; this crashes", and between sentences. Text inside backticks or
    brackets is never cut; the words are unchanged."""
    clauses: list[str] = []
    start = 0
    depth = 0
    quoted = False
    i = 0
    n = len(message)
    while i < n:
        ch = message[i]
        if ch == "`":
            quoted = not quoted
        elif not quoted and ch in "([{":
            depth += 1
        elif not quoted and ch in ")]}":
            depth = max(0, depth - 1)
        elif not quoted and depth == 0:
            rest = message[i:]
            cut = None
            if rest.startswith(", but "):
                cut = (i + 1, i + 2)  # keep the comma, start the next clause at "but"
            elif rest[:2] in (": ", "; ") and rest[2:].startswith("this crashes"):
                cut = (i + 1, i + 2)
            elif ch in ".!?" and rest[1:2] == " " and (rest[2:3].isupper() or rest[2:3] == "`"):
                cut = (i + 1, i + 2)
            if cut is not None:
                clauses.append(message[start:cut[0]].strip())
                start = cut[1]
                i = cut[1]
                continue
        i += 1
    tail = message[start:].strip()
    if tail:
        clauses.append(tail)
    return [c for c in clauses if c]


def _same_text(a: str, b: str) -> bool:
    def norm(text: str) -> str:
        return " ".join(text.split()).rstrip(" .").lower()

    return norm(a) == norm(b)


def message_clauses(finding: Finding) -> list[str]:
    """The message, one clause a line, without a closing sentence that only repeats the fix
    (the fix line says it)."""
    message = " ".join(finding.message.split())
    clauses = _split(message)
    if finding.fix is not None and len(clauses) > 1 and _same_text(clauses[-1], finding.fix.description):
        clauses.pop()
    return clauses


def _headline(finding: Finding, first_clause: str, Text) -> "object":
    where = location(finding.path, finding.line, finding.column, finding.cell)
    line = Text(where, style="bold")
    line.append(" ")
    line.append(finding.code, style=_SEVERITY_STYLE.get(finding.severity.value, "bold"))
    line.append(f" [{finding.severity.value}] ", style=_SEVERITY_STYLE.get(finding.severity.value, ""))
    line.append(first_clause)
    return line


def _excerpt(finding: Finding, unit: "SourceUnit | None", Text) -> list:
    """Numbered source lines around the finding, with a caret line under a one-line span."""
    if unit is None or not unit.ok:
        return []
    lines = unit.lines(finding.cell)
    if not lines or not 1 <= finding.line <= len(lines):
        return []
    last = max(finding.line, min(finding.end_line, finding.line + _MAX_SPAN - 1, len(lines)))
    first_shown = max(1, finding.line - _CONTEXT)
    last_shown = min(len(lines), last + _CONTEXT)
    width = len(str(last_shown))
    out = []
    for number in range(first_shown, last_shown + 1):
        reported = finding.line <= number <= last
        gutter = Text(f"  {'>' if reported else ' '} {number:>{width}} | ", style="cyan" if reported else "dim")
        gutter.append(lines[number - 1].expandtabs(), style="" if reported else "dim")
        out.append(gutter)
        if number == finding.line and finding.end_line == finding.line:
            source = lines[number - 1]
            start = len(source[: max(finding.column - 1, 0)].expandtabs())
            end = len(source[: max(finding.end_column - 1, finding.column)].expandtabs())
            carets = Text(f"    {' ' * width} | " + " " * start, style="dim")
            carets.append("^" * max(1, end - start), style=_SEVERITY_STYLE.get(finding.severity.value, "bold"))
            out.append(carets)
    return out


def _evidence_notes(finding: Finding, Text) -> list:
    """The finding's evidence steps, numbered, under the excerpt: `1. line 7: ...`; a step in
    another file names it. Nothing for a finding without evidence."""
    out = []
    for number, step in enumerate(finding.evidence, start=1):
        note = Text(f"    {number}. ", style="bold")
        note.append(f"{step_where(step, finding)}: ", style="cyan")
        note.append(" ".join(step.message.split()))
        out.append(note)
    return out
