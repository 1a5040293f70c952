"""Fixes in files that mix fixable and unfixable findings, and one crash getting one repair."""

from __future__ import annotations

import shutil
from pathlib import Path

from click.testing import CliRunner

from devlint.cli import cli
from devlint.engine import check_text

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

HEADER = '''import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 4).to(device)
loader = DataLoader(TensorDataset(torch.randn(8, 4), torch.randn(8, 4)), batch_size=2)
'''


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def _fixed(tmp_path: Path, body: str, *flags: str) -> str:
    target = tmp_path / "script.py"
    target.write_text(HEADER + body)
    _run("check", "--fix", "--no-cache", *flags, str(target))
    return target.read_text()[len(HEADER):]


def test_safe_fixes_apply_in_a_file_with_unfixable_findings(tmp_path: Path) -> None:
    target = tmp_path / "train.py"
    shutil.copy(EXAMPLES / "train_classifier_buggy.py", target)
    code, out, err = _run("check", "--diff", "--no-cache", str(target))
    assert "would introduce" not in err
    assert "+        images = images.to(device)" in out  # DEV107, safe
    assert "-    train_loader.to(device)" in out  # DEV108, safe
    assert "2 fixes available in 1 file." in err
    _run("check", "--fix", "--no-cache", str(target))
    codes = [f.code for f in check_text(target.read_text(), str(target))]
    assert "DEV107" not in codes and "DEV108" not in codes
    assert "DEV102" in codes  # unfixed without --unsafe-fixes, and no reason to refuse the others


def test_one_unfixable_finding_does_not_block_a_safe_fix(tmp_path: Path) -> None:
    body = '''
for x, y in loader:
    x.to(device)
    out = model(x)
    loss = (out - y.to(device)).sum()

state = torch.load("ckpt.pt")
w = torch.zeros(4)
z = model(w)
'''
    fixed = _fixed(tmp_path, body)
    assert "    x = x.to(device)\n" in fixed
    assert 'torch.load("ckpt.pt", map_location=' in fixed


def test_discarded_move_then_use_gets_one_repair(tmp_path: Path) -> None:
    body = '''
for x, y in loader:
    x.to(device)
    out = model(x)
'''
    fixed = _fixed(tmp_path, body, "--unsafe-fixes")
    assert fixed.count("x = x.to(device)") == 1, fixed


def test_two_discarded_moves_on_one_line_are_both_reported_and_fixed(tmp_path: Path) -> None:
    body = '''
for x, y in loader:
    x.to(device); y.to(device)
    loss = (model(x) - y).sum()
'''
    findings = [f for f in check_text(HEADER + body, "script.py") if f.code == "DEV107"]
    assert [(f.line, f.column) for f in findings] == [(10, 5), (10, 19)]
    fixed = _fixed(tmp_path, body)
    assert "    x = x.to(device); y = y.to(device)\n" in fixed


def test_numpy_after_detach_gets_no_second_detach(tmp_path: Path) -> None:
    body = '''

def show(batch):
    out = model(batch.to(device))
    return out.detach().numpy()
'''
    fixed = _fixed(tmp_path, body, "--unsafe-fixes")
    assert "return out.detach().cpu().numpy()" in fixed


def test_factory_then_discarded_move_is_one_finding(tmp_path: Path) -> None:
    body = '''

def step():
    x = torch.randn(3, 4)
    x.to(device)
    return model(x)
'''
    codes = sorted(f.code for f in check_text(HEADER + body, "script.py"))
    assert codes == ["DEV107"]
    fixed = _fixed(tmp_path, body, "--unsafe-fixes")
    assert "x = torch.randn(3, 4)\n    x = x.to(device)\n" in fixed
