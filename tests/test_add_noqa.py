"""`check --add-noqa`: every reported line gets `# noqa: CODE`, the next check reports nothing,
a second run changes nothing, and existing comments are kept (an existing `# noqa: X` gets the
codes added). On the real engine, for a script, a notebook and a multi-file project."""

from __future__ import annotations

import json

from devlint.add_noqa import add_to_text
from devlint.findings import Finding, Severity

SCRIPT = '''\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 4).to(device)
loader = DataLoader(TensorDataset(torch.randn(8, 4)), batch_size=2)
for (x,) in loader:
    x.to(device)  # type: ignore[attr-defined]
    out = model(x)  # noqa: E501
'''

LAYERS = '''\
import torch
import torch.nn as nn


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        scale = torch.ones(8)
        return self.proj(x) * scale
'''

TRAIN = '''\
import torch
from layers import Head

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
head = Head().to(device)
batch = torch.randn(4, 8)
print(head(batch))
'''


def finding(code: str, line: int, statement: tuple[int, int] | None = None) -> Finding:
    return Finding(code, "name", Severity.ERROR, "t.py", line, 1, line, 2, "message", statement_lines=statement)


def test_adopting_a_script_keeps_its_comments_and_is_idempotent(project, invoke) -> None:
    project.write("train.py", SCRIPT)
    before = invoke("check", "--no-cache", "--format", "concise")
    assert before.exit_code == 1 and len(before.stdout.splitlines()) == 2
    out = invoke("check", "--add-noqa")
    assert out.exit_code == 0 and "Added 2 noqa directives in 1 file." in out.stderr
    text = (project.root / "train.py").read_text()
    assert "    x.to(device)  # type: ignore[attr-defined]  # noqa: DEV107\n" in text
    assert "    out = model(x)  # noqa: E501, DEV101\n" in text
    after = invoke("check", "--no-cache")
    assert after.exit_code == 0 and after.stdout == ""
    again = invoke("check", "--add-noqa")
    assert "Added 0 noqa directives" in again.stderr and (project.root / "train.py").read_text() == text


def test_a_multi_file_project(project, invoke) -> None:
    project.write("proj_project/layers.py", LAYERS)
    project.write("proj_project/train.py", TRAIN)
    before = invoke("check", "--no-cache", "--format", "json", "proj_project")
    found = json.loads(before.stdout)["findings"]
    assert found, before.stderr
    invoke("check", "--add-noqa", "proj_project")
    assert invoke("check", "--no-cache", "proj_project").exit_code == 0
    for item in found:
        line = (project.root / item["path"]).read_text().splitlines()[item["line"] - 1]
        assert f"# noqa: {item['code']}" in line or item["code"] in line.split("# noqa:")[1]


def test_a_notebook_cell_by_cell(project, invoke) -> None:
    cells = [SCRIPT.split("for (x,)")[0], "%time 1\nfor (x,)" + SCRIPT.split("for (x,)")[1]]
    document = {"nbformat": 4, "nbformat_minor": 5, "metadata": {"language_info": {"name": "python"}},
                "cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# notes"]}] +
                         [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                           "source": cell.splitlines(keepends=True)} for cell in cells]}
    project.write("explore.ipynb", json.dumps(document, indent=1))
    assert invoke("check", "--no-cache", "explore.ipynb").exit_code == 1
    out = invoke("check", "--add-noqa", "explore.ipynb")
    assert "Added 2 noqa directives in 1 file." in out.stderr
    written = json.loads((project.root / "explore.ipynb").read_text())
    assert written["cells"][0]["source"] == ["# notes"]  # other cells untouched
    second = "".join(written["cells"][2]["source"])
    assert second.startswith("%time 1\n") and "x.to(device)  # type: ignore[attr-defined]  # noqa: DEV107" in second
    assert invoke("check", "--no-cache", "explore.ipynb").exit_code == 0


def test_a_clean_twin_is_left_alone(project, invoke) -> None:
    clean = SCRIPT.replace("    x.to(device)", "    x = x.to(device)")
    project.write("train.py", clean)
    out = invoke("check", "--add-noqa")
    assert "Added 0 noqa directives in 0 files." in out.stderr
    assert (project.root / "train.py").read_text() == clean


def test_the_comment_goes_where_a_comment_can_end_a_line() -> None:
    text = ('s = """a\nb""" + w\n'      # a finding on line 1 of a multi-line string: line 2
            "q = 1 + \\\n    2\n"        # before a backslash continuation: the next line
            "y = 1  # noqa\n"           # a bare noqa silences everything already
            "z = 2  # noqa: DEV101\n")  # already there
    findings = [finding("DEV101", 1, (1, 2)), finding("DEV107", 3, (3, 4)), finding("DEV101", 5),
                finding("DEV101", 6), finding("DEV000", 6), finding("DEV001", 6)]
    out, changed = add_to_text(text, findings)
    assert changed == 2
    assert out == ('s = """a\nb""" + w  # noqa: DEV101\n'
                   "q = 1 + \\\n    2  # noqa: DEV107\n"
                   "y = 1  # noqa\n"
                   "z = 2  # noqa: DEV101\n")


def test_add_noqa_refuses_what_it_cannot_combine_with(project, invoke) -> None:
    project.write("train.py", SCRIPT)
    for extra in (["--fix"], ["--diff"], ["--write-baseline", "b.json"]):
        out = invoke("check", "--add-noqa", *extra)
        assert out.exit_code == 2 and "--add-noqa" in out.stderr
    assert (project.root / "train.py").read_text() == SCRIPT


def test_unchanged_cells_keep_their_source_as_written(project, invoke) -> None:
    """Only the cells that get a comment are rewritten: an empty cell saved as `[""]` stays so."""
    cells = [[""], SCRIPT.splitlines(keepends=True)]
    document = {"nbformat": 4, "nbformat_minor": 5, "metadata": {},
                "cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                           "source": source} for source in cells]}
    project.write("nb.ipynb", json.dumps(document, indent=1))
    invoke("check", "--add-noqa", "nb.ipynb")
    written = json.loads((project.root / "nb.ipynb").read_text())
    assert written["cells"][0]["source"] == [""]
    assert "# noqa: DEV107" in "".join(written["cells"][1]["source"])
