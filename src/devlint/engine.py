"""One file in, findings out: parse, analyse, run the enabled rules.

This is the unit of work a worker process runs; it takes and returns plain data. Under it,
the process keeps parses, project indexes and the facts of parses for the next files of the
run (docs/architecture.md, "State a process keeps").
"""

from __future__ import annotations

import sys

import libcst as cst

from pathlib import Path

from devlint.analysis.driver import Analysis
from devlint.analysis.names import collect_imports
from devlint.analysis.program import Program
from devlint.findings import Confidence, Evidence, Finding, Phase, make_finding
from devlint.limits import nesting_problem, size_problem
from devlint.parsing import parse_module
from devlint.prefilter import needs_analysis
from devlint.project import ProjectIndex, earlier_parse, index_for, share_parse
from devlint.rules import all_rules
from devlint.rules.base import Report, Rule
from devlint.rules.parse_error import finding as parse_error_finding
from devlint.validity import syntax_problem


def parse_error(path: str, message: str, line: int = 1, column: int = 1) -> Finding:
    return parse_error_finding(path, message, line, column)


def _limit_error(text: str, path: str) -> Finding | None:
    """DEV000 for a valid text beyond devlint's own limits (libcst's native parser would crash
    on it or take minutes; devlint.limits)."""
    nested = nesting_problem(text)
    if nested is None:
        return None
    return parse_error(path, f"cannot check this file: {nested[0]} (nothing in it was checked)", nested[1])


def _newer_syntax(text: str, target: tuple[int, int] | None) -> bool:
    """The code is written for a Python newer than the one running devlint, and libcst's grammar
    (which follows the newer releases) accepts it: its syntax error here says nothing about it."""
    if target is None or target <= sys.version_info[:2]:
        return False
    try:
        parse_module(text)
    except Exception:  # noqa: BLE001 - libcst's grammar refuses it too: the interpreter's verdict stands
        return False
    return True


def python_error(text: str, path: str) -> Finding | None:
    """DEV000 where CPython itself refuses the text (devlint.validity), else None."""
    problem = syntax_problem(text, path)
    if problem is None:
        return None
    return parse_error(path, f"cannot parse this file: {problem.message} (nothing in it was checked)",
                       problem.line, problem.column)


def parse(text: str, path: str) -> cst.Module | None:
    """libcst's tree of a text CPython compiles and devlint's limits allow, or None when libcst
    cannot build one. That is no DEV000 (Python runs the file; devlint.validity lists such
    texts): the file is left unanalysed and nothing is claimed about it."""
    try:
        return parse_module(text, freeze=True)
    except (cst.ParserSyntaxError, RecursionError, MemoryError, ValueError, TypeError):
        return None


def analyse(module: cst.Module, path: str, *, package: str = "",
            move_helpers: frozenset[str] = frozenset(),
            device_helpers: frozenset[str] = frozenset(),
            project: ProjectIndex | None = None, source: str | None = None,
            depends: set[str] | None = None, library_mode: bool = True) -> Program:
    """Run the placement analysis over one parsed file; `depends`, when given, receives the real
    paths of the other project files the analysis read (with the digest of what was read)."""
    if project is not None and path and not package:
        try:
            package = project.module_name(Path(path))[1]
        except (ValueError, OSError):
            package = ""
    imports = collect_imports(module, package)
    analysis = Analysis(module, imports, path=path, move_helpers=move_helpers,
                        device_helpers=device_helpers, project=project, source=source, library_mode=library_mode)
    limit = sys.getrecursionlimit()
    if limit < 10000:
        sys.setrecursionlimit(10000)
    try:
        analysis.run()
    finally:
        sys.setrecursionlimit(limit)
    if depends is not None:
        # "path\0digest" when the bytes the analysis read are known (devlint.cache records that
        # digest, not the file's digest at the end of the run: the file may be edited meanwhile)
        depends.update(str(unit.path) if unit.digest is None else f"{unit.path}\0{unit.digest}"
                       for unit in analysis.reached.values())
    return Program(path, module, analysis.events,
                   {display: unit.module for display, unit in analysis.reached.items()},
                   frozenset(analysis.availability_conds), source=source)


