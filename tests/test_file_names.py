"""Odd file names: escaped in text reports (one line each, nothing the terminal interprets),
exact in JSON (issue 31: a non-UTF-8 name printed as `??` even in JSON, a newline split a
report line, and escape codes reached the terminal raw)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import devlint

SRC = str(Path(devlint.__file__).resolve().parent.parent)
BUG = (b"import torch\ndevice = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
       b"x = torch.zeros(3)\nx.to(device)\n")
NAMES = {b"caf\xe9.py": "caf\\xe9.py", b"new\nline.py": "new\\nline.py", b"\x1b[31mred.py": "\\x1b[31mred.py"}

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="a Linux file system takes any bytes in a name")


def _devlint(folder: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    code = f"import sys; sys.path.insert(0, {SRC!r}); from devlint.cli import main; main()"
    env = {**os.environ, "PYTHONIOENCODING": "utf-8", "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-c", code, "check", "--no-cache", *args, "."], cwd=folder,
                          capture_output=True, env=env, timeout=120)


@pytest.fixture
def odd_names(tmp_path: Path) -> Path:
    for name in NAMES:
        with open(os.path.join(os.fsencode(tmp_path), name), "wb") as handle:
            handle.write(BUG)
    return tmp_path


def test_json_keeps_names_exact(odd_names: Path) -> None:
    proc = _devlint(odd_names, "--format", "json")
    assert proc.returncode == 1, proc.stderr
    paths = {os.fsencode(f["path"]) for f in json.loads(proc.stdout)["findings"]}
    assert paths == set(NAMES)


@pytest.mark.parametrize("fmt", ["concise", "text"])
def test_text_reports_escape_names(odd_names: Path, fmt: str) -> None:
    proc = _devlint(odd_names, "--format", fmt)
    assert proc.returncode == 1, proc.stderr
    out = proc.stdout.decode("utf-8")
    assert "\x1b" not in out and "caf?" not in out and "caf\ufffd" not in out
    report_lines = [line for line in out.splitlines() if ":4:1" in line]
    assert sorted(line.split(":4:1")[0] for line in report_lines) == sorted(NAMES.values())
