"""Inputs past devlint's limits, or that are not files at all: a DEV000 that says why, in
bounded time, never a hang, a segfault, a lost run or exit 3 (issue 31)."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

import devlint
from devlint import limits
from devlint.engine import check_text

SRC = str(Path(devlint.__file__).resolve().parent.parent)
GOOD = ("import torch\ndevice = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
        "x = torch.zeros(3)\nx.to(device)\n")


def _devlint(cwd: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    code = f"import sys; sys.path.insert(0, {SRC!r}); from devlint.cli import main; main()"
    return subprocess.run([sys.executable, "-c", code, "check", "--no-cache", "--format", "json", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=timeout)


def _by_path(proc: subprocess.CompletedProcess[str]) -> dict[str, list[dict]]:
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    out: dict[str, list[dict]] = {}
    for finding in json.loads(proc.stdout)["findings"]:
        out.setdefault(finding["path"], []).append(finding)
    return out


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_not_read(tmp_path: Path) -> None:
    """Once a hang: opening a FIFO waits for a writer."""
    os.mkfifo(tmp_path / "pipe.py")
    (tmp_path / "good.py").write_text(GOOD)
    for args in (["."], ["pipe.py", "good.py"]):  # inside a folder, and named
        found = _by_path(_devlint(tmp_path, *args, timeout=60))
        assert [f["code"] for f in found["pipe.py"]] == ["DEV000"]
        assert "not a regular file" in found["pipe.py"][0]["message"]
        assert [f["code"] for f in found["good.py"]] == ["DEV107"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_named_gitignore_is_not_read(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / ".gitignore")
    (tmp_path / "good.py").write_text(GOOD)
    found = _by_path(_devlint(tmp_path, ".", timeout=60))
    assert [f["code"] for f in found["good.py"]] == ["DEV107"]


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_dev_zero_is_not_read(tmp_path: Path) -> None:
    """Once read until MemoryError."""
    (tmp_path / "good.py").write_text(GOOD)
    found = _by_path(_devlint(tmp_path, "/dev/zero", "good.py", timeout=60))
    assert "not a regular file" in found["/dev/zero"][0]["message"]
    assert [f["code"] for f in found["good.py"]] == ["DEV107"]


def test_a_notebook_holding_a_huge_integer_is_still_checked(tmp_path: Path) -> None:
    """Once exit 3 (`ValueError: Exceeds the limit (4300 digits)`) from an output's integer."""
    cell = {"cell_type": "code", "execution_count": 1, "metadata": {}, "source": GOOD.splitlines(keepends=True),
            "outputs": [{"output_type": "execute_result", "execution_count": 1, "metadata": {},
                         "data": {"text/plain": ["1"]}}]}
    document = json.dumps({"cells": [cell], "metadata": {"big": 0}, "nbformat": 4, "nbformat_minor": 5})
    document = document.replace('"big": 0', '"big": ' + "7" * 5000)
    (tmp_path / "nb.ipynb").write_text(document)
    found = _by_path(_devlint(tmp_path, "nb.ipynb"))
    assert [(f["code"], f["cell"], f["line"]) for f in found["nb.ipynb"]] == [("DEV107", 1, 4)]


def _elif_chain(branches: int) -> str:
    return ("import torch\nx = torch.zeros(3)\nif x.sum() == 0:\n    y = x.cuda()\n"
            + "".join(f"elif x.sum() == {i}:\n    y = x.cuda()\n" for i in range(1, branches)))


@pytest.mark.parametrize("branches", [limits.MAX_STATEMENT_DEPTH + 100, 9000])
def test_a_long_elif_chain_is_a_dev000_with_its_reason(tmp_path: Path, branches: int) -> None:
    """9,000 branches once segfaulted libcst's parser (exit 139, or with workers the whole run
    lost); 7,000 ended in a RecursionError in the error handler with empty output. Past
    CPython's own compiler limit (about 3,000 on 3.11) the DEV000 is CPython's; below it,
    devlint's limit, named as such."""
    (tmp_path / "chain.py").write_text(_elif_chain(branches))
    (tmp_path / "good.py").write_text(GOOD)
    for jobs in ("1", "2"):
        found = _by_path(_devlint(tmp_path, "-j", jobs, "."))
        assert [f["code"] for f in found["chain.py"]] == ["DEV000"]
        message = found["chain.py"][0]["message"]
        try:
            compile(_elif_chain(branches), "chain.py", "exec")
        except (RecursionError, MemoryError, SyntaxError):
            assert "Python cannot compile it" in message or "invalid" in message, message
        else:
            assert f"blocks nest more than {limits.MAX_STATEMENT_DEPTH}" in message
        assert [f["code"] for f in found["good.py"]] == ["DEV107"]


