"""Evidence steps in every report: SARIF related locations and code flows, text notes, GitHub
annotation lines, and notebook steps placed in their cells.

The analysis that fills `Finding.evidence` is not needed here: findings are built directly, or a
stand-in engine attaches synthetic steps, so the rendering is tested on its own terms.
"""

from __future__ import annotations

import io
import json
import os
import re

import pytest

import devlint.engine
from devlint.findings import Evidence, Finding, Fix, Phase, Severity
from devlint.report import github, sarif, text
from devlint.runner import RunResult
from devlint.source import decode_source

from test_github import parse, unescape
from test_notebooks import _notebook
from test_sarif import validate

TRAIN = """\
import torch
from models import Net

device = torch.device("cuda")
model = Net().to(device)
for inputs, labels in val_loader:
    out = model(inputs.to(device))
    loss = criterion(out, labels)
"""


def finding_with_evidence(path: str = "train.py", **changes) -> Finding:
    steps = (
        Evidence(path, 6, 13, "`labels` comes from `val_loader` here"),
        Evidence("models.py", 3, 9, "`Net` keeps its weights in `self.fc`"),
        Evidence(path, 5, 9, "`model` is moved to `device` here"),
    )
    base = Finding("DEV101", "unmoved-input", Severity.ERROR, path, 8, 23, 8, 29,
                   "`labels` is still on the CPU here, but `out` is on `device`: this crashes after the first "
                   "training epoch.", phase=Phase.EVALUATION, rank=1, evidence=steps,
                   fix=Fix("move `labels` to the device before it is used", safe=False))
    return base.with_(**changes)


def plain_finding() -> Finding:
    return Finding("DEV107", "discarded-to", Severity.ERROR, "train.py", 7, 17, 7, 34,
                   "`inputs.to(...)` returns a moved copy that is thrown away.", rank=2)


def result_of(*findings: Finding) -> RunResult:
    unit = decode_source(TRAIN.encode(), "train.py", os.path.abspath("train.py"))
    return RunResult(files_checked=1, findings=list(findings), sources={"train.py": unit})


# --- SARIF ---------------------------------------------------------------------------------


def test_sarif_related_locations_and_code_flow_validate(project) -> None:
    document = sarif.to_document(result_of(finding_with_evidence(), plain_finding()))
    validate(document)
    with_steps, without = document["runs"][0]["results"]
    related = with_steps["relatedLocations"]
    assert [r["id"] for r in related] == [0, 1, 2]
    assert [r["message"]["text"] for r in related] == [
        "`labels` comes from `val_loader` here", "`Net` keeps its weights in `self.fc`",
        "`model` is moved to `device` here"]
    first = related[0]["physicalLocation"]
    assert first["artifactLocation"] == {"uri": "train.py", "uriBaseId": "%SRCROOT%"}
    assert first["region"] == {"startLine": 6, "startColumn": 13}
    # the step in another file names that file
    assert related[1]["physicalLocation"]["artifactLocation"] == {"uri": "models.py", "uriBaseId": "%SRCROOT%"}

    (flow,) = with_steps["codeFlows"]
    (thread,) = flow["threadFlows"]
    steps = thread["locations"]
    assert [s["executionOrder"] for s in steps] == [1, 2, 3, 4]
    assert [s["location"]["physicalLocation"]["region"]["startLine"] for s in steps] == [6, 3, 5, 8]
    assert steps[-1]["location"]["message"]["text"] == "DEV101 is reported here"  # the alert itself ends the path
    assert "relatedLocations" not in without and "codeFlows" not in without


def test_sarif_flow_ends_at_the_last_step_when_it_is_the_result(project) -> None:
    finding = finding_with_evidence()
    meet = Evidence("train.py", 8, 23, "`labels` meets `out` here")
    document = sarif.to_document(result_of(finding.with_(evidence=finding.evidence + (meet,))))
    validate(document)
    steps = document["runs"][0]["results"][0]["codeFlows"][0]["threadFlows"][0]["locations"]
    assert len(steps) == 4
    assert steps[-1]["location"]["message"]["text"] == "`labels` meets `out` here"


def test_sarif_notebook_steps_name_their_cell(project) -> None:
    finding = Finding("DEV101", "unmoved-input", Severity.ERROR, "nb.ipynb", 2, 5, 2, 9, "message", cell=3,
                      evidence=(Evidence("nb.ipynb", 1, 1, "from the loader", cell=2),
                                Evidence("nb.ipynb", 2, 5, "meets here", cell=3)))
    document = sarif.to_document(RunResult(1, [finding]))
    validate(document)
    related = document["runs"][0]["results"][0]["relatedLocations"]
    assert [r["properties"]["cell"] for r in related] == [2, 3]


# --- text ----------------------------------------------------------------------------------


