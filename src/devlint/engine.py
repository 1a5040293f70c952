"""One file in, findings out: parse, analyse, run the enabled rules.

This is the unit of work a worker process runs; it takes and returns plain data.
"""

from __future__ import annotations

import ast
import re
import sys
import warnings

import libcst as cst

from pathlib import Path

from devlint.analysis.driver import Analysis
from devlint.analysis.names import collect_imports
from devlint.analysis.program import Program
from devlint.findings import Confidence, Evidence, Finding, Phase, make_finding
from devlint.limits import nesting_problem, size_problem
from devlint.parsing import parse_module
from devlint.prefilter import compiles, needs_analysis
from devlint.project import ProjectIndex, earlier_parse, index_for, share_parse
from devlint.rules import all_rules
from devlint.rules.base import Report, Rule
from devlint.rules.parse_error import finding as parse_error_finding


def parse_error(path: str, message: str, line: int = 1, column: int = 1) -> Finding:
    return parse_error_finding(path, message, line, column)


_LAST_NESTING: list = [None, None]  # (the text last checked, its problem): check_text then parse ask twice


def _nesting_error(text: str, path: str) -> Finding | None:
    if _LAST_NESTING[0] is text:
        nested = _LAST_NESTING[1]
    else:
        nested = nesting_problem(text)  # libcst's native parser would crash or take minutes
        _LAST_NESTING[:] = [text, nested]
    if nested is None:
        return None
    return parse_error(path, f"cannot parse this file: {nested[0]} (nothing in it was checked)", nested[1])


def parse(text: str, path: str) -> cst.Module | Finding:
    """The libcst module, or a DEV000 finding that says why it could not be parsed."""
    nested = _nesting_error(text, path)
    if nested is not None:
        return nested
    try:
        module = parse_module(text, freeze=True)
    except cst.ParserSyntaxError as exc:
        python_says = _python_syntax_error(text)
        if python_says is not None:  # CPython's wording names the problem ("Missing parentheses ...")
            message, line, column = python_says
            return parse_error(path, f"cannot parse this file: {message} (nothing in it was checked)", line, column)
        return parse_error(path, f"cannot parse this file: {exc.message} (nothing in it was checked)",
                           max(exc.raw_line, 1), max(exc.raw_column, 0) + 1)
    except RecursionError:
        return parse_error(path, "cannot parse this file: it is nested too deeply (nothing in it was checked)")
    except Exception as exc:  # libcst raises a few other error types on odd input
        return parse_error(path, f"cannot parse this file: {exc} (nothing in it was checked)")
    if _PYTHON2.search(text):  # libcst reads `except E, e:`; Python 3 does not
        python_says = _python_syntax_error(text)
        if python_says is not None:
            message, line, column = python_says
            return parse_error(path, f"cannot parse this file: {message} (nothing in it was checked)", line, column)
    return module


# a Python 2 statement that libcst parses as something else; CPython has the last word
_PYTHON2 = re.compile(r"^[ \t]*except[^:\n]*,[ \t]*\w+[ \t]*:", re.MULTILINE)


def _python_syntax_error(text: str) -> tuple[str, int, int] | None:
    """CPython's own syntax error for a text libcst rejected (None when CPython accepts it)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, "<devlint>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:
        message = exc.msg
        if "Missing parentheses in call to 'print'" in exc.msg or "Missing parentheses in call to 'exec'" in exc.msg \
                or (_PYTHON2.search(text) and "must be parenthesized" in exc.msg):
            message += "; this is Python 2 code, devlint reads Python 3"
        return message, max(exc.lineno or 1, 1), max(exc.offset or 1, 1)
    except (ValueError, RecursionError, MemoryError, OverflowError):
        return None
    return None


def analyse(module: cst.Module, path: str, *, package: str = "",
            move_helpers: frozenset[str] = frozenset(),
            device_helpers: frozenset[str] = frozenset(),
            project: ProjectIndex | None = None, source: str | None = None,
            depends: set[str] | None = None, library_mode: bool = True) -> Program:
    """Run the placement analysis over one parsed file; `depends`, when given, receives the real
    paths of the other project files the analysis read."""
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
        depends.update(str(unit.path) for unit in analysis.reached.values())
    return Program(path, module, analysis.events,
                   {display: unit.module for display, unit in analysis.reached.items()},
                   frozenset(analysis.availability_conds))


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
) -> list[Finding]:
    """Analyse one Python source and return its findings (unsuppressed, unranked).

    `enabled` limits the rules that run (None: every rule). A source that cannot be parsed
    gives one DEV000 finding. Suppression comments, configuration and ranking are applied
    by the caller (devlint.runner). `library_mode` (the `library-mode` setting): code no call
    reaches runs on its caller's device.
    """
    too_large = size_problem(len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass")))
    if too_large is not None:  # parsing it would take minutes and gigabytes
        return [parse_error(path, f"cannot check this file: {too_large}; nothing in it was checked")] \
            if enabled is None or "DEV000" in enabled else []
    # devlint's own nesting limits first, before the prefilter asks CPython: whether CPython
    # compiles a deep expression depends on its version (3.10 takes 20,000 chained attributes,
    # 3.13 5,000 subscripts), and a DEV000 must not
    if enabled is None or "DEV000" in enabled:
        nested = _nesting_error(text, path)
        if nested is not None:
            return [nested]
    if not needs_analysis(text, move_helpers | device_helpers, library_mode) \
            and (enabled is not None and "DEV000" not in enabled or compiles(text, path)):
        # no device signal: nothing can be reported (devlint.prefilter says why), and CPython
        # parses it; when CPython cannot, libcst below decides, so DEV000 is always libcst's
        return []
    real_file = bool(path) and not path.startswith("<")
    # a file another checked file imported was parsed then (by the project index): reuse it
    parsed = (earlier_parse(Path(path), text) if real_file and not _PYTHON2.search(text) else None) \
        or parse(text, path)
    if isinstance(parsed, Finding):
        return [parsed] if enabled is None or "DEV000" in enabled else []
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
        return [parse_error(path, "the file is nested too deeply to analyse (nothing in it was checked)")]
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10000))
    try:
        findings = _run_rules(rules, program)
    except RecursionError:
        return [parse_error(path, "the file is nested too deeply to analyse (nothing in it was checked)")]
    finally:
        sys.setrecursionlimit(limit)
    findings.sort(key=lambda f: (f.line, f.column, f.code))
    return findings


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
