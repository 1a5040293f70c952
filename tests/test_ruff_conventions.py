"""The command-line conventions Ruff users expect, on the real engine."""

from __future__ import annotations

import json

from buggy_sources import BUGGY

from devlint.docs import rule_url



def test_output_format_and_its_format_alias(project, invoke) -> None:
    project.write("train.py", BUGGY)
    long = invoke("check", "--no-cache", "--output-format", "concise", "train.py")
    short = invoke("check", "--no-cache", "--format", "concise", "train.py")
    assert long.stdout == short.stdout and "train.py:9:5: DEV107" in long.stdout


def test_output_file_gets_the_report(project, invoke) -> None:
    project.write("train.py", BUGGY)
    out = invoke("check", "--no-cache", "--format", "json", "-o", "report.json", "train.py")
    assert out.exit_code == 1 and out.stdout == ""
    document = json.loads((project.root / "report.json").read_text())
    assert {f["code"] for f in document["findings"]} >= {"DEV107", "DEV109"}


def test_fixable_marker_and_summary(project, invoke) -> None:
    project.write("train.py", BUGGY)
    out = invoke("check", "--no-cache", "--format", "concise", "train.py")
    lines = {line.split(": ", 1)[1].split(" ", 1)[0]: line for line in out.stdout.splitlines()}
    assert "DEV107 [error] [*] `x.to(...)`" in lines["DEV107"]
    assert "[*]" not in lines["DEV109"]  # unsafe: not applied by --fix alone
    assert "[*] 1 fixable with `--fix`." in out.stderr
    assert "1 more fixable with `--fix --unsafe-fixes`." in out.stderr
    unsafe = invoke("check", "--no-cache", "--format", "concise", "--unsafe-fixes", "train.py")
    assert "[*] 2 fixable with `--fix`." in unsafe.stderr and "more" not in unsafe.stderr


def test_text_report_marks_fixable_findings(project, invoke) -> None:
    project.write("train.py", BUGGY)
    out = invoke("check", "--no-cache", "train.py")
    assert "DEV107 [error] [*] " in out.stdout


def test_statistics_count_per_code(project, invoke) -> None:
    project.write("train.py", BUGGY)
    out = invoke("check", "--no-cache", "--statistics", "train.py")
    rows = [line.split("\t") for line in out.stdout.splitlines()]
    assert ["1", "DEV107", "[*] discarded-to"] in rows
    assert ["1", "DEV109", "    host-op-on-device-tensor"] in rows
    assert out.exit_code == 1
    data = json.loads(invoke("check", "--no-cache", "--statistics", "--format", "json", "train.py").stdout)
    assert {"code": "DEV107", "name": "discarded-to", "count": 1, "fixable": True, "fixable_count": 1} in data


def test_json_has_fix_applicability_and_rule_url(project, invoke) -> None:
    project.write("train.py", BUGGY)
    findings = {f["code"]: f for f in json.loads(invoke("check", "--no-cache", "--format", "json",
                                                        "train.py").stdout)["findings"]}
    assert findings["DEV107"]["fix"]["applicability"] == "safe"
    assert findings["DEV107"]["fix"]["edits"][0]["content"] == "x = "
    assert findings["DEV109"]["fix"]["applicability"] == "unsafe"
    assert findings["DEV107"]["url"] == rule_url("DEV107")


def test_fix_only_reports_nothing_else(project, invoke) -> None:
    path = project.write("train.py", BUGGY)
    out = invoke("check", "--no-cache", "--fix-only", "train.py")
    assert out.exit_code == 0 and out.stdout == ""
    assert "    x = x.to(device)\n" in path.read_text()
    assert "Found" not in out.stderr


def test_exit_non_zero_on_fix(project, invoke) -> None:
    project.write("train.py", BUGGY.split("\n\ndef show")[0] + "\n")
    out = invoke("check", "--no-cache", "--fix", "train.py")
    assert out.exit_code == 0  # the one finding is fixed, nothing is left
    project.write("train.py", BUGGY.split("\n\ndef show")[0] + "\n")
    out = invoke("check", "--no-cache", "--fix", "--exit-non-zero-on-fix", "train.py")
    assert out.exit_code == 1
    assert invoke("check", "--no-cache", "--fix", "--exit-non-zero-on-fix", "train.py").exit_code == 0


