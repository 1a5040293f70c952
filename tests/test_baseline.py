"""Baselines: today's findings recorded, only new ones reported, whatever moved in between."""

from __future__ import annotations

import json

import pytest

from devlint.baseline import normalise_statement

from test_ranking import TRAIN_SCRIPT

NEW_BUG = """

def calibrate(model):
    scores = []
    for x, y in val_loader:
        x.to(device)
        scores.append(model(x))
    return scores
"""


def check_json(invoke, *args: str) -> tuple[int, list[dict]]:
    out = invoke("check", "--format", "json", *args)
    return out.exit_code, json.loads(out.stdout)["findings"]


def test_a_baseline_survives_inserted_lines_and_still_catches_a_new_bug(project, invoke) -> None:
    path = project.write("train.py", TRAIN_SCRIPT)
    code, today = check_json(invoke)
    assert code == 1 and len(today) == 2

    written = invoke("check", "--write-baseline", "devlint-baseline.json")
    assert written.exit_code == 0
    assert written.stdout == ""
    assert "Recorded 2 findings in devlint-baseline.json" in written.stderr

    # unrelated edits above the findings: every line number changes
    text = path.read_text(encoding="utf-8")
    text = text.replace("import torch\n", "import os\nimport torch\n\nSEED = int(os.environ.get('SEED', 0))\n", 1)
    text = text.replace("def train(", "def helper():\n    return SEED\n\n\ndef train(", 1)
    path.write_text(text, encoding="utf-8")
    code, moved = check_json(invoke)
    assert [f["line"] for f in moved] != [f["line"] for f in today]
    assert len(moved) == 2

    code, remaining = check_json(invoke, "--baseline", "devlint-baseline.json")
    assert (code, remaining) == (0, [])
    quiet = invoke("check", "--baseline", "devlint-baseline.json")
    assert "2 findings recorded in devlint-baseline.json not shown." in quiet.stderr

    # a new bug is still reported, ranked from 1
    text = text.replace("\n\ndef main():", NEW_BUG + "\n\ndef main():", 1)
    text = text.replace("        evaluate(model)\n", "        evaluate(model)\n        calibrate(model)\n", 1)
    path.write_text(text, encoding="utf-8")
    lines = text.splitlines()
    first = lines.index("def calibrate(model):") + 1
    last = lines.index("    return scores") + 1
    code, new = check_json(invoke, "--baseline", "devlint-baseline.json")
    assert code == 1
    assert "DEV107" in {f["code"] for f in new}
    assert all(first <= f["line"] <= last for f in new), new
    assert [f["rank"] for f in new] == list(range(1, len(new) + 1))


def test_copies_of_a_recorded_statement_are_counted(project, invoke) -> None:
    body = "import torch\ndevice = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
    body += "x = torch.ones(2)\nx.to(device)\n"
    path = project.write("a.py", body)
    assert invoke("check", "--write-baseline", "base.json").exit_code == 0
    recorded = json.loads((project.root / "base.json").read_text())
    assert [(e["code"], e["count"]) for e in recorded["findings"]] == [("DEV107", 1)]

    path.write_text(body + "x.to(device)\n", encoding="utf-8")  # the same statement again
    code, new = check_json(invoke, "--baseline", "base.json")
    assert code == 1
    assert [(f["code"], f["line"]) for f in new] == [("DEV107", 5)]  # the copy below is the new one


def test_keys_ignore_layout_but_not_meaning() -> None:
    same = [
        "loss = criterion(model(x), y)",
        "loss=criterion( model(x),y )  # a comment",
        "loss = criterion(\n    model(x),\n    y,\n)",
    ]
    assert len({normalise_statement(text) for text in same}) == 1
    assert normalise_statement("x = torch.load('a.pt')") == normalise_statement('x = torch.load("a.pt")')
    assert normalise_statement("loss = criterion(model(x), z)") != normalise_statement(same[0])
    assert normalise_statement("return not x") == "return not x"


