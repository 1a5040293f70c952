"""The command-line contract (cli.md) with a stand-in engine: exit codes, formats, settings.

`fake_engine` (conftest) reports a finding wherever a line calls `boomNNN()`, so these tests
pin down the shell around the analysis; tests/test_cli_engine.py runs the real analysis.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap

import jsonschema
import pytest

import devlint.cli
import devlint.engine

pytestmark = pytest.mark.usefixtures("fake_engine")

JSON_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["version", "files_checked", "findings"],
    "properties": {
        "version": {"type": "string"},
        "files_checked": {"type": "integer", "minimum": 0},
        "findings": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": [
                    "code", "name", "severity", "path", "line", "column", "end_line", "end_column",
                    "message", "rank", "fixable", "confidence", "phase", "evidence",
                ],
                "properties": {
                    "code": {"type": "string", "pattern": "^DEV[0-9]{3}$"},
                    "name": {"type": "string"},
                    "severity": {"enum": ["error", "warning", "info"]},
                    "path": {"type": "string"},
                    "cell": {"type": "integer", "minimum": 1},
                    "line": {"type": "integer", "minimum": 1},
                    "column": {"type": "integer", "minimum": 1},
                    "end_line": {"type": "integer", "minimum": 1},
                    "end_column": {"type": "integer", "minimum": 1},
                    "message": {"type": "string"},
                    "rank": {"type": "integer", "minimum": 1},
                    "fixable": {"type": "boolean"},
                    "confidence": {"enum": ["definite", "likely"]},
                    "phase": {"enum": ["module", "training", "evaluation", "checkpoint", "inference", "unknown"]},
                    # beyond cli.md, as Ruff has them: the rule's page (docs.rule_url: a URL, or the page's path in
                    # devlint's repository), and the fix with its applicability
                    "url": {"type": "string", "pattern": "^((https?|file)://|docs/rules/)"},
                    "fix": {
                        "oneOf": [
                            {"type": "null"},
                            {
                                "type": "object",
                                "additionalProperties": False,
                                "required": ["applicability", "message", "edits"],
                                "properties": {
                                    "applicability": {"enum": ["safe", "unsafe"]},
                                    "message": {"type": "string"},
                                    "edits": {"type": "array"},
                                },
                            },
                        ],
                    },
                    "evidence": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "additionalProperties": False,
                            "required": ["path", "line", "column", "message"],
                            "properties": {
                                "path": {"type": "string"},
                                "cell": {"type": "integer", "minimum": 1},
                                "line": {"type": "integer", "minimum": 1},
                                "column": {"type": "integer", "minimum": 1},
                                "message": {"type": "string"},
                            },
                        },
                    },
                },
            },
        },
    },
}


def notebook(*sources: str) -> str:
    return json.dumps(
        {
            "nbformat": 4,
            "nbformat_minor": 5,
            "metadata": {},
            "cells": [
                {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": s}
                for s in sources
            ],
        }
    )


# --- commands without a run -------------------------------------------------------------------


def test_no_command_prints_help(invoke):
    out = invoke()
    assert out.exit_code == 0
    for command in ("check", "rules", "explain", "run"):
        assert command in out.stdout


def test_version(invoke):
    out = invoke("--version")
    assert out.exit_code == 0
    assert out.stdout.strip() == f"devlint {devlint.__version__}"


def test_rules_table(invoke):
    out = invoke("rules")
    assert out.exit_code == 0
    lines = out.stdout.splitlines()
    assert lines[0].split() == ["code", "name", "severity", "default"]
    assert lines[1].split() == ["DEV000", "parse-error", "error", "on"]
    assert "DEV301  non-blocking-without-pinning  info      off" in out.stdout


def test_explain(invoke):
    out = invoke("explain", "dev107")
    assert out.exit_code == 0
    assert out.stdout.startswith("DEV107 discarded-to (error, on by default)")
    for section in ("What it does", "Why it crashes", "Example", "Use instead", "Fix safety", "Known limits"):
        assert f"\n{section}\n" in out.stdout
    assert "Safe: `devlint check --fix` applies it" in out.stdout


def test_explain_unknown_code_is_a_usage_error(invoke):
    out = invoke("explain", "DEV999")
    assert out.exit_code == 2
    assert "unknown rule code 'DEV999'" in out.stderr


def test_run_without_the_simulator_explains_and_exits_2(invoke, monkeypatch):
    monkeypatch.setattr(devlint.cli, "SIMULATE_MODULE", "devlint._simulate_missing_for_tests")
    out = invoke("run", "train.py", "--epochs", "1")
    assert out.exit_code == 2
    assert "devlint run" in out.stderr and "not available" in out.stderr


def test_importing_the_cli_imports_neither_torch_nor_rich():
    code = "import sys, devlint.cli; print(sorted(m for m in ('torch', 'rich') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_json_output_does_not_import_rich(tmp_path):
    code = textwrap.dedent(
        f"""
        import sys
        from devlint.cli import cli
        code = cli.main(["check", "--format", "json", {str(tmp_path)!r}], standalone_mode=False)
        print(code, "rich" in sys.modules)
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split()[-2:] == ["0", "False"]