def test_an_elif_chain_within_the_limit_is_analysed() -> None:
    text = _elif_chain(limits.MAX_STATEMENT_DEPTH - 10)
    started = time.perf_counter()
    found = check_text(text, "chain.py")
    assert time.perf_counter() - started < 20
    assert "DEV000" not in [f.code for f in found] and found


def _table(elements: int, statements: int = 1) -> str:
    rows = [f"w{k} = [" + ", ".join(f"{i * 1.5}" for i in range(elements)) + "]" for k in range(statements)]
    return "import torch\n" + "\n".join(rows) + "\nx = torch.zeros(1).cuda()\n"


def test_a_two_megabyte_literal_is_refused_in_bounded_time_and_memory(tmp_path: Path) -> None:
    """Once 90 s and 3.6 GB (README: a 2 MB file of data literals in a few seconds and a few
    hundred megabytes)."""
    text = _table(200_000)
    assert 1_900_000 < len(text) < limits.MAX_SOURCE_BYTES
    (tmp_path / "table.py").write_text(text)
    code = (f"import sys, resource; sys.path.insert(0, {SRC!r}); from devlint.engine import check_text; "
            f"f = check_text(open('table.py').read(), 'table.py'); "
            f"print(f[0].code, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    elapsed = time.perf_counter() - started
    code_name, peak_kb = proc.stdout.split()
    assert code_name == "DEV000"
    assert elapsed < 30 and int(peak_kb) < 600_000, (elapsed, peak_kb)


def test_data_split_over_many_statements_is_bounded_too() -> None:
    found = check_text(_table(30_000, statements=4), "tables.py")
    assert [f.code for f in found] == ["DEV000"] and "literals hold more than" in found[0].message
    assert limits.nesting_problem(_table(30_000, statements=1)) is None


def test_standard_input_is_read_up_to_a_cap(monkeypatch) -> None:
    """`cat /dev/zero | devlint check -` once read until memory ran out."""
    import io

    from devlint import check_command
    from devlint.source import MAX_NOTEBOOK_BYTES

    asked: list[int] = []

    class Endless(io.RawIOBase):
        def read(self, size: int = -1) -> bytes:
            asked.append(size)
            assert 0 <= size <= MAX_NOTEBOOK_BYTES + 1, "an unbounded read"
            return b"x = 1\n"

    class Stdin:
        buffer = Endless()

    monkeypatch.setattr(sys, "stdin", Stdin())
    assert check_command._read_stdin() == b"x = 1\n" and asked


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork: the workers inherit the stand-in")
def test_a_worker_that_crashes_loses_only_its_file(tmp_path: Path, monkeypatch) -> None:
    """A crash in native code (once libcst's parser overflowing its stack) killed a worker, and
    with it the whole run (BrokenProcessPool, exit 3): now the file is named and the rest checked."""
    import signal

    import devlint.engine
    from devlint.config import CheckSettings, Config
    from devlint.discover import discover
    from devlint.runner import run_check
    from devlint.selection import resolve

    real = devlint.engine.check_text

    def crashing(text: str, path: str, **kwargs):  # type: ignore[no-untyped-def]
        if "CRASH_HERE" in text:
            os.kill(os.getpid(), signal.SIGKILL)  # as a stack overflow would end it, without a dump
        return real(text, path, **kwargs)

    monkeypatch.setattr(devlint.engine, "check_text", crashing)
    import multiprocessing

    import devlint.runner

    monkeypatch.setattr(devlint.runner, "_pool_context", lambda: multiprocessing.get_context("fork"))
    monkeypatch.chdir(tmp_path)
    for number in range(8):
        (tmp_path / f"good{number}.py").write_text(GOOD + "# padding\n" * 2000)
    (tmp_path / "crash.py").write_text(GOOD + "# CRASH_HERE\n")
    settings = CheckSettings(enabled=resolve([]), config=Config(root=tmp_path))
    result = run_check(discover(["."]), settings, jobs=2)
    by_path = {}
    for finding in result.findings:
        by_path.setdefault(finding.path, []).append(finding.code)
    assert by_path.pop("crash.py") == ["DEV000"]
    assert by_path == {f"good{number}.py": ["DEV107"] for number in range(8)}
