"""The output formats made for other tools (json-lines, junit, gitlab, pylint, rdjson, azure,
grouped), each read back the way its consumer reads it: JSON Schema where the consumer publishes
one (reviewdog's rdjson, GitLab's Code Quality fields), an XML parser and the element structure
JUnit readers walk, the line grammar of pylint's parseable format and Azure's logging commands.
Every format reports the same findings as the JSON report, in its own order."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import jsonschema
import pytest

from buggy_sources import BUGGY
from devlint.findings import Finding, Fix, Severity
from devlint.report import render
from devlint.report.azure import command, escape_data
from devlint.runner import RunResult

from test_sarif import PROGRAM

NEW_FORMATS = ("json-lines", "junit", "gitlab", "pylint", "rdjson", "azure", "grouped")

# GitLab's Code Quality report (docs: "Code Quality report format"): the fields GitLab reads
GITLAB_SCHEMA = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["description", "check_name", "fingerprint", "severity", "location"],
        "properties": {
            "description": {"type": "string", "minLength": 1},
            "check_name": {"type": "string", "pattern": "^DEV[0-9]{3}$"},
            "fingerprint": {"type": "string", "pattern": "^[0-9a-f]{32,}$"},
            "severity": {"enum": ["info", "minor", "major", "critical", "blocker"]},
            "location": {
                "type": "object",
                "required": ["path", "lines"],
                "properties": {
                    "path": {"type": "string", "not": {"pattern": "^/"}},
                    "lines": {"type": "object", "required": ["begin"],
                              "properties": {"begin": {"type": "integer", "minimum": 1},
                                             "end": {"type": "integer", "minimum": 1}}},
                },
            },
        },
    },
}

# reviewdog's DiagnosticResult (proto/rdf/reviewdog.proto), closed with additionalProperties so a
# misspelt field fails, and the severity enum of the proto
_POSITION = {"type": "object", "additionalProperties": False, "required": ["line"],
             "properties": {"line": {"type": "integer", "minimum": 1}, "column": {"type": "integer", "minimum": 1}}}
_RANGE = {"type": "object", "additionalProperties": False, "required": ["start"],
          "properties": {"start": _POSITION, "end": _POSITION}}
_SOURCE = {"type": "object", "additionalProperties": False, "required": ["name"],
           "properties": {"name": {"type": "string"}, "url": {"type": "string"}}}
RDJSON_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "source": _SOURCE,
        "severity": {"enum": ["UNKNOWN_SEVERITY", "ERROR", "WARNING", "INFO"]},
        "diagnostics": {"type": "array", "items": {
            "type": "object",
            "additionalProperties": False,
            "required": ["message", "location"],
            "properties": {
                "message": {"type": "string"},
                "location": {"type": "object", "additionalProperties": False, "required": ["path"],
                             "properties": {"path": {"type": "string"}, "range": _RANGE}},
                "severity": {"enum": ["UNKNOWN_SEVERITY", "ERROR", "WARNING", "INFO"]},
                "source": _SOURCE,
                "code": {"type": "object", "additionalProperties": False, "required": ["value"],
                         "properties": {"value": {"type": "string"}, "url": {"type": "string"}}},
                "suggestions": {"type": "array", "items": {
                    "type": "object", "additionalProperties": False, "required": ["range", "text"],
                    "properties": {"range": _RANGE, "text": {"type": "string"}}}},
                "original_output": {"type": "string"},
            },
        }},
    },
}

PYLINT_LINE = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+): \[(?P<code>DEV\d{3})\] (?P<message>.+)$")
AZURE_LINE = re.compile(r"^##vso\[task\.logissue (?P<properties>[^\]]*)\](?P<message>.*)$")


def azure_properties(text: str) -> dict[str, str]:
    assert text.endswith(";")
    return dict(item.split("=", 1) for item in text[:-1].split(";"))


def rows(invoke, format_name: str, *args: str) -> list[tuple[str, int, str]]:
    """(path, line, code) of each finding in the order the format writes them."""
    out = invoke("check", "--no-cache", "--format", format_name, *args)
    assert out.exit_code in (0, 1), out.stderr
    text = out.stdout
    if format_name in ("json", "json-lines"):
        findings = json.loads(text)["findings"] if format_name == "json" else [json.loads(line) for line in
                                                                               text.splitlines()]
        return [(f["path"], f["line"], f["code"]) for f in findings]
    if format_name == "junit":
        root = ET.fromstring(text)
        return [(case.get("file"), int(case.get("line")), case.get("name").split(".")[1])
                for case in root.iter("testcase") if case.find("failure") is not None]
    if format_name == "gitlab":
        return [(i["location"]["path"], i["location"]["lines"]["begin"], i["check_name"]) for i in json.loads(text)]
    if format_name == "rdjson":
        return [(d["location"]["path"], d["location"]["range"]["start"]["line"], d["code"]["value"])
                for d in json.loads(text)["diagnostics"]]
    if format_name == "pylint":
        return [(m["path"], int(m["line"]), m["code"]) for m in map(PYLINT_LINE.match, text.splitlines())]
    if format_name == "azure":
        found = []
        for line in text.splitlines():
            properties = azure_properties(AZURE_LINE.match(line)["properties"])
            found.append((properties["sourcepath"], int(properties["linenumber"]), properties["code"]))
        return found
    assert format_name == "grouped"
    found, path = [], None
    for line in text.splitlines():
        if line and not line.startswith(" "):
            path = line.rstrip(":")
        elif line.strip():
            position, code = line.split()[:2]
            found.append((path, int(position.split(":")[0]), code))
    return found


@pytest.fixture
def two_files(project):
    project.write("a_train.py", PROGRAM)
    project.write("b_eval.py", PROGRAM.replace("fit()\nstate", "state").replace("def fit", "def evaluate"))
    project.write("broken.py", "def f(:\n    pass\n")
    return project


@pytest.mark.parametrize("format_name", NEW_FORMATS)
def test_every_format_reports_the_json_findings(two_files, invoke, format_name) -> None:
    reference = rows(invoke, "json")
    assert len(reference) >= 6
    found = rows(invoke, format_name)
    if format_name in ("junit", "grouped"):  # grouped by file, in the order of their lines
        assert sorted(found) == sorted(reference)
    else:
        assert found == reference


def test_json_lines_is_one_json_report_finding_per_line(two_files, invoke) -> None:
    document = json.loads(invoke("check", "--no-cache", "--format", "json").stdout)
    lines = invoke("check", "--no-cache", "--format", "json-lines").stdout.splitlines()
    assert [json.loads(line) for line in lines] == document["findings"]


def test_json_lines_writes_nothing_for_a_clean_run(project, invoke) -> None:
    project.write("ok.py", "x = 1\n")
    out = invoke("check", "--no-cache", "--format", "json-lines")
    assert out.exit_code == 0 and out.stdout == ""


def test_junit_has_the_structure_junit_readers_walk(two_files, invoke) -> None:
    out = invoke("check", "--no-cache", "--format", "junit")
    assert out.stdout.startswith('<?xml version="1.0" encoding="UTF-8"?>\n')
    root = ET.fromstring(out.stdout)
    assert root.tag == "testsuites"
    suites = list(root)
    assert suites and all(suite.tag == "testsuite" for suite in suites)
    assert {suite.get("name") for suite in suites} == {"a_train.py", "b_eval.py", "broken.py"}
    total = 0
    for suite in suites:
        cases = list(suite)
        assert all(case.tag == "testcase" for case in cases)
        assert int(suite.get("tests")) == len(cases) == int(suite.get("failures"))
        assert suite.get("errors") == "0"
        for case in cases:
            assert case.get("name").startswith("devlint.DEV") and case.get("classname")
            (failure,) = list(case)
            assert failure.tag == "failure" and failure.get("message")
            assert failure.get("type") in ("error", "warning", "info")
            assert failure.text.startswith(f"line {case.get('line')}, col {case.get('column')}, ")
        total += len(cases)
    assert int(root.get("tests")) == total == int(root.get("failures"))


def test_junit_escapes_what_xml_must_escape() -> None:
    finding = Finding("DEV101", "unmoved-input", Severity.ERROR, "a&b.py", 2, 3, 2, 9,
                      'crashes in `<module>` when "x" & <y> meet]]>')
    import io

    stream = io.StringIO()
    render("junit", RunResult(1, [finding]), stream)
    failure = ET.fromstring(stream.getvalue()).find("testsuite/testcase/failure")
    assert failure.get("message") == 'crashes in `<module>` when "x" & <y> meet]]>'
    assert failure.text.endswith('"x" & <y> meet]]>')


def test_junit_without_findings_is_one_passing_case(project, invoke) -> None:
    project.write("ok.py", "x = 1\n")
    root = ET.fromstring(invoke("check", "--no-cache", "--format", "junit").stdout)
    cases = list(root.iter("testcase"))
    assert len(cases) == 1 and cases[0].find("failure") is None
    assert root.get("failures") == "0" and root.get("tests") == "1"


def test_gitlab_code_quality_fields(two_files, invoke, monkeypatch) -> None:
    issues = json.loads(invoke("check", "--no-cache", "--format", "gitlab").stdout)
    jsonschema.validate(issues, GITLAB_SCHEMA)
    assert len({issue["fingerprint"] for issue in issues}) == len(issues)
    assert {issue["severity"] for issue in issues} >= {"critical", "major"}  # errors and warnings
    # GitLab sets CI_PROJECT_DIR: paths are relative to it wherever devlint runs
    monkeypatch.setenv("CI_PROJECT_DIR", str(two_files.root.parent))
    moved = json.loads(invoke("check", "--no-cache", "--format", "gitlab").stdout)
    assert {i["location"]["path"] for i in moved} == {"proj/a_train.py", "proj/b_eval.py", "proj/broken.py"}


def test_gitlab_fingerprint_survives_unrelated_edits(project, invoke) -> None:
    project.write("train.py", PROGRAM)
    before = json.loads(invoke("check", "--no-cache", "--format", "gitlab").stdout)
    project.write("train.py", "# a comment\n\n" + PROGRAM)
    after = json.loads(invoke("check", "--no-cache", "--format", "gitlab").stdout)
    assert [i["fingerprint"] for i in before] == [i["fingerprint"] for i in after]
    assert [i["location"]["lines"]["begin"] + 2 for i in before] == [i["location"]["lines"]["begin"] for i in after]


def test_rdjson_matches_reviewdogs_schema_with_suggestions(project, invoke) -> None:
    project.write("train.py", BUGGY)
    document = json.loads(invoke("check", "--no-cache", "--format", "rdjson").stdout)
    jsonschema.validate(document, RDJSON_SCHEMA)
    by_code = {d["code"]["value"]: d for d in document["diagnostics"]}
    assert by_code["DEV107"]["severity"] == "ERROR"
    assert by_code["DEV107"]["suggestions"][0]["text"].startswith("x = ")  # a safe fix: suggested
    assert "suggestions" not in by_code["DEV109"]  # unsafe: only with --unsafe-fixes
    unsafe = json.loads(invoke("check", "--no-cache", "--format", "rdjson", "--unsafe-fixes").stdout)
    jsonschema.validate(unsafe, RDJSON_SCHEMA)
    assert any("suggestions" in d for d in unsafe["diagnostics"] if d["code"]["value"] == "DEV109")


def test_rdjson_columns_are_utf8_bytes(project, invoke) -> None:
    # "ö" is two bytes: reviewdog counts the column of `x.to` after it in bytes
    project.write("train.py", BUGGY.replace("    x.to(device)", "    ö = 1; x.to(device)"))
    json_column = next(f for f in json.loads(invoke("check", "--no-cache", "--format", "json").stdout)["findings"]
                       if f["code"] == "DEV107")["column"]
    document = json.loads(invoke("check", "--no-cache", "--format", "rdjson").stdout)
    diagnostic = next(d for d in document["diagnostics"] if d["code"]["value"] == "DEV107")
    assert diagnostic["location"]["range"]["start"]["column"] == json_column + 1


def test_pylint_lines(two_files, invoke) -> None:
    lines = invoke("check", "--no-cache", "--format", "pylint").stdout.splitlines()
    assert lines and all(PYLINT_LINE.match(line) for line in lines)


def test_azure_logging_commands_and_escaping(two_files, invoke) -> None:
    lines = invoke("check", "--no-cache", "--format", "azure").stdout.splitlines()
    types = {azure_properties(AZURE_LINE.match(line)["properties"])["type"] for line in lines}
    assert types == {"error", "warning"}
    finding = Finding("DEV301", "non-blocking-without-pinning", Severity.INFO, "a;b].py", 4, 2, 4, 9,
                      "100% of it; twice]\nagain")
    line = command(finding)
    assert "\n" not in line
    match = AZURE_LINE.match(line)
    properties = azure_properties(match["properties"])
    assert properties["type"] == "warning"  # Azure has no info: a warning there
    assert properties["sourcepath"] == "a%3Bb%5D.py"
    assert match["message"] == "100%AZP25 of it; twice] again"  # one line, as every format's message
    assert escape_data("a\r\nb%") == "a%0D%0Ab%AZP25"


def test_grouped_lines_up_under_each_file(project, invoke, fake_engine) -> None:
    project.write("b.py", "x = 1\n" * 8 + "boom101()\nboom107()\n")
    project.write("a.py", "boom201()\n")
    out = invoke("check", "--no-cache", "--format", "grouped")
    assert out.stdout == ("a.py:\n"
                          "  1:1 DEV201 [warning] load-without-map-location here\n"
                          "\n"
                          "b.py:\n"
                          "  9:1  DEV101 [error] unmoved-input here\n"  # positions padded per file
                          "  10:1 DEV107 [error] discarded-to here\n"
                          "\n")


def test_notebook_findings_point_into_the_ipynb_file(project, invoke) -> None:
    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
              "source": cell.splitlines(keepends=True)} for cell in PROGRAM.split("\n\n\n")]
    # as Jupyter saves it: indented, one string per source line
    project.write("nb.ipynb", json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells},
                                         indent=1))
    reference = json.loads(invoke("check", "--no-cache", "--format", "json").stdout)["findings"]
    assert reference and all("cell" in f for f in reference)
    raw = (project.root / "nb.ipynb").read_text().splitlines()
    for issue, finding in zip(json.loads(invoke("check", "--no-cache", "--format", "gitlab").stdout), reference):
        assert issue["description"].startswith(f"cell {finding['cell']}, line {finding['line']}: ")
        line_text = raw[issue["location"]["lines"]["begin"] - 1]
        assert line_text.strip().startswith('"')  # a line of a cell's source in the JSON
    for line in invoke("check", "--no-cache", "--format", "pylint").stdout.splitlines():
        assert PYLINT_LINE.match(line)["message"].startswith("cell ")


def test_fix_less_formats_take_a_fixed_finding(project, invoke) -> None:
    """A finding with a fix but no edits (nothing --fix can apply) has no suggestion."""
    import io

    finding = Finding("DEV107", "discarded-to", Severity.ERROR, "t.py", 1, 1, 1, 5, "m", fix=Fix("assign", True))
    stream = io.StringIO()
    render("rdjson", RunResult(1, [finding]), stream)
    jsonschema.validate(json.loads(stream.getvalue()), RDJSON_SCHEMA)
    assert "suggestions" not in json.loads(stream.getvalue())["diagnostics"][0]


@pytest.mark.parametrize("format_name", ["sarif", "github", "gitlab", "junit", "rdjson", "azure", "pylint",
                                         "json-lines"])
def test_statistics_refuses_a_format_made_for_another_tool(project, invoke, fake_engine, format_name) -> None:
    project.write("a.py", "boom107()\n")
    out = invoke("check", "--statistics", "--format", format_name)
    assert out.exit_code == 2 and out.stdout == ""
    assert f"--statistics does not combine with --output-format {format_name}" in out.stderr


@pytest.mark.parametrize("format_name", ["text", "concise", "grouped", "json"])
def test_statistics_with_a_table_or_json(project, invoke, fake_engine, format_name) -> None:
    project.write("a.py", "boom107()\nboom107()\n")
    out = invoke("check", "--statistics", "--format", format_name)
    assert out.exit_code == 1
    if format_name == "json":
        assert json.loads(out.stdout)[0]["count"] == 2
    else:
        assert out.stdout.split("\t")[:2] == ["2", "DEV107"]


def test_output_format_from_the_environment(project, invoke, fake_engine, monkeypatch) -> None:
    project.write("a.py", "boom107()\n")
    monkeypatch.setenv("DEVLINT_OUTPUT_FORMAT", "pylint")
    assert invoke("check").stdout == "a.py:1: [DEV107] discarded-to here\n"
    assert invoke("check", "--format", "concise").stdout.startswith("a.py:1:1: DEV107 [error]")  # the option wins
    monkeypatch.setenv("DEVLINT_OUTPUT_FORMAT", "xml")
    out = invoke("check")
    assert out.exit_code == 2 and "'xml' is not one of" in out.stderr


def test_rule_links_point_at_this_repositorys_pages_or_the_configured_base(project, invoke, fake_engine,
                                                                        monkeypatch) -> None:
    from pathlib import Path
    from urllib.parse import urlparse
    from urllib.request import url2pathname

    from devlint.docs import rule_url, set_rule_url_base

    monkeypatch.delenv("DEVLINT_RULE_URL_BASE", raising=False)
    default = rule_url("DEV101")
    assert default.startswith("file://") and Path(url2pathname(urlparse(default).path)).is_file()
    project.write("a.py", "boom107()\n")
    project.write("devlint.toml", 'rule-url-base = "https://docs.example.org/devlint/rules"\n')
    try:
        url = json.loads(invoke("check", "--format", "json").stdout)["findings"][0]["url"]
        assert url == "https://docs.example.org/devlint/rules/DEV107.md"
        monkeypatch.setenv("DEVLINT_RULE_URL_BASE", "https://wiki.example.org/lint?rule={code}")
        rdjson = json.loads(invoke("check", "--format", "rdjson").stdout)
        assert rdjson["diagnostics"][0]["code"]["url"] == "https://wiki.example.org/lint?rule=DEV107"
    finally:
        set_rule_url_base(None)