# --- exit codes -------------------------------------------------------------------------------


def test_clean_project_exits_0(project, invoke):
    project.write("train.py", "x = 1\n")
    out = invoke("check")
    assert out.exit_code == 0
    assert out.stdout == ""
    assert out.stderr.strip() == "All checks passed (1 file)."


def test_findings_exit_1(project, invoke):
    project.write("train.py", "boom107()\n")
    out = invoke("check", "--format", "concise")
    assert out.exit_code == 1
    assert out.stdout == "train.py:1:1: DEV107 [error] discarded-to here\n"
    assert out.stderr.strip() == "Found 1 error in 1 file."


def test_exit_zero(project, invoke):
    project.write("train.py", "boom107()\n")
    out = invoke("check", "--exit-zero")
    assert out.exit_code == 0
    assert "DEV107" in out.stdout


@pytest.mark.parametrize(
    ("fail_on", "expected"),
    [("error", 0), ("warning", 1), ("info", 1), ("never", 0), ("WARNING", 1)],
)
def test_fail_on_threshold(project, invoke, fail_on, expected):
    project.write("train.py", "boom201()\n")  # a warning
    assert invoke("check", "--fail-on", fail_on).exit_code == expected


def test_fail_on_from_config_and_overridden_on_the_command_line(project, invoke):
    project.write("pyproject.toml", "[tool.devlint]\nfail-on = 'error'\n")
    project.write("train.py", "boom201()\n")
    assert invoke("check").exit_code == 0
    assert invoke("check", "--fail-on", "warning").exit_code == 1


def test_info_findings_do_not_fail_by_default(project, invoke):
    project.write("train.py", "boom301()\n")
    out = invoke("check", "--extend-select", "DEV301")
    assert out.exit_code == 0
    assert "DEV301" in out.stdout
    assert out.stderr.strip() == "Found 1 info in 1 file."


@pytest.mark.parametrize(
    "args",
    [
        ["check", "--no-such-option"],
        ["check", "--format", "xml"],
        ["check", "--fail-on", "sometimes"],
        ["check", "--select", "DEV999"],
        ["check", "--ignore", "DEV1O1"],
        ["check", "-j", "0"],
        ["check", "-q", "-v"],
        ["nosuchcommand"],
        ["check", "--config", "missing.toml"],
    ],
)
def test_usage_errors_exit_2(project, invoke, args):
    project.write("train.py", "boom107()\n")
    out = invoke(*args)
    assert out.exit_code == 2, out.stderr
    assert out.stdout == ""


def test_unknown_code_names_the_option(project, invoke):
    out = invoke("check", "--select", "DEV107,DEV999")
    assert out.exit_code == 2
    assert "--select: unknown rule code or prefix 'DEV999'" in out.stderr


def test_missing_path_exits_2(project, invoke):
    project.write("a.py", "")
    out = invoke("check", "a.py", "nope/")
    assert out.exit_code == 2
    assert "path not found: nope/" in out.stderr


