"""`devlint check` end to end with the real analysis: small buggy programs, real findings."""

from __future__ import annotations

import json
import re

BOOT = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
"""

DISCARDED_TO = BOOT + """\
model = nn.Linear(4, 2)
model.to(device)
x = torch.randn(8, 4)
x.to(device)
out = model(x)
"""

LOADER_TO = BOOT + """\
dataset = TensorDataset(torch.randn(10, 4), torch.randn(10, 2))
loader = DataLoader(dataset, batch_size=2)
loader = loader.to(device)
"""

CLEAN = BOOT + """\
model = nn.Linear(4, 2).to(device)
x = torch.randn(8, 4).to(device)
out = model(x)
print(out.sum().item())
"""


def codes_at(document: dict, path: str) -> set[tuple[str, int]]:
    return {(f["code"], f["line"]) for f in document["findings"] if f["path"] == path}


def test_discarded_tensor_move_is_dev107(project, invoke):
    project.write("train.py", DISCARDED_TO)
    out = invoke("check", "--format", "json")
    assert out.exit_code == 1, out.stderr
    document = json.loads(out.stdout)
    assert ("DEV107", 9) in codes_at(document, "train.py")
    # `model.to(device)` as a statement is an in-place Module.to: never flagged
    assert ("DEV107", 7) not in codes_at(document, "train.py")


def test_moving_a_dataloader_is_dev108(project, invoke):
    project.write("data.py", LOADER_TO)
    out = invoke("check", "--format", "concise", "data.py")
    assert out.exit_code == 1, out.stderr
    assert any(line.startswith("data.py:8:") and " DEV108 " in line for line in out.stdout.splitlines())


def test_clean_program_passes(project, invoke):
    project.write("train.py", CLEAN)
    out = invoke("check")
    assert out.exit_code == 0, out.stdout + out.stderr
    assert out.stdout == ""
    assert out.stderr.strip() == "All checks passed (1 file)."


def test_noqa_silences_a_real_finding(project, invoke):
    project.write("train.py", DISCARDED_TO.replace("x.to(device)\n", "x.to(device)  # noqa: DEV107\n"))
    document = json.loads(invoke("check", "--format", "json").stdout)
    assert not any(f["code"] == "DEV107" for f in document["findings"])


def test_syntax_error_among_good_files(project, invoke):
    project.write("a_clean.py", CLEAN)
    project.write("b_broken.py", "def train(model, loader:\n    pass\n")
    project.write("c_buggy.py", DISCARDED_TO)
    out = invoke("check", "--format", "json")
    assert out.exit_code == 1
    document = json.loads(out.stdout)
    assert document["files_checked"] == 3
    broken = [f for f in document["findings"] if f["path"] == "b_broken.py"]
    assert [f["code"] for f in broken] == ["DEV000"]
    assert ("DEV107", 9) in codes_at(document, "c_buggy.py")
    assert codes_at(document, "a_clean.py") == set()


def test_non_utf8_file_among_good_files(project, invoke):
    project.write("legacy.py", b"# comment\nname = 'caf\xe9'\n")
    project.write("train.py", DISCARDED_TO)
    out = invoke("check", "--format", "json")
    assert out.exit_code == 1
    document = json.loads(out.stdout)
    assert codes_at(document, "legacy.py") == {("DEV000", 2)}
    assert ("DEV107", 9) in codes_at(document, "train.py")


def test_latin1_file_with_a_coding_cookie_is_analysed(project, invoke):
    source = "# -*- coding: latin-1 -*-\n# café\n" + DISCARDED_TO
    project.write("train.py", source.encode("latin-1"))
    document = json.loads(invoke("check", "--format", "json").stdout)
    assert ("DEV107", 11) in codes_at(document, "train.py")


def test_notebook_finding_is_reported_in_its_cell(project, invoke):
    cells = [BOOT, "%matplotlib inline\nmodel = nn.Linear(4, 2).to(device)\nx = torch.randn(8, 4)\n", "x.to(device)\n"]
    project.write(
        "explore.ipynb",
        json.dumps(
            {
                "nbformat": 4,
                "nbformat_minor": 5,
                "metadata": {},
                "cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "source": c} for c in cells],
            }
        ),
        dedent=False,
    )
    document = json.loads(invoke("check", "--format", "json").stdout)
    found = [(f["code"], f.get("cell"), f["line"]) for f in document["findings"]]
    assert ("DEV107", 3, 1) in found


def test_text_report_quotes_the_source(project, invoke):
    project.write("train.py", DISCARDED_TO)
    out = invoke("check")
    assert out.exit_code == 1
    assert "train.py:9:1 DEV107 [error]" in out.stdout
    assert re.search(r"^  >\s+9 \| x\.to\(device\)$", out.stdout, re.MULTILINE)


def test_the_console_command_delivers_its_whole_report_before_it_ends(tmp_path):
    """`devlint check` ends without the interpreter's teardown (cli.main): everything it wrote
    must still arrive, through a pipe (a report far larger than the pipe's buffer) and into
    `-o FILE`, with the exit code of the findings."""
    import os
    import subprocess
    import sys

    for index in range(60):
        (tmp_path / f"train_{index}.py").write_text(DISCARDED_TO, encoding="utf-8")
    command = [sys.executable, "-m", "devlint", "check", ".", "--format", "json", "--no-cache", "-j", "1"]
    env = {**os.environ, "NO_COLOR": "1"}
    piped = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=env)
    assert piped.returncode == 1, piped.stderr
    assert len(piped.stdout) > 65_536
    report = json.loads(piped.stdout)
    assert report["files_checked"] == 60
    assert {f["path"] for f in report["findings"] if f["code"] == "DEV107"} == {f"train_{i}.py" for i in range(60)}
    assert "60 files" in piped.stderr
    written = subprocess.run(command + ["-o", "report.json"], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert written.returncode == 1 and written.stdout == ""
    assert json.loads((tmp_path / "report.json").read_text(encoding="utf-8")) == report


def test_a_profiled_check_still_writes_its_profile(tmp_path):
    """The teardown is skipped only when nothing waits for the exit: a profiler (or a coverage
    tracer) writes its data then, and `python -m cProfile -m devlint check` is how speed work
    starts."""
    import subprocess
    import sys

    (tmp_path / "train.py").write_text(DISCARDED_TO, encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "cProfile", "-o", "check.prof", "-m", "devlint", "check",
                           "train.py", "--no-cache", "--format", "concise"], capture_output=True, text=True,
                          cwd=tmp_path)
    assert "DEV107" in done.stdout, done.stderr  # (cProfile itself swallows the exit code)
    assert (tmp_path / "check.prof").stat().st_size > 0
