"""Baselines: accept today's findings, report only new ones.

A team that adopts devlint on a large code base records what it finds today
(`devlint check --write-baseline devlint-baseline.json`) and from then on fails CI only on new
findings (`--baseline devlint-baseline.json`). For that to work a recorded finding must still
match after unrelated edits move it, so a finding is keyed by what it is, not where it is:

- the file, relative to the folder of the baseline file (so the baseline works from any
  working directory and on any machine);
- the rule code;
- the enclosing function or class (`Finding.context`: "evaluate", "Net.forward", "<module>");
- the source of the reported statement, normalised: comments dropped, whitespace between
  tokens dropped (a reformatter that re-wraps a call changes nothing), string literals
  rewritten in one quoting style.

Line numbers take no part. Identical keys are counted: a baseline that holds two findings with
one key silences two, and a third copy of the same statement is new.
"""

from __future__ import annotations

import ast
import io
import json
import os
import tokenize
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable

from devlint.atomic import write_atomically
from devlint.findings import Finding

if TYPE_CHECKING:  # pragma: no cover
    from devlint.runner import RunResult
    from devlint.source import SourceUnit

__all__ = [
    "BaselineError",
    "Baseline",
    "finding_key",
    "normalise_statement",
    "statement_source",
    "write_baseline",
    "load_baseline",
    "apply_baseline",
    "new_findings",
]

FORMAT_VERSION = 1
UNBASELINED = "DEV000"
_SKIP_TOKENS = frozenset({tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                          tokenize.ENDMARKER})
_CLOSERS = frozenset({")", "]", "}"})

Key = tuple[str, str, str, str]  # (path, code, context, statement)


class BaselineError(Exception):
    """The baseline file cannot be read or is not a devlint baseline (a usage error, exit 2)."""


def statement_source(finding: Finding, unit: "SourceUnit | None") -> str:
    """The source lines of the statement that holds `finding` (its reported lines when the
    statement is unknown); "" when the file's text is not available."""
    if unit is None or not unit.ok:
        return ""
    lines = unit.lines(finding.cell)
    first, last = finding.statement_lines or (finding.line, finding.end_line)
    first = max(1, min(first, finding.line))
    last = max(last, first)
    if first > len(lines):
        return ""
    return "\n".join(lines[first - 1 : last])


def _word(text: str) -> bool:
    return bool(text) and (text[0].isalnum() or text[0] == "_" or ord(text[0]) > 127)


def _string(token: str) -> str:
    """One quoting style for plain string literals, so `'cuda'` and `"cuda"` key alike."""
    try:
        value = ast.literal_eval(token)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return token
    return repr(value) if isinstance(value, (str, bytes)) else token


def normalise_statement(text: str) -> str:
    """The statement's tokens without comments and without layout.

    Two pieces of code that differ only in indentation, line breaks, spacing, comments, a
    trailing comma or quote style normalise to the same text.
    """
    source = "\n".join(line.strip() for line in text.splitlines())
    tokens: list[str] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(source + "\n").readline):
            if token.type in _SKIP_TOKENS:
                continue
            tokens.append(_string(token.string) if token.type == tokenize.STRING else token.string)
    except (tokenize.TokenError, SyntaxError, ValueError):
        # an unbalanced fragment (a compound statement's header): keep what was read, else the text
        if not tokens:
            return " ".join(text.split())
    out: list[str] = []
    for index, piece in enumerate(tokens):
        if piece == "," and index + 1 < len(tokens) and tokens[index + 1] in _CLOSERS:
            continue  # a trailing comma is layout
        if out and _word(out[-1][-1:]) and _word(piece):
            out.append(" ")
        out.append(piece)
    return "".join(out)


def _relative(path: str, root: str) -> str:
    absolute = os.path.abspath(path)
    try:
        relative = os.path.relpath(absolute, root)
    except ValueError:  # another drive on Windows
        relative = absolute
    return relative.replace(os.sep, "/")


def finding_key(finding: Finding, unit: "SourceUnit | None", root: str) -> Key:
    """What a finding is, independent of where it sits in its file today."""
    return (
        _relative(finding.path, root),
        finding.code,
        finding.context,
        normalise_statement(statement_source(finding, unit)),
    )


def _keys(result: "RunResult", root: str) -> list[tuple[Key, Finding]]:
    """Each baselinable finding with its key. DEV000 never is: a file that cannot be parsed
    must not pass CI because it could not be parsed yesterday either."""
    from devlint.source import read_source

    units = dict(result.sources)
    out = []
    for finding in result.findings:
        if finding.code == UNBASELINED:
            continue
        unit = units.get(finding.path)
        if unit is None:
            unit = units[finding.path] = read_source(finding.path)
        out.append((finding_key(finding, unit, root), finding))
    return out


