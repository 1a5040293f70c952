"""`--format github`: workflow annotations, and parity between every output format."""

from __future__ import annotations

import json
import re

from devlint.findings import Finding, Severity
from devlint.report.github import annotation, escape_data, escape_property

from test_sarif import PROGRAM

ANNOTATION = re.compile(
    r"^::(?P<command>error|warning|notice) (?P<properties>[^:]*)::(?P<message>.*)$"
)


def parse(line: str) -> tuple[str, dict[str, str], str]:
    match = ANNOTATION.match(line)
    assert match, line
    properties = dict(item.split("=", 1) for item in match.group("properties").split(","))
    return match.group("command"), properties, match.group("message")


def unescape(text: str) -> str:
    """What the Actions runner does with an escaped value."""
    return text.replace("%0D", "\r").replace("%0A", "\n").replace("%3A", ":").replace("%2C", ",").replace("%25", "%")


def test_escaping_follows_the_runner() -> None:
    assert escape_data("50% done\r\nnext: a, b") == "50%25 done%0D%0Anext: a, b"
    assert escape_property("dir,x/a:b%.py") == "dir%2Cx/a%3Ab%25.py"
    finding = Finding("DEV101", "unmoved-input", Severity.ERROR, "we,ird:name.py", 3, 5, 3, 9,
                      "line one\nline two: 100%, done")
    command, properties, message = parse(annotation(finding))
    assert command == "error"
    assert unescape(properties["file"]) == "we,ird:name.py"
    assert unescape(message) == "line one\nline two: 100%, done"
    assert "\n" not in annotation(finding)


def test_annotations_for_a_real_program(project, invoke) -> None:
    project.write("pkg/train.py", PROGRAM)
    out = invoke("check", "--format", "github")
    assert out.exit_code == 1
    lines = out.stdout.splitlines()
    parsed = [parse(line) for line in lines]
    assert [(c, p["title"]) for c, p, _ in parsed] == [("error", "DEV107"), ("error", "DEV101"), ("warning", "DEV201")]
    command, properties, message = parsed[0]
    assert properties == {"file": "pkg/train.py", "line": "13", "col": "9", "endLine": "13", "endColumn": "21",
                          "title": "DEV107"}
    assert message.startswith("`x.to(...)` returns a moved copy")


def test_severities_map_to_error_warning_notice(project, invoke, fake_engine) -> None:
    project.write("a.py", "device = 'cpu'\nboom107()\nboom201()\nboom301()\n")  # a device signal: analysed
    out = invoke("check", "--format", "github", "--extend-select", "DEV301")
    commands = [parse(line)[0] for line in out.stdout.splitlines()]
    assert commands == ["error", "warning", "notice"]


def test_notebook_annotation_names_the_cell(project, invoke, fake_engine) -> None:
    notebook = {
        "cells": [
            {"cell_type": "code", "metadata": {}, "source": ["device = 'cpu'\n"], "outputs": [], "execution_count": None},
            {"cell_type": "code", "metadata": {}, "source": ["y = 2\n", "boom107()\n"], "outputs": [],
             "execution_count": None},
        ],
        "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    raw = json.dumps(notebook, indent=1)  # as Jupyter writes it: one source line per JSON line
    project.write("nb.ipynb", raw)
    (line,) = invoke("check", "--format", "github").stdout.splitlines()
    command, properties, message = parse(line)
    # the annotation points at the line of the .ipynb file that holds the cell's line
    raw_lines = raw.splitlines()
    row, col = int(properties.pop("line")), int(properties.pop("col"))
    assert raw_lines[row - 1][col - 1:].startswith("boom107()")
    assert properties == {"file": "nb.ipynb", "title": "DEV107"}
    assert message.startswith("cell 2, line 2: ")


def _rows(invoke, format_name: str) -> list[tuple[str, int, str]]:
    out = invoke("check", "--format", format_name)
    if format_name == "json":
        return [(f["path"], f["line"], f["code"]) for f in json.loads(out.stdout)["findings"]]
    if format_name == "sarif":
        results = json.loads(out.stdout)["runs"][0]["results"]
        return [
            (r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
             r["locations"][0]["physicalLocation"]["region"]["startLine"], r["ruleId"])
            for r in results
        ]
    if format_name == "github":
        rows = []
        for line in out.stdout.splitlines():
            _, properties, _ = parse(line)
            rows.append((properties["file"], int(properties["line"]), properties["title"]))
        return rows
    pattern = {
        "concise": re.compile(r"^(?P<path>[^:]+):(?P<line>\d+):\d+: (?P<code>DEV\d+) "),
        "text": re.compile(r"^(?P<path>[^:\s]+):(?P<line>\d+):\d+ (?P<code>DEV\d+) \["),
    }[format_name]
    return [(m["path"], int(m["line"]), m["code"]) for line in out.stdout.splitlines() if (m := pattern.match(line))]


def test_every_format_reports_the_same_findings_in_the_same_order(project, invoke) -> None:
    project.write("a_train.py", PROGRAM)
    project.write("b_eval.py", PROGRAM.replace("fit()\nstate", "state").replace("def fit", "def evaluate"))
    project.write("broken.py", "def f(:\n    pass\n")
    reference = _rows(invoke, "json")
    assert len(reference) >= 6
    for format_name in ("concise", "text", "sarif", "github"):
        assert _rows(invoke, format_name) == reference, format_name
