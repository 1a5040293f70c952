"""Notebook findings in SARIF and GitHub reports point at the .ipynb file's own lines; --diff of
a notebook is one diff per changed cell."""

from __future__ import annotations

import json

from buggy_sources import DISCARDED

from devlint.notebook_lines import raw_position

HEAD, LOOP = DISCARDED.split("for (x,) in loader:\n")


def _notebook(*, list_sources: bool = True) -> dict:
    cells = [HEAD, "for (x,) in loader:\n" + LOOP]
    return {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": ["# Training\n"]},
            *({"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
               "source": source.splitlines(keepends=True) if list_sources else source} for source in cells),
        ],
        "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def _write(project, **kwargs) -> str:
    raw = json.dumps(_notebook(**kwargs), indent=1)
    project.write("train.ipynb", raw)
    return raw


def test_raw_position_finds_each_source_line(project) -> None:
    raw = _write(project)
    lines = raw.splitlines()
    row, col = raw_position("train.ipynb", 2, 2, 5)  # code cell 2, line 2 (`    x.to(device)`), column 5
    assert lines[row - 1][col - 1:].startswith("x.to(device)")
    row, col = raw_position("train.ipynb", 1, 1, 1)
    assert lines[row - 1][col - 1:].startswith("import torch")
    assert raw_position("train.ipynb", 9, 1, 1) is None


def test_raw_position_of_a_single_string_source(project) -> None:
    raw = _write(project, list_sources=False)
    row, _ = raw_position("train.ipynb", 2, 2, 5)
    assert '"for (x,) in loader:\\n    x.to(device)' in raw.splitlines()[row - 1]


def test_sarif_regions_are_lines_of_the_notebook_file(project, invoke) -> None:
    raw = _write(project)
    document = json.loads(invoke("check", "--no-cache", "--format", "sarif", "train.ipynb").stdout)
    results = {r["ruleId"]: r for r in document["runs"][0]["results"]}
    region = results["DEV107"]["locations"][0]["physicalLocation"]["region"]
    line = raw.splitlines()[region["startLine"] - 1]
    assert line[region["startColumn"] - 1:].startswith("x.to(device)")
    assert results["DEV107"]["properties"]["cell"] == 2


def test_github_annotation_has_the_notebook_files_line(project, invoke) -> None:
    raw = _write(project)
    out = invoke("check", "--no-cache", "--format", "github", "train.ipynb").stdout
    (annotation,) = [line for line in out.splitlines() if "title=DEV107" in line]
    properties = dict(part.split("=", 1) for part in annotation.split(" ", 1)[1].split("::")[0].split(","))
    assert "x.to(device)" in raw.splitlines()[int(properties["line"]) - 1]
    assert "cell 2, line 2: " in annotation


def test_diff_of_a_notebook_is_per_cell(project, invoke) -> None:
    _write(project)
    out = invoke("check", "--no-cache", "--diff", "train.ipynb")
    assert out.exit_code == 1
    assert "--- a/train.ipynb:cell 2\n+++ b/train.ipynb:cell 2\n" in out.stdout
    assert "-    x.to(device)\n+    x = x.to(device)\n" in out.stdout
    assert "cell 1" not in out.stdout  # unchanged cells are not in the diff