def render_text(result: RunResult, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("NO_COLOR", "1")
    stream = io.StringIO()
    text.render(result, stream)
    return stream.getvalue()


def test_text_numbers_the_steps_under_the_excerpt(project, monkeypatch) -> None:
    out = render_text(result_of(finding_with_evidence()), monkeypatch)
    lines = out.splitlines()
    excerpt_end = max(i for i, line in enumerate(lines) if re.match(r"^\s+(>\s+)?\d+ \| |^\s+\| ", line))
    notes = lines[excerpt_end + 1:excerpt_end + 4]
    assert notes == [
        "    1. line 6: `labels` comes from `val_loader` here",
        "    2. models.py:3:9: `Net` keeps its weights in `self.fc`",
        "    3. line 5: `model` is moved to `device` here",
    ]
    assert lines[excerpt_end + 4].startswith("    fix (unsafe")


def test_text_without_evidence_is_unchanged(project, monkeypatch) -> None:
    plain = plain_finding()
    with_empty = render_text(result_of(plain), monkeypatch)
    assert not re.search(r"^\s+1\. ", with_empty, re.MULTILINE)
    assert with_empty == render_text(result_of(plain.with_(evidence=())), monkeypatch)


# --- GitHub annotations --------------------------------------------------------------------


def test_github_annotation_lists_the_steps(project) -> None:
    command, properties, message = parse(github.annotation(finding_with_evidence()))
    lines = unescape(message).split("\n")
    assert lines[0].startswith("`labels` is still on the CPU here")
    assert lines[1:] == [
        "1. line 6: `labels` comes from `val_loader` here",
        "2. models.py:3:9: `Net` keeps its weights in `self.fc`",
        "3. line 5: `model` is moved to `device` here",
    ]
    assert "\n" not in github.annotation(finding_with_evidence())
    assert unescape(parse(github.annotation(plain_finding()))[2]) == plain_finding().message


# --- through the command line, with a stand-in engine ------------------------------------


def _engine_with_evidence(text: str, path: str, *, enabled=None, **_: object) -> list[Finding]:
    """DEV101 on every `boom101()` line, with a step on the first `loader` line and one in models.py."""
    lines = text.splitlines()
    source_line = next((n for n, line in enumerate(lines, 1) if "loader" in line), 1)
    found = []
    for number, line in enumerate(lines, start=1):
        column = line.find("boom101()")
        if column >= 0:
            found.append(Finding(
                "DEV101", "unmoved-input", Severity.ERROR, path, number, column + 1, number, column + 10,
                "unmoved-input here", evidence=(
                    Evidence(path, source_line, 1, f"the batch comes from the loader (line {source_line})"),
                    Evidence("models.py", 2, 5, "the model is moved here"),
                )))
    return found


@pytest.fixture
def evidence_engine(monkeypatch: pytest.MonkeyPatch, fake_registry):
    monkeypatch.setattr(devlint.engine, "check_text", _engine_with_evidence)


def test_json_and_sarif_carry_the_steps(project, invoke, evidence_engine) -> None:
    project.write("train.py", "loader = make()\nx = 1\nboom101()\n")
    document = json.loads(invoke("check", "--format", "json").stdout)
    (finding,) = document["findings"]
    assert finding["evidence"] == [
        {"path": "train.py", "line": 1, "column": 1, "message": "the batch comes from the loader (line 1)"},
        {"path": "models.py", "line": 2, "column": 5, "message": "the model is moved here"},
    ]
    report = json.loads(invoke("check", "--format", "sarif").stdout)
    validate(report)
    (result,) = report["runs"][0]["results"]
    assert [r["physicalLocation"]["artifactLocation"]["uri"] for r in result["relatedLocations"]] == \
        ["train.py", "models.py"]


def test_notebook_steps_are_placed_in_their_cells(project, invoke, evidence_engine) -> None:
    project.write("nb.ipynb", _notebook(
        ("code", "import torch\n"),
        ("markdown", "# data\n"),
        ("code", "x = 1\nloader = make()\n"),
        ("code", "y = 2\nboom101()\n"),
    ), dedent=False)
    document = json.loads(invoke("check", "nb.ipynb", "--format", "json").stdout)
    (finding,) = document["findings"]
    assert (finding["cell"], finding["line"]) == (3, 2)
    host, other_file = finding["evidence"]
    # joined line 3 is the second line of code cell 2; a line its message names is counted in
    # the step's own cell
    assert (host["cell"], host["line"]) == (2, 2)
    assert host["message"] == "the batch comes from the loader (line 2)"
    assert "cell" not in other_file and other_file["line"] == 2

    out = invoke("check", "nb.ipynb", "--format", "text").stdout
    assert "    1. cell 2, line 2: the batch comes from the loader (line 2)" in out
    assert "    2. models.py:2:5: the model is moved here" in out