def test_show_fixes_lists_what_was_fixed(project, invoke) -> None:
    project.write("train.py", BUGGY)
    out = invoke("check", "--no-cache", "--fix", "--show-fixes", "train.py")
    assert "train.py:\n    1 \u00d7 DEV107 (discarded-to)" in out.stderr
    project.write("train.py", BUGGY)
    out = invoke("check", "--no-cache", "--show-fixes", "train.py")
    assert "train.py:9:5: DEV107 assign the result" in out.stderr


def test_quiet_keeps_the_list_show_fixes_asks_for(project, invoke) -> None:
    project.write("train.py", BUGGY)
    available = invoke("check", "--no-cache", "-q", "--show-fixes", "train.py")
    assert "train.py:9:5: DEV107 assign the result" in available.stderr
    assert "Found" not in available.stderr  # -q still drops the summary
    applied = invoke("check", "--no-cache", "-q", "--fix", "--show-fixes", "train.py")
    assert "train.py:\n    1 \u00d7 DEV107 (discarded-to)" in applied.stderr
    assert "Fixed 1 finding" not in applied.stderr


def test_color_always_and_never(project, invoke) -> None:
    project.write("train.py", BUGGY)
    assert "\x1b[" in invoke("check", "--no-cache", "--color", "always", "train.py").stdout
    assert "\x1b[" not in invoke("check", "--no-cache", "--color", "never", "train.py").stdout


def test_dash_reads_standard_input(project, invoke) -> None:
    out = invoke("check", "--format", "concise", "-", input=BUGGY)
    assert out.exit_code == 1 and "-:9:5: DEV107" in out.stdout
    named = invoke("check", "--format", "concise", "--stdin-filename", "train.py", "-", input=BUGGY)
    assert "train.py:9:5: DEV107" in named.stdout
    assert invoke("check", "-", "train.py", input=BUGGY).exit_code == 2


def test_empty_select_is_a_usage_error(project, invoke) -> None:
    project.write("train.py", BUGGY)
    out = invoke("check", "--select", "", "train.py")
    assert out.exit_code == 2
    assert "--select names no rule" in out.stderr


def test_explain_by_name_and_all(invoke) -> None:
    by_name = invoke("explain", "discarded-to")
    assert by_name.exit_code == 0 and by_name.stdout == invoke("explain", "DEV107").stdout
    everything = invoke("explain", "--all")
    assert everything.exit_code == 0
    assert "DEV101 unmoved-input" in everything.stdout and "DEV107 discarded-to" in everything.stdout


def test_rules_as_json_with_the_fix(invoke) -> None:
    rules = {r["code"]: r for r in json.loads(invoke("rules", "--format", "json").stdout)}
    assert rules["DEV107"]["fix"] == "safe" and rules["DEV101"]["fix"] == "unsafe"
    assert rules["DEV000"]["fix"] == "none" and rules["DEV301"]["default"] is False
    assert rules["DEV107"]["url"] == rule_url("DEV107")


def test_quiet_text_report_has_no_header_line(project, invoke) -> None:
    project.write("train.py", BUGGY)
    loud = invoke("check", "--no-cache", "train.py")
    quiet = invoke("check", "--no-cache", "-q", "train.py")
    assert loud.stdout.startswith("devlint: ")
    assert quiet.stdout.startswith("train.py:") and quiet.stderr == ""


def test_stdin_fix_says_what_is_left(project, invoke) -> None:
    """`--stdin-filename NAME --fix`: the fixed source on stdout (an editor reads it back), what
    the fixes could not repair on stderr."""
    out = invoke("check", "--no-cache", "--fix", "--stdin-filename", "train.py", input=BUGGY)
    assert out.stdout.startswith("import torch") and "    x = x.to(device)\n" in out.stdout
    left = [line for line in out.stderr.splitlines() if line.startswith("train.py:")]
    assert [line.split()[1] for line in left] == ["DEV109"]  # unsafe: not applied without --unsafe-fixes
    assert "1 finding left after 1 fix." in out.stderr and out.exit_code == 1
    quiet = invoke("check", "--no-cache", "-q", "--fix", "--stdin-filename", "train.py", input=BUGGY)
    assert quiet.stderr == "" and quiet.stdout == out.stdout