def test_bad_config_exits_2_naming_the_key(project, invoke):
    project.write("pyproject.toml", "[tool.devlint]\nselect = ['DEV107']\nfail_on = 'error'\n")
    project.write("train.py", "boom107()\n")
    out = invoke("check")
    assert out.exit_code == 2
    assert "pyproject.toml" in out.stderr and "fail_on" in out.stderr and "fail-on" in out.stderr


def test_bad_toml_exits_2(project, invoke):
    project.write("devlint.toml", "select = ['DEV107'\n")
    assert invoke("check").exit_code == 2


def test_internal_error_exits_3_and_asks_for_a_report(project, invoke, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("analysis fell over")

    monkeypatch.setattr(devlint.engine, "check_text", broken)
    project.write("train.py", "x = 1\n")
    out = invoke("check")
    assert out.exit_code == 3
    assert "internal error: RuntimeError: analysis fell over" in out.stderr
    assert "bug in devlint" in out.stderr and "report" in out.stderr
    assert "Traceback" not in out.stderr
    verbose = invoke("check", "-v")
    assert verbose.exit_code == 3
    assert "Traceback" in verbose.stderr and "analysis fell over" in verbose.stderr


def test_internal_error_wins_over_exit_zero(project, invoke, monkeypatch):
    monkeypatch.setattr(devlint.engine, "check_text", lambda *a, **k: 1 / 0)
    project.write("train.py", "x = 1\n")
    assert invoke("check", "--exit-zero").exit_code == 3


# --- what gets checked ------------------------------------------------------------------------


def test_empty_folder_is_quiet_and_passes(project, invoke):
    (project.root / "empty").mkdir()
    out = invoke("check", "empty")
    assert out.exit_code == 0
    assert out.stdout == ""
    quiet = invoke("check", "-q", "empty")
    assert (quiet.exit_code, quiet.stdout, quiet.stderr) == (0, "", "")


def test_syntax_error_file_among_good_ones(project, invoke):
    project.write("a.py", "boom107()\n")
    project.write("b.py", "def broken(:\n    pass\n")
    project.write("c.py", "x = 1\nboom101()\n")
    out = invoke("check", "--format", "concise")
    assert out.exit_code == 1
    lines = out.stdout.splitlines()
    assert any(line.startswith("b.py:1:") and "DEV000" in line for line in lines)
    assert "a.py:1:1: DEV107 [error] discarded-to here" in lines
    assert "c.py:2:1: DEV101 [error] unmoved-input here" in lines


def test_undecodable_file_is_dev000_and_others_are_still_checked(project, invoke):
    project.write("good.py", "boom107()\n")
    project.write("latin.py", b"x = 1\nname = 'caf\xe9'\n")
    out = invoke("check", "--format", "json")
    assert out.exit_code == 1
    document = json.loads(out.stdout)
    by_path = {f["path"]: f for f in document["findings"]}
    assert by_path["latin.py"]["code"] == "DEV000"
    assert by_path["latin.py"]["line"] == 2
    assert "utf-8" in by_path["latin.py"]["message"]
    assert by_path["good.py"]["code"] == "DEV107"
    assert document["files_checked"] == 2


def test_gitignored_files_are_not_checked(project, invoke):
    project.write(".gitignore", "generated/\n")
    project.write("generated/model.py", "boom107()\n")
    project.write("train.py", "x = 1\n")
    out = invoke("check")
    assert out.exit_code == 0
    assert out.stderr.strip() == "All checks passed (1 file)."


def test_config_exclude_and_explicit_files(project, invoke):
    project.write("pyproject.toml", "[tool.devlint]\nexclude = ['legacy/']\n")
    project.write("legacy/old.py", "boom107()\n")
    project.write("train.py", "x = 1\n")
    assert invoke("check").exit_code == 0
    # a file named on the command line is checked even when excluded
    assert invoke("check", "legacy/old.py").exit_code == 1


def test_config_is_found_from_the_first_path(project, invoke):
    project.write("sub/devlint.toml", "ignore = ['DEV107']\n")
    project.write("sub/train.py", "boom107()\n")
    assert invoke("check", "sub").exit_code == 0
    assert invoke("check", "sub", "--config", "sub/devlint.toml").exit_code == 0
    assert invoke("check", "sub/train.py", "--select", "DEV107").exit_code == 1


def test_select_and_ignore_options(project, invoke):
    project.write("train.py", "boom107()\nboom101()\nboom201()\n")

    def codes(*args: str) -> list[str]:
        out = invoke("check", "--format", "concise", *args)
        return sorted(line.split()[1] for line in out.stdout.splitlines())

    assert codes() == ["DEV101", "DEV107", "DEV201"]
    assert codes("--select", "DEV1") == ["DEV101", "DEV107"]
    assert codes("--select", "DEV1", "--ignore", "DEV107") == ["DEV101"]
    assert codes("--ignore", "DEV101,DEV107") == ["DEV201"]
    assert codes("--select", "dev107", "--select", "DEV201") == ["DEV107", "DEV201"]


def test_per_file_ignores(project, invoke):
    project.write("pyproject.toml", "[tool.devlint.per-file-ignores]\n'scripts/*' = ['DEV107']\n")
    project.write("scripts/demo.py", "boom107()\n")
    project.write("train.py", "boom107()\n")
    out = invoke("check", "--format", "concise")
    assert out.stdout == "train.py:1:1: DEV107 [error] discarded-to here\n"


def test_suppression_comments_end_to_end(project, invoke):
    project.write(
        "train.py",
        """
        boom107()  # noqa: DEV107
        boom101()  # noqa: DEV107
        boom201()  # devlint: ignore[DEV201]
        boom107(); boom101()  # noqa
        """,
    )
    out = invoke("check", "--format", "concise")
    assert out.stdout == "train.py:3:1: DEV101 [error] unmoved-input here\n"


def test_stdin_filename(project, invoke):
    project.write("pyproject.toml", "[tool.devlint.per-file-ignores]\n'scripts/*' = ['DEV101']\n")
    out = invoke("check", "--stdin-filename", "scripts/run.py", "--format", "concise", input="boom107()\nboom101()\n")
    assert out.exit_code == 1
    assert out.stdout == "scripts/run.py:1:1: DEV107 [error] discarded-to here\n"


# --- output formats ---------------------------------------------------------------------------


def test_json_format_matches_the_schema_and_is_ranked(project, invoke):
    project.write("a.py", "boom201()\nboom101(training)\n")
    project.write("b.py", "boom101(evaluation)\n")
    out = invoke("check", "--format", "json")
    assert out.exit_code == 1
    document = json.loads(out.stdout)  # stdout holds the JSON object and nothing else
    jsonschema.validate(document, JSON_SCHEMA)
    assert document["version"] == devlint.__version__
    assert document["files_checked"] == 2
    summary = [(f["rank"], f["path"], f["code"], f["phase"]) for f in document["findings"]]
    # errors first; among errors a crash after the first epoch outranks one at the first step
    assert summary == [
        (1, "b.py", "DEV101", "evaluation"),
        (2, "a.py", "DEV101", "training"),
        (3, "a.py", "DEV201", "training"),
    ]
    first = document["findings"][0]
    assert (first["line"], first["column"], first["end_line"], first["end_column"]) == (1, 1, 1, 20)
    assert first["fixable"] is False and first["confidence"] == "definite"
    assert "Found 2 errors, 1 warning in 2 files." in out.stderr


def test_json_with_no_findings(project, invoke):
    out = invoke("check", "--format", "json", "-q")
    assert out.exit_code == 0
    assert json.loads(out.stdout) == {"version": devlint.__version__, "files_checked": 0, "findings": []}
    assert out.stderr == ""


def test_notebook_findings_point_at_cells(project, invoke):
    project.write("nb.ipynb", notebook("%pip install torch\nimport torch\n", "x = 1\n\nboom107()\n"), dedent=False)
    concise = invoke("check", "--format", "concise")
    assert concise.stdout == "nb.ipynb:cell 2:3:1: DEV107 [error] discarded-to here\n"
    document = json.loads(invoke("check", "--format", "json").stdout)
    jsonschema.validate(document, JSON_SCHEMA)
    (only,) = document["findings"]
    assert (only["path"], only["cell"], only["line"]) == ("nb.ipynb", 2, 3)
    text = invoke("check").stdout
    assert "nb.ipynb:cell 2:3:1 DEV107 [error]" in text
    assert "> 3 | boom107()" in text


def test_text_format(project, invoke):
    project.write("train.py", "import torch\nx = 1\n# next\ny = boom107()\nz = 2\n")
    out = invoke("check")
    assert out.exit_code == 1
    assert "\x1b[" not in out.stdout  # no colour when stdout is not a terminal
    lines = out.stdout.splitlines()
    assert lines[0] == "devlint: 1 error will crash this run at the first training step."
    assert "train.py:4:5 DEV107 [error] discarded-to here" in lines
    start = lines.index("train.py:4:5 DEV107 [error] discarded-to here")
    assert lines[start + 1 : start + 5] == [
        "    3 | # next",
        "  > 4 | y = boom107()",
        "      |     ^^^^^^^^^",
        "    5 | z = 2",
    ]
    assert "fix (safe): assign the moved tensor" in lines[start + 5]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("no_color", "coloured"), [(None, True), ("1", False)])
