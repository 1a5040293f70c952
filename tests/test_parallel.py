"""Worker processes (`-j N`) never change what is reported: same findings, same order, same
summary as checking everything in one process."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest

from devlint import runner
from devlint.config import Config
from devlint.discover import discover
from devlint.rules import all_rules
from devlint.runner import CheckSettings, run_check

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def pools(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Number of chunks of every worker pool a run starts (none for an in-process run)."""
    started: list[int] = []
    real = runner._chunks

    def chunks(todo, units, workers):  # type: ignore[no-untyped-def]
        made = real(todo, units, workers)
        started.append(len(made))
        return made

    monkeypatch.setattr(runner, "_chunks", chunks)
    return started


def test_one_and_two_workers_agree_on_the_fixtures(invoke, pools) -> None:  # type: ignore[no-untyped-def]
    args = ["check", str(FIXTURES), "--select", "ALL", "--format", "json", "--no-cache"]
    one = invoke(*args, "-j", "1")
    assert pools == []
    two = invoke(*args, "-j", "2")
    assert pools and pools[0] > 2  # the second run really used worker processes
    assert one.exit_code == two.exit_code == 1
    assert one.stdout == two.stdout
    assert one.stderr == two.stderr
    report = json.loads(one.stdout)
    assert report["files_checked"] > 100 and len(report["findings"]) > 50


def _project(root: Path) -> None:
    (root / "models.py").write_text(
        "import torch\nimport torch.nn as nn\n\n\nclass Head(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(8, 8)\n"
        "        self.scale = torch.ones(8)\n\n    def forward(self, x):\n        return self.fc(x) * self.scale\n")
    for n in range(6):
        (root / f"train_{n}.py").write_text(
            "import torch\n\nfrom models import Head\n\ndevice = torch.device('cuda')\n"
            "model = Head().to(device)\nx = torch.randn(4, 8)\nprint(model(x))\n" + "# padding\n" * 2000)


def test_spawned_workers_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pools) -> None:  # type: ignore[no-untyped-def]
    # fork is used where it is safe; the workers must work the same when started fresh (macOS,
    # Windows, a process with threads)
    _project(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "_pool_context", lambda: multiprocessing.get_context("spawn"))
    settings = CheckSettings(enabled=frozenset(r.code for r in all_rules()), config=Config())
    files = discover(["."])
    alone = run_check(files, settings, jobs=1)
    spawned = run_check(files, settings, jobs=2)
    assert pools  # the pool was used
    assert spawned.findings == alone.findings
    assert {(f.path, f.code) for f in alone.findings} >= {("models.py", "DEV104"), ("train_0.py", "DEV105")}
    # the finding in models.py is reached from every script, and reported once
    assert sum(1 for f in alone.findings if f.path == "models.py") == 1


def test_results_come_back_in_file_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _project(tmp_path)
    monkeypatch.chdir(tmp_path)
    settings = CheckSettings(enabled=frozenset(r.code for r in all_rules()), config=Config())
    files = discover(["."])
    seen: list[str] = []
    run_check(files, settings, jobs=2, progress=lambda index, total, display, count: seen.append(display))
    assert seen == [f.display for f in files]


def test_chunks_keep_order_and_cover_everything() -> None:
    from devlint.source import SourceUnit

    units = [SourceUnit(f"f{i}.py", f"f{i}.py", text="x\n" * (i * 500)) for i in range(40)]
    todo = [i for i in range(40) if i % 3]
    chunks = runner._chunks(todo, units, 2)
    assert [i for chunk in chunks for i in chunk] == todo
    assert 2 <= len(chunks) <= 2 * runner.CHUNKS_PER_WORKER + 1


def test_small_runs_stay_in_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pools) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "a.py").write_text("import torch\nx = torch.zeros(3).cuda()\n")
    monkeypatch.chdir(tmp_path)
    settings = CheckSettings(enabled=frozenset(r.code for r in all_rules()), config=Config())
    run_check(discover(["."]), settings, jobs=8)
    assert pools == []


def test_default_jobs_is_the_cpus_we_may_use() -> None:
    assert runner.default_jobs() >= 1
