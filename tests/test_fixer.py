"""The fixer: golden before/after pairs for every fix, idempotence, and never breaking a file."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from devlint.cli import cli
from devlint.engine import check_text
from devlint.findings import Fix
from devlint.fix.apply import apply_edits, fix_source
from devlint.rules import all_rules

GOLDEN = Path(__file__).parent / "fix_golden"
PAIRS = sorted(GOLDEN.glob("*.before.py"))
ALL = frozenset(r.code for r in all_rules())


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def _unsafe(name: str) -> bool:
    return ".unsafe." in name or name.startswith("unsafe_")


@pytest.mark.parametrize("before", PAIRS, ids=lambda p: p.name.split(".")[0])
def test_golden_fix_pair(before: Path, tmp_path: Path) -> None:
    after = before.with_name(before.name.replace(".before.py", ".after.py"))
    target = tmp_path / "script.py"
    target.write_text(before.read_text())
    flags = ["--fix", "--unsafe-fixes"] if "unsafe" in before.name else ["--fix"]
    _run("check", *flags, "--select", "ALL", "--no-cache", str(target))
    assert target.read_text() == after.read_text()
    # idempotent: a second run changes nothing
    _run("check", *flags, "--select", "ALL", "--no-cache", str(target))
    assert target.read_text() == after.read_text()
    # the fixed program has no finding of the fixed codes any more
    code = before.name.split("_")[0].upper()
    remaining = {f.code for f in check_text(after.read_text(), str(target), enabled=ALL)}
    assert code not in remaining


def test_every_rule_with_a_fix_has_a_golden_pair() -> None:
    fixable = {r.code for r in all_rules() if r.fix.value != "none"}
    covered = {p.name.split("_")[0].upper() for p in PAIRS}
    assert fixable <= covered, f"rules with fixes but no golden pair: {sorted(fixable - covered)}"


def test_diff_prints_and_changes_nothing(tmp_path: Path) -> None:
    before = GOLDEN / "dev107_discarded_to.before.py"
    target = tmp_path / "script.py"
    target.write_text(before.read_text())
    code, out = _run("check", "--diff", "--no-cache", str(target))
    assert code == 1
    assert "-    inputs.to(device)" in out and "+    inputs = inputs.to(device)" in out
    assert target.read_text() == before.read_text()


def test_fix_that_breaks_the_file_leaves_it_byte_for_byte(tmp_path: Path) -> None:
    text = "x = 1\nprint(x)\n"
    findings = check_text("import torch\nx = torch.zeros(2)\nx.cuda()\n", "t.py", enabled=ALL)
    assert findings
    broken = findings[0].with_(fix=Fix("break it", True, ((1, 1, 1, 1, "def ("),)))
    result = fix_source("t.py", text, [broken], lambda t: [], unsafe=False)
    assert result.fixed == text and not result.changed
    assert result.refused and "parse" in result.refused


def test_fix_that_adds_a_finding_is_refused() -> None:
    text = "import torch\nx = torch.zeros(2)\n"
    finding = check_text("import torch\nx = torch.zeros(2)\nx.cuda()\n", "t.py", enabled=ALL)[0]
    bad = finding.with_(fix=Fix("add a bug", True, ((3, 1, 3, 1, "x.cuda()\n"),)))
    result = fix_source("t.py", text, [bad], lambda t: check_text(t, "t.py", enabled=ALL), unsafe=False)
    assert not result.changed and result.refused and "introduce" in result.refused


def test_unsafe_fixes_need_the_flag() -> None:
    finding = check_text("import torch\nx = torch.zeros(2)\nx.cuda()\n", "t.py", enabled=ALL)[0]
    unsafe = finding.with_(fix=Fix("unsafe", False, ((1, 1, 1, 1, "# changed\n"),)))
    text = "import torch\n"
    assert not fix_source("t.py", text, [unsafe], lambda t: [], unsafe=False).changed
    assert fix_source("t.py", text, [unsafe], lambda t: [], unsafe=True).changed


def test_apply_edits_keeps_crlf_and_skips_overlaps() -> None:
    text = "a = 1\r\nb = 2\r\n"
    assert apply_edits(text, [(2, 1, 2, 1, "c = 3\n")]) == "a = 1\r\nc = 3\r\nb = 2\r\n"
    assert apply_edits(text, [(1, 1, 1, 6, "x"), (1, 3, 1, 4, "y")]) in ("x\r\nb = 2\r\n", "a y 1\r\nb = 2\r\n")


@pytest.mark.parametrize("encoding,bom,newline", [("utf-8", False, "\n"), ("utf-8", True, "\r\n"),
                                                  ("latin-1", False, "\n")])
def test_written_file_keeps_encoding_bom_newlines_and_mode(tmp_path: Path, encoding: str, bom: bool,
                                                          newline: str) -> None:
    source = (GOLDEN / "dev107_discarded_to.before.py").read_text()
    expected = (GOLDEN / "dev107_discarded_to.after.py").read_text()
    if encoding == "latin-1":
        source = "# -*- coding: latin-1 -*-\n# caf\u00e9\n" + source
        expected = "# -*- coding: latin-1 -*-\n# caf\u00e9\n" + expected
    data = source.replace("\n", newline).encode(encoding)
    if bom:
        data = b"\xef\xbb\xbf" + data
    target = tmp_path / "script.py"
    target.write_bytes(data)
    os.chmod(target, 0o750)
    _run("check", "--fix", "--no-cache", str(target))
    out = target.read_bytes()
    assert out.startswith(b"\xef\xbb\xbf") == bom
    body = out[3:] if bom else out
    assert body.decode(encoding) == expected.replace("\n", newline)
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o750
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".devlint-")]


def test_notebook_fixed_cell_by_cell_keeping_outputs(tmp_path: Path) -> None:
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Training\n"]},
        {"cell_type": "code", "metadata": {"tags": ["setup"]}, "execution_count": 1,
         "outputs": [{"output_type": "stream", "name": "stdout", "text": ["ok\n"]}],
         "source": ["%matplotlib inline\n", "import torch\n", "import torch.nn as nn\n",
                    "from torch.utils.data import DataLoader, TensorDataset\n",
                    "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n",
                    "model = nn.Linear(8, 2).to(device)\n"]},
        {"cell_type": "code", "metadata": {}, "execution_count": 2, "outputs": [],
         "source": ["loader = DataLoader(TensorDataset(torch.randn(16, 8), torch.randint(0, 2, (16,))))\n",
                    "for x, y in loader:\n", "    x.to(device)\n", "    y = y.to(device)\n",
                    "    out = model(x)"]},
    ]
    doc = {"cells": cells, "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
           "nbformat": 4, "nbformat_minor": 5}
    target = tmp_path / "train.ipynb"
    target.write_text(json.dumps(doc, indent=1) + "\n")
    _run("check", "--fix", "--no-cache", str(target))
    fixed = json.loads(target.read_text())
    assert fixed["cells"][1] == cells[1]
    assert fixed["cells"][0] == cells[0]
    assert "".join(fixed["cells"][2]["source"]) == (
        "loader = DataLoader(TensorDataset(torch.randn(16, 8), torch.randint(0, 2, (16,))))\n"
        "for x, y in loader:\n    x = x.to(device)\n    y = y.to(device)\n    out = model(x)")
    assert fixed["metadata"] == doc["metadata"]


CONDITIONAL_MOVE = """\
import argparse

import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--use_cuda", action="store_true")
args = parser.parse_args()

teacher = nn.Linear(8, 8)
student = nn.Linear(8, 8)
if args.use_cuda:
    student = student.cuda()
x = torch.randn(2, 8)
if args.use_cuda:
    x = x.cuda()
loss = (student(x) - teacher(x)).pow(2).mean()
"""


@pytest.mark.parametrize("conditional", [True, False])
def test_no_unconditional_cuda_where_the_move_is_conditional(conditional: bool) -> None:
    """The teacher meets GPU inputs only with --use_cuda: appending `.cuda()` to it would move it
    on the CPU runs too (and fail on a machine without a GPU). Where the inputs always go to the
    GPU, `.cuda()` is the repair."""
    unconditional = CONDITIONAL_MOVE.replace("if args.use_cuda:\n    ", "")
    source = CONDITIONAL_MOVE if conditional else unconditional
    [finding] = [f for f in check_text(source, "script.py", enabled=ALL) if f.code == "DEV102"]
    if conditional:
        assert finding.fix is None
    else:
        assert finding.fix is not None and ".cuda()" in finding.fix.edits[0][-1]
