"""`move-helpers` / `device-helpers`: functions of other packages the analysis cannot read."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from devlint.cli import cli

SCRIPT = '''\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from gpu_tools import send_to_gpu, pick_device

model = send_to_gpu(nn.Linear(8, 2))
loader = DataLoader(TensorDataset(torch.randn(16, 8), torch.randint(0, 2, (16,))), batch_size=4)
for x, y in loader:
    out = model(x)
'''


def _codes(tmp_path: Path, config: str | None) -> list[tuple[int, str]]:
    (tmp_path / "train.py").write_text(SCRIPT)
    if config is not None:
        (tmp_path / "devlint.toml").write_text(config)
    result = CliRunner().invoke(cli, ["check", "--format", "json", "--no-cache", str(tmp_path / "train.py")])
    assert result.exit_code in (0, 1), result.output
    return [(f["line"], f["code"]) for f in json.loads(result.stdout)["findings"]]


def test_unknown_helper_stays_silent(tmp_path: Path) -> None:
    assert _codes(tmp_path, None) == []


def test_configured_move_helper_moves_its_argument(tmp_path: Path) -> None:
    config = 'move-helpers = ["gpu_tools.send_to_gpu"]\n'
    assert _codes(tmp_path, config) == [(9, "DEV101")]