def test_paths_are_relative_to_the_baseline_so_any_working_directory_works(project, invoke, monkeypatch) -> None:
    project.write("src/train.py", TRAIN_SCRIPT)
    assert invoke("check", "src", "--write-baseline", "ci/baseline.json").exit_code == 0
    recorded = json.loads((project.root / "ci" / "baseline.json").read_text())
    assert {e["path"] for e in recorded["findings"]} == {"../src/train.py"}
    monkeypatch.chdir(project.root / "src")
    code, remaining = check_json(invoke, "train.py", "--baseline", "../ci/baseline.json")
    assert (code, remaining) == (0, [])


def test_the_same_statement_in_another_function_is_new(project, invoke) -> None:
    body = (
        "import torch\ndevice = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
        "def a():\n    x = torch.ones(2)\n    x.to(device)\n"
    )
    path = project.write("a.py", body + "a()\n")
    invoke("check", "--write-baseline", "base.json")
    path.write_text(body + "def b():\n    x = torch.ones(2)\n    x.to(device)\na()\nb()\n", encoding="utf-8")
    code, new = check_json(invoke, "--baseline", "base.json")
    assert [(f["code"], f["line"]) for f in new] == [("DEV107", 8)]


def test_parse_errors_are_never_baselined(project, invoke) -> None:
    project.write("broken.py", "def f(:\n    pass\n")
    invoke("check", "--write-baseline", "base.json")
    assert json.loads((project.root / "base.json").read_text())["findings"] == []
    code, findings = check_json(invoke, "--baseline", "base.json")
    assert code == 1 and [f["code"] for f in findings] == ["DEV000"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read baseline"),
        ("{not json", "is not valid JSON"),
        ('{"findings": []}', "is not a devlint baseline"),
        ('{"devlint-baseline": 1, "findings": [{"path": "a.py"}]}', "entry 1 needs string fields"),
    ],
)
def test_a_bad_baseline_is_a_usage_error(project, invoke, content, message) -> None:
    project.write("a.py", "x = 1\n")
    if content is not None:
        project.write("base.json", content)
    out = invoke("check", "--baseline", "base.json")
    assert out.exit_code == 2
    assert message in out.stderr


def test_baseline_and_write_baseline_together_is_a_usage_error(project, invoke) -> None:
    project.write("a.py", "x = 1\n")
    project.write("base.json", '{"devlint-baseline": 1, "findings": []}')
    assert invoke("check", "--baseline", "base.json", "--write-baseline", "other.json").exit_code == 2


def test_writing_the_baseline_for_one_file_keeps_the_other_files_entries(project, invoke) -> None:
    project.write("a.py", TRAIN_SCRIPT)
    project.write("b.py", TRAIN_SCRIPT)
    assert invoke("check", "--write-baseline", "base.json", ".").exit_code == 0
    recorded = json.loads((project.root / "base.json").read_text())["findings"]
    assert {entry["path"] for entry in recorded} == {"a.py", "b.py"}
    # b.py gets a new bug, and its entries are written again: a.py's stay as they were
    project.write("b.py", TRAIN_SCRIPT + NEW_BUG)
    out = invoke("check", "--write-baseline", "base.json", "b.py")
    assert "kept" in out.stderr
    again = json.loads((project.root / "base.json").read_text())["findings"]
    assert [e for e in again if e["path"] == "a.py"] == [e for e in recorded if e["path"] == "a.py"]
    assert len([e for e in again if e["path"] == "b.py"]) > len([e for e in recorded if e["path"] == "b.py"])
    code, found = check_json(invoke, "--baseline", "base.json", ".")
    assert (code, found) == (0, [])
    # a file that is gone is dropped from the baseline the next time it is written
    (project.root / "a.py").unlink()
    invoke("check", "--write-baseline", "base.json", "b.py")
    assert {e["path"] for e in json.loads((project.root / "base.json").read_text())["findings"]} == {"b.py"}
