"""Every device finding of the fixture corpus tells its story: at least two evidence steps
(the host side and the device side, or the cause and the use), built by the analysis.

The whole corpus (every fixture, the projects and the notebooks, as `devlint check` runs a
folder) is checked once in each format; the JSON findings are inspected step by step and the
SARIF document is validated against the 2.1.0 schema, with each device result's related
locations and thread flow.
"""

from __future__ import annotations

import json
import textwrap
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


# --- the stories themselves -----------------------------------------------------------------

def _story(source: str, code: str) -> list[tuple[int, str]]:
    from devlint.engine import check_text

    (finding,) = [f for f in check_text(textwrap.dedent(source), "<story>") if f.code == code]
    return [(step.line, step.message) for step in finding.evidence]


def test_an_unmoved_label_tells_where_it_came_from_where_the_model_went_and_where_they_meet() -> None:
    steps = _story("""\
        import torch
        import torch.nn as nn
        from torch.utils.data import DataLoader, TensorDataset

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = nn.Linear(4, 2).to(device)
        val_loader = DataLoader(TensorDataset(torch.randn(8, 4), torch.randint(0, 2, (8,))), batch_size=4)
        for inputs, labels in val_loader:
            logits = model(inputs.to(device))
            correct = (logits.argmax(1) == labels).sum()
        """, "DEV101")
    assert [line for line, _ in steps] == [7, 6, 10]  # the loader is built at line 7
    assert steps[0][1] == "`labels` comes from `val_loader` here, on the CPU"
    assert "`device`" in steps[1][1] and "moved here" in steps[1][1]
    assert steps[2][1].startswith("they meet here")


def test_a_meet_on_some_paths_says_which() -> None:
    steps = _story("""\
        import argparse
        import torch
        import torch.nn as nn

        parser = argparse.ArgumentParser()
        parser.add_argument("--fp16", action="store_true")
        args = parser.parse_args()
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = nn.Linear(4, 2).to(device)
        x = torch.tensor([[0.5, 1.0, 1.5, 2.0]])
        if args.fp16:
            x = x.half().to(device)
        y = model(x)
        """, "DEV101")
    assert steps[-2:] == [(11, "on this branch not `args.fp16`"), (13, "they meet here, in the call of `model`")]


def test_cause_and_use_of_a_late_cuda_visible_devices() -> None:
    steps = _story("""\
        import os
        import torch

        ready = torch.cuda.is_available()
        os.environ["CUDA_VISIBLE_DEVICES"] = "1"
        x = torch.zeros(2, device="cuda" if ready else "cpu")
        """, "DEV203")
    assert steps == [(4, "CUDA is initialised here"), (5, "`CUDA_VISIBLE_DEVICES` is set here, too late")]
