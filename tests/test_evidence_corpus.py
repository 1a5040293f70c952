"""Every device finding of the fixture corpus tells its story: at least two evidence steps
(the host side and the device side, or the cause and the use), built by the analysis.

The whole corpus (every fixture, the projects and the notebooks, as `devlint check` runs a
folder) is checked once in each format; the JSON findings are inspected step by step and the
SARIF document is validated against the 2.1.0 schema, with each device result's related
locations and thread flow.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from devlint.cli import cli
from devlint.rules import all_rules

from test_sarif import validate

FIXTURES = Path(__file__).parent / "fixtures"
DEVICE_CODES = frozenset(rule.code for rule in all_rules() if rule.code.startswith(("DEV1", "DEV2")))


def _check(format_name: str) -> dict:
    result = CliRunner().invoke(cli, ["check", str(FIXTURES), "--format", format_name, "--select", "ALL",
                                      "--no-cache", "--exit-zero", "-q"], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def corpus_json() -> list[dict]:
    document = _check("json")
    return document["findings"] if isinstance(document, dict) else document


@pytest.fixture(scope="module")
def corpus_sarif() -> dict:
    return _check("sarif")


def _device_findings(findings: list[dict]) -> list[dict]:
    return [f for f in findings if f["code"] in DEVICE_CODES]


def test_the_corpus_has_findings_of_every_device_rule(corpus_json) -> None:
    """The check below means something: each DEV1xx and DEV2xx rule reports in the corpus."""
    assert DEVICE_CODES <= {f["code"] for f in corpus_json}


def test_every_device_finding_has_two_evidence_steps(corpus_json) -> None:
    short = [f"{f['path']}:{f['line']} {f['code']}: {[s['message'] for s in f['evidence']]}"
             for f in _device_findings(corpus_json) if len(f["evidence"]) < 2]
    assert not short, "findings with fewer than two evidence steps:\n" + "\n".join(short)


def test_steps_are_placed_and_worded(corpus_json) -> None:
    """Each step names an existing file (another file than the finding's when it is there),
    a real position in it, and a short sentence; no step is told twice."""
    for finding in _device_findings(corpus_json):
        steps = Counter(json.dumps(step, sort_keys=True) for step in finding["evidence"])
        assert max(steps.values()) == 1, finding
        for step in finding["evidence"]:
            path = Path(step["path"])
            assert path.is_file(), step
            assert step["line"] >= 1 and step["column"] >= 1, step
            if path.suffix == ".py":
                assert step["line"] <= len(path.read_text(encoding="utf-8").splitlines()), step
            message = step["message"]
            assert message and "\n" not in message and len(message) <= 160, step


def test_steps_in_other_files_name_them(corpus_json) -> None:
    """A project's finding in `engine.py` whose batch comes from `train.py` points there."""
    crossing = [f for f in _device_findings(corpus_json) if any(s["path"] != f["path"] for s in f["evidence"])]
    assert crossing
    for finding in crossing:
        assert all(Path(s["path"]).parent == Path(finding["path"]).parent or "projects" in s["path"]
                   for s in finding["evidence"]), finding


def test_notebook_steps_are_in_cells(corpus_json) -> None:
    in_notebooks = [f for f in _device_findings(corpus_json) if f["path"].endswith(".ipynb")]
    assert in_notebooks
    for finding in in_notebooks:
        assert all(s.get("cell") for s in finding["evidence"]), finding


def test_corpus_sarif_validates_with_a_code_flow_per_device_result(corpus_sarif) -> None:
    validate(corpus_sarif)
    results = [r for run in corpus_sarif["runs"] for r in run["results"] if r["ruleId"] in DEVICE_CODES]
    assert results
    for result in results:
        assert len(result["relatedLocations"]) >= 2, result["ruleId"]
        (flow,) = result["codeFlows"]
        (thread,) = flow["threadFlows"]
        assert len(thread["locations"]) >= 2, result["ruleId"]
