"""`--format sarif`: valid SARIF 2.1.0 that code scanning can place, explain and fix.

The schema is the OASIS SARIF 2.1.0 JSON schema (errata 01), kept in tests/data so the test
runs on a clean clone.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from devlint.rules import all_rules

SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))

PROGRAM = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
loader = DataLoader(TensorDataset(torch.randn(16, 4), torch.randint(0, 2, (16,))), batch_size=4)
model = nn.Linear(4, 2).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


def fit():
    for x, y in loader:
        x.to(device)
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()


fit()
state = torch.load("ckpt.pt")
"""


def sarif(invoke, *args: str) -> dict:
    out = invoke("check", "--format", "sarif", *args)
    assert out.exit_code in (0, 1), out.stderr
    return json.loads(out.stdout)


def validate(document: dict) -> None:
    validator = jsonschema.Draft4Validator(SCHEMA)
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:5])


def test_the_schema_catches_a_broken_document() -> None:
    """The validation below is real: a result without a message is rejected."""
    broken = {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "devlint"}}, "results": [{"ruleId": "X"}]}]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, SCHEMA, cls=jsonschema.Draft4Validator)


def test_output_validates_against_the_sarif_schema(project, invoke) -> None:
    project.write("train.py", PROGRAM)
    project.write("broken.py", "def f(:\n    pass\n")
    document = sarif(invoke)
    validate(document)
    assert document["version"] == "2.1.0"
    (run,) = document["runs"]
    assert run["tool"]["driver"]["name"] == "devlint"
    assert {r["ruleId"] for r in run["results"]} == {"DEV000", "DEV101", "DEV107", "DEV201"}


def test_empty_run_validates(project, invoke) -> None:
    project.write("ok.py", "print('nothing to see')\n")
    document = sarif(invoke)
    validate(document)
    assert document["runs"][0]["results"] == []


def test_rules_metadata(project, invoke) -> None:
    project.write("train.py", PROGRAM)
    run = sarif(invoke)["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == [rule.code for rule in all_rules()]
    by_id = {rule.code: rule for rule in all_rules()}
    for descriptor in rules:
        rule = by_id[descriptor["id"]]
        assert descriptor["name"] == rule.name
        assert descriptor["shortDescription"]["text"] == rule.summary
        assert descriptor["fullDescription"]["text"]
        assert "## Why it crashes" in descriptor["help"]["markdown"]
        assert "Why it crashes" in descriptor["help"]["text"]
        expected_level = {"error": "error", "warning": "warning", "info": "note"}[rule.severity.value]
        assert descriptor["defaultConfiguration"]["level"] == expected_level
    for result in run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]


def test_results_locations_levels_and_order(project, invoke) -> None:
    project.write("src/train.py", PROGRAM)
    run = sarif(invoke)["runs"][0]
    document = json.loads(invoke("check", "--format", "json").stdout)
    assert [(r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in run["results"]] == [
        (f["code"], f["line"]) for f in document["findings"]
    ]
    first = run["results"][0]
    location = first["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": "src/train.py", "uriBaseId": "%SRCROOT%"}
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"].endswith("/")
    region = location["region"]
    assert set(region) == {"startLine", "startColumn", "endLine", "endColumn"}
    levels = {r["ruleId"]: r["level"] for r in run["results"]}
    assert levels == {"DEV107": "error", "DEV101": "error", "DEV201": "warning"}
    assert all(r["message"]["text"] for r in run["results"])


def test_fixes_are_replacements_that_repair_the_file(project, invoke) -> None:
    path = project.write("train.py", PROGRAM)
    run = sarif(invoke)["runs"][0]
    (discarded,) = [r for r in run["results"] if r["ruleId"] == "DEV107"]
    (fix,) = discarded["fixes"]
    (change,) = fix["artifactChanges"]
    assert change["artifactLocation"]["uri"] == "train.py"
    lines = path.read_text(encoding="utf-8").splitlines()
    for replacement in change["replacements"]:
        region = replacement["deletedRegion"]
        assert region["startLine"] == region["endLine"]
        line = lines[region["startLine"] - 1]
        start, end = region["startColumn"] - 1, region["endColumn"] - 1
        lines[region["startLine"] - 1] = line[:start] + replacement["insertedContent"]["text"] + line[end:]
    assert lines[12] == "        x = x.to(device)"
    assert fix["properties"] == {"safe": True}
    # a result has `fixes` exactly when the finding is fixable
    document = json.loads(invoke("check", "--format", "json").stdout)
    assert [("fixes" in r) for r in run["results"]] == [f["fixable"] for f in document["findings"]]


def test_fingerprints_survive_lines_inserted_above(project, invoke) -> None:
    path = project.write("train.py", PROGRAM)
    before = {(r["ruleId"], r["partialFingerprints"]["devlint/v1"]) for r in sarif(invoke)["runs"][0]["results"]}
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("def fit():", "# a comment\n\n\ndef fit():"), encoding="utf-8")
    results = sarif(invoke)["runs"][0]["results"]
    after = {(r["ruleId"], r["partialFingerprints"]["devlint/v1"]) for r in results}
    assert after == before
    lines = {r["ruleId"]: r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in results}
    assert lines["DEV107"] == 16  # the finding moved; its fingerprint did not


def test_identical_statements_get_distinct_fingerprints(project, invoke) -> None:
    project.write("train.py", PROGRAM.replace("        x.to(device)\n", "        x.to(device)\n        x.to(device)\n"))
    results = sarif(invoke)["runs"][0]["results"]
    prints = [r["partialFingerprints"]["devlint/v1"] for r in results if r["ruleId"] == "DEV107"]
    assert len(prints) == 2 and len(set(prints)) == 2
    assert {p.rsplit(":", 1)[0] for p in prints} == {prints[0].rsplit(":", 1)[0]}
