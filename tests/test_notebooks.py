"""Notebooks: code cells analysed in order as one program, findings placed by cell and line.

Each `tests/fixtures/notebooks/<name>.ipynb` has a sidecar `<name>.expect` with one
`cell:line:CODE` per expected finding (cell = 1-based code-cell number, as the JSON report's
`cell` field counts; line = line inside that cell, magics included). The notebooks carry what
real ones do: `%matplotlib inline`, `!pip install`, `%%time` and `%%bash` cells, help lines,
markdown cells and stored outputs.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

NOTEBOOKS_DIR = Path(__file__).parent / "fixtures" / "notebooks"
NOTEBOOKS = sorted(NOTEBOOKS_DIR.glob("*.ipynb"))


def expected(notebook: Path) -> set[tuple[int, int, str]]:
    found = set()
    for raw in notebook.with_suffix(".expect").read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            cell, number, code = line.split(":")
            found.add((int(cell), int(number), code))
    return found


def code_cells(notebook: Path) -> list[list[str]]:
    document = json.loads(notebook.read_text(encoding="utf-8"))
    return [("".join(c["source"])).split("\n") for c in document["cells"] if c["cell_type"] == "code"]


def json_findings(invoke, *args: str) -> list[dict]:
    outcome = invoke("check", *args, "--format", "json", "--select", "ALL", "--exit-zero")
    assert outcome.exit_code == 0, outcome.stderr
    return json.loads(outcome.stdout)["findings"]


def _notebook(*cells: tuple[str, str]) -> str:
    return json.dumps({
        "cells": [
            {"cell_type": kind, "metadata": {}, "source": textwrap.dedent(src).lstrip("\n"),
             **({"outputs": [], "execution_count": None} if kind == "code" else {})}
            for kind, src in cells
        ],
        "metadata": {"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    })


def test_there_are_enough_notebooks() -> None:
    assert len(NOTEBOOKS) >= 6
    assert sum(1 for nb in NOTEBOOKS if not expected(nb)) >= 2, "clean notebooks"
    assert any(len({cell for cell, _, _ in expected(nb)}) == 1 and len(code_cells(nb)) >= 4
               for nb in NOTEBOOKS if expected(nb)), "a bug that spans cells"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[nb.stem for nb in NOTEBOOKS])
def test_fixture_is_a_valid_nbformat4_notebook(notebook: Path) -> None:
    document = json.loads(notebook.read_text(encoding="utf-8"))
    assert document["nbformat"] == 4 and isinstance(document["nbformat_minor"], int)
    assert document["metadata"]["kernelspec"]["language"] == "python"
    for cell in document["cells"]:
        assert cell["cell_type"] in ("code", "markdown", "raw")
        assert isinstance(cell["metadata"], dict)
        assert isinstance(cell["source"], (str, list))
        if cell["cell_type"] == "code":
            assert isinstance(cell["outputs"], list) and "execution_count" in cell
    # every expectation names a real line of a real code cell
    cells = code_cells(notebook)
    for cell, line, _ in expected(notebook):
        assert 1 <= cell <= len(cells) and 1 <= line <= len(cells[cell - 1])


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[nb.stem for nb in NOTEBOOKS])
def test_findings_point_to_cell_and_line(notebook: Path, invoke, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(NOTEBOOKS_DIR)
    findings = json_findings(invoke, notebook.name)
    assert all(f["path"] == notebook.name for f in findings)
    got = {(f["cell"], f["line"], f["code"]) for f in findings}
    assert got == expected(notebook)
    cells = code_cells(notebook)
    for finding in findings:
        source_line = cells[finding["cell"] - 1][finding["line"] - 1]
        assert 1 <= finding["column"] <= len(source_line)
        assert finding["end_line"] >= finding["line"]
        # messages name lines as the notebook shows them, never lines of the joined cells
        for number, of_cell in re.findall(r"\bline (\d+)(?: of cell (\d+))?", finding["message"]):
            cell = int(of_cell) if of_cell else finding["cell"]
            assert 1 <= int(number) <= len(cells[cell - 1]), finding["message"]


def test_bug_spanning_cells_in_every_report_form(invoke, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(NOTEBOOKS_DIR)
    [finding] = json_findings(invoke, "bug_spans_cells.ipynb")
    assert (finding["cell"], finding["line"], finding["code"]) == (4, 7, "DEV101")
    assert "at line 3 of cell 3" in finding["message"]  # the loader
    assert "moved at line 3 of cell 2" in finding["message"]  # the model

    concise = invoke("check", "bug_spans_cells.ipynb", "--format", "concise").stdout
    assert concise.startswith("bug_spans_cells.ipynb:cell 4:7:")

    text = invoke("check", "bug_spans_cells.ipynb", "--format", "text").stdout
    assert "bug_spans_cells.ipynb:cell 4:7" in text
    assert "loss = F.cross_entropy(logits, y)" in text  # quoted from the cell itself


def test_a_syntax_error_is_placed_in_its_cell(project, invoke) -> None:
    project.write("nb.ipynb", _notebook(
        ("code", "%matplotlib inline\nimport torch\n"),
        ("markdown", "text"),
        ("code", "x = torch.ones(2)\n"),
        ("code", "!ls\ny = (x +\nprint(y)\n"),
    ))
    [finding] = json_findings(invoke, "nb.ipynb")
    assert finding["code"] == "DEV000" and finding["cell"] == 3 and finding["line"] in (2, 3)


def test_line_magics_inside_a_python_cell_magic_and_automagics_are_ipython(project, invoke) -> None:
    """`%%capture` runs its body as IPython code (its `%pip` line too), and automagic runs `cd
    repo` or `pip install x` without their `%`: none is a syntax error, and the code around them
    is checked (the discarded move below is still found). `cd = 1`-style lines stay Python."""
    project.write("nb.ipynb", _notebook(
        ("code", "%%capture\n%pip install torch\nimport torch\n"),
        ("code", "cd first-order-model\npip install -q einops\n"),
        ("code", "ls = [1, 2]\nx = torch.ones(2)\ndevice = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
                 "x.to(device)\n"),
    ))
    found = json_findings(invoke, "nb.ipynb")
    assert [(f["code"], f["cell"], f["line"]) for f in found] == [("DEV107", 3, 4)]


def test_suppression_comment_inside_a_cell(project, invoke) -> None:
    cells = (
        ("code", """
            import torch
            device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            model = torch.nn.Linear(3, 1).to(device)
        """),
        ("code", """
            %time
            x = torch.randn(2, 3)
            out = model(x)
        """),
    )
    project.write("nb.ipynb", _notebook(*cells))
    assert [(f["cell"], f["line"]) for f in json_findings(invoke, "nb.ipynb")] == [(2, 2)]
    silenced = (cells[0], ("code", cells[1][1].replace("torch.randn(2, 3)", "torch.randn(2, 3)  # noqa: DEV105")))
    project.write("nb.ipynb", _notebook(*silenced))
    assert json_findings(invoke, "nb.ipynb") == []


def test_notebook_uses_the_project_files_beside_it(project, invoke) -> None:
    project.write("models.py", """\
        import torch
        import torch.nn as nn


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)
                self.mask = torch.ones(4)

            def forward(self, x):
                return self.fc(x) * self.mask
    """)
    project.write("explore.ipynb", _notebook(
        ("code", "%load_ext autoreload\n%autoreload 2\nimport torch\nfrom models import Net\n"),
        ("code", "device = 'cuda' if torch.cuda.is_available() else 'cpu'\nnet = Net().to(device)\n"),
        ("code", "net(torch.randn(3, 4, device=device))\n"),
    ))
    findings = json_findings(invoke, "explore.ipynb", "models.py")
    assert [(f["path"], f.get("cell"), f["line"], f["code"]) for f in findings] == [("models.py", None, 9, "DEV104")]
    # the notebook alone: models.py is read, not reported (it was not asked about)
    assert json_findings(invoke, "explore.ipynb") == []


def test_stdin_notebook(project, invoke) -> None:
    source = (NOTEBOOKS_DIR / "bug_spans_cells.ipynb").read_text(encoding="utf-8")
    outcome = invoke("check", "--stdin-filename", "nb.ipynb", "--format", "json", input=source)
    findings = json.loads(outcome.stdout)["findings"]
    assert [(f["path"], f["cell"], f["line"]) for f in findings] == [("nb.ipynb", 4, 7)]