@dataclass(frozen=True)
class Baseline:
    """Recorded findings: how many of each key were accepted."""

    counts: Counter
    root: str  # the folder the recorded paths are relative to

    def __len__(self) -> int:
        return sum(self.counts.values())


def _root_of(file: str) -> str:
    return os.path.dirname(os.path.abspath(file))


def write_baseline(file: str, result: "RunResult", checked: Iterable[str] | None = None) -> tuple[int, int]:
    """Record every finding of `result` in `file`: (the number recorded, the number kept).

    With `checked` (the files this run checked), an existing baseline keeps its entries for
    files that were not checked and still exist: `--write-baseline FILE some.py` updates the
    entries of some.py and leaves every other file's as they were."""
    root = _root_of(file)
    counts = Counter(key for key, _ in _keys(result, root))
    kept = _kept_entries(file, root, checked) if checked is not None else Counter()
    recorded = sum(counts.values())
    counts.update(kept)
    entries = [
        {"path": path, "code": code, "context": context, "statement": statement, "count": count}
        for (path, code, context, statement), count in sorted(counts.items())
    ]
    document = {"devlint-baseline": FORMAT_VERSION, "findings": entries}
    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    try:
        os.makedirs(os.path.dirname(os.path.abspath(file)), exist_ok=True)
        write_atomically(file, text.encode("utf-8"))
    except OSError as exc:
        raise BaselineError(f"cannot write baseline {file}: {exc.strerror or exc}") from None
    return recorded, sum(kept.values())


def _kept_entries(file: str, root: str, checked: Iterable[str]) -> Counter:
    """The entries of the baseline already in `file` for files not in `checked` that exist."""
    if not os.path.exists(file):
        return Counter()
    previous = load_baseline(file)
    done = {_relative(path, root) for path in checked}
    return Counter({key: count for key, count in previous.counts.items()
                    if key[0] not in done and os.path.exists(os.path.join(root, key[0]))})


def load_baseline(file: str) -> Baseline:
    """Read a baseline written by `write_baseline`; BaselineError says what is wrong."""
    try:
        with open(file, encoding="utf-8") as handle:
            document = json.load(handle)
    except OSError as exc:
        raise BaselineError(f"cannot read baseline {file}: {exc.strerror or exc}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise BaselineError(f"baseline {file} is not valid JSON: {exc}") from None
    if not isinstance(document, dict) or document.get("devlint-baseline") != FORMAT_VERSION:
        raise BaselineError(
            f"{file} is not a devlint baseline (version {FORMAT_VERSION}); write one with --write-baseline"
        )
    entries = document.get("findings")
    if not isinstance(entries, list):
        raise BaselineError(f"baseline {file}: `findings` must be a list")
    counts: Counter = Counter()
    fields = ("path", "code", "context", "statement")
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict) or not all(isinstance(entry.get(name), str) for name in fields):
            raise BaselineError(f"baseline {file}: entry {index + 1} needs string fields {', '.join(fields)}")
        count = entry.get("count", 1)
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise BaselineError(f"baseline {file}: entry {index + 1} has an invalid count")
        counts[tuple(entry[name] for name in fields)] += count
    return Baseline(counts=counts, root=_root_of(file))


def new_findings(result: "RunResult", baseline: Baseline) -> list[Finding]:
    """The findings of `result` that `baseline` does not account for, in their ranked order.

    Of several findings with one key, the first ones in file order are taken as the recorded
    ones, so a copy pasted below a known finding is the one reported.
    """
    keyed = _keys(result, baseline.root)
    budget = Counter(baseline.counts)
    known: set[int] = set()
    for key, finding in sorted(keyed, key=lambda pair: _position(pair[1])):
        if budget[key] > 0:
            budget[key] -= 1
            known.add(id(finding))
    return [finding for finding in result.findings if id(finding) not in known]


def _position(finding: Finding) -> tuple:
    return (finding.path, finding.cell or 0, finding.line, finding.column, finding.code)


def apply_baseline(result: "RunResult", baseline: Baseline) -> "RunResult":
    """`result` with only the new findings, ranked again from 1."""
    from dataclasses import replace

    from devlint.rank import rank_findings

    kept = new_findings(result, baseline)
    paths = {finding.path for finding in kept}
    sources = {path: unit for path, unit in result.sources.items() if path in paths}
    return replace(result, findings=rank_findings(kept), sources=sources)
