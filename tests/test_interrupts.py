"""Ctrl-C and SIGTERM to a real `devlint check` process with worker processes: the workers end
too, one line is printed, the exit status is 130 (SIGINT) or 143 (SIGTERM), never 3, never a
traceback (issue 31: the workers were left checking, orphaned, for minutes)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import devlint

FIXTURES = Path(__file__).parent / "fixtures"
SRC = str(Path(devlint.__file__).resolve().parent.parent)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc for the workers")


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as handle:
                found.update(int(child) for child in handle.read().split())
    except OSError:
        pass
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def _tree(root: Path) -> Path:
    """Enough files that two workers are busy for many seconds."""
    programs = sorted(p for p in FIXTURES.rglob("*.py") if "projects" not in p.parts)[:120]
    for copy in range(12):
        folder = root / f"copy{copy}"
        folder.mkdir(parents=True)
        for number, program in enumerate(programs):
            shutil.copyfile(program, folder / f"m{number}.py")
    return root


@pytest.mark.parametrize("signum, status, line", [(signal.SIGINT, 130, "Interrupted."),
                                                  (signal.SIGTERM, 143, "Terminated.")])
def test_a_signal_ends_the_run_and_its_workers(tmp_path: Path, signum: int, status: int, line: str) -> None:
    _interrupt(tmp_path, signum, status, line, jobs=2)


@pytest.mark.parametrize("attempt", range(3))
def test_ctrl_c_in_a_single_process_run(tmp_path: Path, attempt: int) -> None:
    """With -j 1, 2 of 6 Ctrl-Cs once ended in exit 3 (a cleanup in analysis/positions.py
    raised KeyError over the interrupt): the signal lands at a different point each time."""
    _interrupt(tmp_path, signal.SIGINT, 130, "Interrupted.", jobs=1, after=1.0 + attempt * 0.7)


def _interrupt(tmp_path: Path, signum: int, status: int, line: str, *, jobs: int, after: float = 1.0) -> None:
    tree = _tree(tmp_path / "tree")
    command = [sys.executable, "-c", f"import sys; sys.path.insert(0, {SRC!r}); from devlint.cli import main; main()",
               "check", "--no-cache", "-j", str(jobs), "--format", "json", str(tree)]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        workers: set[int] = set()
        deadline = time.monotonic() + 120
        while jobs > 1 and len(workers) < jobs and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
            workers = _children(proc.pid)
        assert len(workers) >= jobs or jobs == 1, "the run never started its workers"
        time.sleep(after)  # let them work
        assert proc.poll() is None, "the run ended before the signal"
        if signum == signal.SIGINT:
            os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: the terminal signals the whole group
        else:
            os.kill(proc.pid, signal.SIGTERM)  # a job cancelled: the parent alone
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == status, err.decode()[-3000:]
    assert err.decode().strip() == line
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(pid) for pid in workers), "a worker outlived the run"