def test_text_colour_only_on_a_terminal_without_no_color(project, monkeypatch, no_color, coloured):
    from devlint.config import Config
    from devlint.report import render
    from devlint.runner import CheckSettings, run_check
    from devlint.discover import discover
    from devlint.selection import resolve

    monkeypatch.setenv("TERM", "xterm-256color")
    if no_color is None:
        monkeypatch.delenv("NO_COLOR", raising=False)
    else:
        monkeypatch.setenv("NO_COLOR", no_color)
    project.write("train.py", "boom107()\n")
    result = run_check(discover(["."]), CheckSettings(enabled=resolve([]), config=Config()))
    terminal = _Terminal()
    render("text", result, terminal)
    assert ("\x1b[" in terminal.getvalue()) is coloured
    assert "DEV107" in terminal.getvalue()


def test_text_lines_are_not_wrapped(project, invoke):
    long_name = "a" * 150
    project.write("train.py", f"{long_name} = boom107()\n")
    out = invoke("check")
    assert f"  > 1 | {long_name} = boom107()" in out.stdout.splitlines()


def test_quiet_drops_the_summary_and_verbose_shows_progress(project, invoke):
    project.write("a.py", "boom107()\n")
    project.write("b.py", "x = 1\n")
    quiet = invoke("check", "-q", "--format", "concise")
    assert quiet.stderr == "" and quiet.stdout.count("\n") == 1
    verbose = invoke("check", "-v", "--format", "concise")
    assert "[1/2] a.py: 1 finding" in verbose.stderr
    assert "[2/2] b.py: ok" in verbose.stderr
    assert verbose.stdout == quiet.stdout


def test_jobs_and_no_cache_are_accepted(project, invoke):
    project.write("a.py", "boom107()\n")
    out = invoke("check", "-j", "4", "--no-cache", "--format", "concise")
    assert out.exit_code == 1 and "DEV107" in out.stdout


def test_console_script_entry_point(project):
    project.write("train.py", "x = 1\n")
    done = subprocess.run(
        [sys.executable, "-m", "devlint", "--version"], capture_output=True, text=True, cwd=project.root
    )
    assert done.returncode == 0 and done.stdout.strip() == f"devlint {devlint.__version__}"
    nope = subprocess.run(
        [sys.executable, "-m", "devlint", "check", "nope.py"], capture_output=True, text=True, cwd=project.root
    )
    assert nope.returncode == 2 and "path not found" in nope.stderr
    assert os.path.exists(project.root / "train.py")
