"""Shared fixtures: a scratch project folder, a CLI runner, and a stand-in engine.

The stand-in engine (`fake_engine`) lets the command-line shell (discovery, configuration,
suppression, ranking, reporters, exit codes) be tested on its own terms: it reports a finding
wherever a line calls `boom101()` / `boom107()` / `boom201()` / `boom301()`, and DEV000 for a
syntax error, against a small registry of rules with real codes. Tests that exercise the real
analysis do not use it.
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest
from click.testing import CliRunner

import devlint.engine
import devlint.rules
from devlint.findings import Confidence, Finding, Fix, Phase, Severity
from devlint.rules.base import FixSafety, Rule

# the programs under fixtures/ are data the tests check, never tests themselves (a fixture
# project's own unit tests are named test_*.py, as real ones are)
collect_ignore_glob = ["fixtures/*"]


@dataclass
class Project:
    """A scratch folder that is also the current directory."""

    root: Path

    def write(self, rel: str, content: str | bytes = "", *, dedent: bool = True) -> Path:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(textwrap.dedent(content) if dedent else content, encoding="utf-8")
        return path


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Project:
    root = tmp_path / "proj"
    root.mkdir()
    monkeypatch.chdir(root)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    return Project(root)


@dataclass
class Outcome:
    exit_code: int
    stdout: str
    stderr: str


@pytest.fixture
def invoke() -> Callable[..., Outcome]:
    """Run `devlint ARGS...` in-process, through the same exit-code mapping as the console script."""
    from devlint.cli import cli

    def run(*args: str, input: str | bytes | None = None) -> Outcome:
        result = CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)
        return Outcome(result.exit_code, result.stdout, result.stderr)

    return run


# --- the stand-in engine -------------------------------------------------------------------

_FAKE_RULES = {
    "DEV101": ("unmoved-input", Severity.ERROR, True),
    "DEV107": ("discarded-to", Severity.ERROR, True),
    "DEV201": ("load-without-map-location", Severity.WARNING, True),
    "DEV301": ("non-blocking-without-pinning", Severity.INFO, False),
}
_BOOM = re.compile(r"boom(\d{3})\((?P<arg>[a-z]*)\)")


def fake_rules() -> tuple[Rule, ...]:
    from devlint.rules.parse_error import rule as parse_error

    made = [
        Rule(
            code=code,
            name=name,
            severity=severity,
            summary=f"summary of {name}",
            why=f"why {name} crashes",
            bad="bad()",
            good="good()",
            fix=FixSafety.SAFE if code == "DEV107" else FixSafety.NONE,
            default_enabled=default,
        )
        for code, (name, severity, default) in _FAKE_RULES.items()
    ]
    return tuple(sorted([parse_error, *made], key=lambda r: r.code))


def fake_check_text(text: str, path: str, *, enabled=None, project=None, **helpers) -> list[Finding]:
    """Findings at every `boomNNN(phase)` call; DEV000 for a syntax error."""
    try:
        ast.parse(text)
    except SyntaxError as exc:
        line = exc.lineno or 1
        return [
            Finding("DEV000", "parse-error", Severity.ERROR, path, line, exc.offset or 1, line, exc.offset or 1,
                    f"syntax error: {exc.msg}")
        ]
    findings = []
    for number, line in enumerate(text.splitlines(), start=1):
        for match in _BOOM.finditer(line):
            code = f"DEV{match.group(1)}"
            if enabled is not None and code not in enabled:
                continue
            name, severity, _ = _FAKE_RULES[code]
            phase = Phase(match.group("arg")) if match.group("arg") else Phase.TRAINING
            fix = Fix("assign the moved tensor", safe=True) if code == "DEV107" else None
            findings.append(
                Finding(
                    code=code,
                    name=name,
                    severity=severity,
                    path=path,
                    line=number,
                    column=match.start() + 1,
                    end_line=number,
                    end_column=match.end() + 1,
                    message=f"{name} here",
                    confidence=Confidence.DEFINITE,
                    phase=phase,
                    fix=fix,
                )
            )
    return findings


@pytest.fixture
def fake_registry(monkeypatch: pytest.MonkeyPatch) -> tuple[Rule, ...]:
    rules = fake_rules()
    monkeypatch.setattr(devlint.rules, "all_rules", lambda: rules)
    return rules


@pytest.fixture
def fake_engine(monkeypatch: pytest.MonkeyPatch, fake_registry) -> Callable[..., list[Finding]]:
    monkeypatch.setattr(devlint.engine, "check_text", fake_check_text)
    return fake_check_text



# --- saying what was skipped ------------------------------------------------------------------


def _torch_missing() -> bool:
    import importlib.util

    return importlib.util.find_spec("torch") is None


def pytest_terminal_summary(terminalreporter, exitstatus: int, config) -> None:  # type: ignore[no-untyped-def]
    """Without torch the `devlint run` tests and the simulated-CUDA ground truth skip: say so
    at the end of every run (even under -q), so a green run does not look complete when it is not."""
    if not _torch_missing():
        return
    skipped = terminalreporter.stats.get("skipped", [])
    torch_skips = [report for report in skipped if "torch" in str(getattr(report, "longrepr", ""))]
    if torch_skips:
        terminalreporter.write_line(
            f"devlint: {len(torch_skips)} test module{'s' if len(torch_skips) != 1 else ''} skipped: torch is "
            "not installed here. They test `devlint run` and the simulated-CUDA ground truth; install "
            "torch (and numpy) to run them. `devlint check` itself never needs torch.", yellow=True)