def check_text(
    text: str,
    path: str,
    *,
    enabled: frozenset[str] | None = None,
    project: ProjectIndex | None = None,
    move_helpers: frozenset[str] = frozenset(),
    device_helpers: frozenset[str] = frozenset(),
    depends: set[str] | None = None,
    library_mode: bool = True,
    target_version: tuple[int, int] | None = None,
) -> list[Finding]:
    """Analyse one Python source and return its findings (unsuppressed, unranked).

    `enabled` limits the rules that run (None: every rule). A source that cannot be parsed
    gives one DEV000 finding. Suppression comments, configuration and ranking are applied
    by the caller (devlint.runner). `library_mode` (the `library-mode` setting): code no call
    reaches runs on its caller's device. `target_version` (the `target-version` setting): code
    written for a Python newer than this one is judged by libcst's grammar where this
    interpreter's compiler refuses it.
    """
    dev000 = enabled is None or "DEV000" in enabled
    too_large = size_problem(len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass")))
    if too_large is not None:  # parsing it would take minutes and gigabytes
        return [parse_error(path, f"cannot check this file: {too_large}; nothing in it was checked")] \
            if dev000 else []
    # CPython decides what is Python, at its own position (devlint.validity); then devlint's
    # limits, which only a valid text reaches (its DEV000 says it is devlint's limit)
    invalid = python_error(text, path)
    if invalid is not None and not _newer_syntax(text, target_version):
        return [invalid] if dev000 else []
    beyond = _limit_error(text, path)
    if beyond is not None:
        return [beyond] if dev000 else []
    if not needs_analysis(text, move_helpers | device_helpers, library_mode):
        return []  # no device signal: nothing can be reported (devlint.prefilter says why)
    real_file = bool(path) and not path.startswith("<")
    # a file another checked file imported was parsed then (by the project index): reuse it
    parsed = (earlier_parse(Path(path), text) if real_file else None) or parse(text, path)
    if parsed is None:
        return []
    rules = [r for r in all_rules() if r.checks and (enabled is None or r.code in enabled)]
    if not rules:
        return []
    if project is None and real_file:
        project = index_for(path)
    if real_file:
        share_parse(Path(path), text, parsed)
    try:
        # `depends`: the other project files this result depends on (the result cache)
        program = analyse(parsed, path, move_helpers=move_helpers, device_helpers=device_helpers,
                          project=project, source=text, depends=depends, library_mode=library_mode)
    except RecursionError:
        return [parse_error(path, _TOO_DEEP)]
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10000))
    try:
        findings = _run_rules(rules, program)
    except RecursionError:
        return [parse_error(path, _TOO_DEEP)]
    finally:
        sys.setrecursionlimit(limit)
    findings.sort(key=lambda f: (f.line, f.column, f.code))
    return findings


_TOO_DEEP = "cannot check this file: it nests deeper than devlint analyses (nothing in it was checked)"


def _run_rules(rules: list, program: Program) -> list[Finding]:
    """The enabled rules' findings, one per (code, file, line); positions (deeply recursive
    in libcst for deeply nested code) are resolved here, only for files with a report."""
    findings: list[Finding] = []
    seen: set[tuple[str, str, int, int]] = set()
    for rule in rules:
        for report in rule.run(program):
            finding = finding_of(program, rule, report)
            key = (rule.code, finding.path, finding.line, 0 if rule.one_per_line else finding.column)
            if key in seen:
                continue
            seen.add(key)
            findings.append(finding)
    return findings


def finding_of(program: Program, rule: Rule, report: Report) -> Finding:
    """A rule's report as a finding: where it is, the statement around it (suppression comments
    anywhere on it count), and when the crash would happen."""
    path, span = program.locate(report.node)
    line, _, end_line, _ = span
    statement_lines = None
    ctx = report.ctx
    stmt = ctx.statement if ctx is not None else None
    if isinstance(stmt, cst.SimpleStatementLine):
        s_path, (s_line, _, s_end, _) = program.locate(stmt)
        if s_path == path and s_line <= line <= s_end:
            statement_lines = (s_line, s_end)
    return make_finding(
        rule.code, rule.name, rule.severity, path, span, report.message,
        confidence=report.confidence if isinstance(report.confidence, Confidence) else Confidence.DEFINITE,
        phase=program.phase(ctx) if ctx is not None else Phase.UNKNOWN,
        statement_lines=statement_lines or (line, end_line),
        context=ctx.function if ctx is not None else "",
        fix=report.fix,
        evidence=evidence_of(program, report),
    )


def evidence_of(program: Program, report: Report) -> tuple[Evidence, ...]:
    """The report's steps placed in the source (a step in another project file names it); steps
    whose node is in no file the analysis read, and a second step at the same place (the move
    that is both the model's and the other side's), are left out."""
    steps: list[Evidence] = []
    places: set[tuple] = set()
    for step in report.evidence:
        found = program.find(step.node) if step.node is not None else None  # type: ignore[arg-type]
        if found is None:
            continue
        if found not in places:
            places.add(found)
            path, (line, column, _, _) = found
            steps.append(Evidence(path, line, column, step.message))
    return tuple(steps)
