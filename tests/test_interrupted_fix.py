"""Nothing lost: a `--fix` run killed at any moment leaves every file original or fully fixed.

The fixer writes each file to a temporary file beside it, flushes it to disk and renames it
over the original (an atomic replace), so a SIGKILL can only ever leave a file as it was or as
the clean run would have written it, never truncated or half-fixed. What a kill between the
temporary write and the rename leaves behind (`.devlint-<pid>-<random>.tmp`) is removed by
the next `--fix` run, which also finishes the job.

Kills come two ways: inside the run, at chosen points of the writer (just before the k-th
rename, just after it), so the narrowest windows are hit every time; and from outside, with
SIGKILL to the whole process group after delays spread over the length of a clean run.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from devlint.cli import cli

GOLDEN = Path(__file__).parent / "fix_golden"
BEFORE = sorted(GOLDEN.glob("*.before.py"))
COPIES = 2
FIX = ["check", "--fix", "--unsafe-fixes", "--select", "ALL", "--no-cache", "-q", "."]

# runs devlint, killing itself (SIGKILL: no cleanup of any kind) at the k-th call of a writer step
KILL_AT = textwrap.dedent("""
    import os, signal, sys

    point, k = sys.argv[1], int(sys.argv[2])
    calls = {"fsync": 0, "replace": 0}
    real = {"fsync": os.fsync, "replace": os.replace}

    def patched(name):
        def step(*args, **kwargs):
            calls[name] += 1
            if point == "before-" + name and calls[name] == k:
                os.kill(os.getpid(), signal.SIGKILL)
            result = real[name](*args, **kwargs)
            if point == "after-" + name and calls[name] == k:
                os.kill(os.getpid(), signal.SIGKILL)
            return result
        return step

    os.fsync, os.replace = patched("fsync"), patched("replace")
    from devlint.cli import cli

    cli.main(args=sys.argv[3:], prog_name="devlint")
""")


def _originals() -> dict[str, bytes]:
    files = {}
    for copy in range(COPIES):
        for before in BEFORE:
            stem = before.name[: -len(".before.py")].replace(".", "_")
            files[f"s{copy}_{stem}.py"] = before.read_bytes()
    return files


def _populate(folder: Path, files: dict[str, bytes]) -> None:
    folder.mkdir()
    for name, data in files.items():
        (folder / name).write_bytes(data)


def _run_in_process(folder: Path) -> None:
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        result = CliRunner().invoke(cli, FIX, catch_exceptions=False)
    finally:
        os.chdir(cwd)
    assert result.exit_code in (0, 1), result.output


@pytest.fixture(scope="module")
def expected(tmp_path_factory) -> dict[str, bytes]:
    """What an uninterrupted run makes of each file (every file has a fix to apply)."""
    folder = tmp_path_factory.mktemp("clean") / "work"
    originals = _originals()
    _populate(folder, originals)
    _run_in_process(folder)
    fixed = {path.name: path.read_bytes() for path in folder.iterdir()}
    assert set(fixed) == set(originals)
    unchanged = [name for name in originals if fixed[name] == originals[name]]
    assert not unchanged, f"these files have nothing to fix, so they prove nothing: {unchanged}"
    return fixed


def _assert_nothing_lost(folder: Path, originals: dict[str, bytes], expected: dict[str, bytes]) -> tuple[int, int]:
    """Every file is original or fully fixed; the only extra files are our temporary files."""
    names = {path.name for path in folder.iterdir()}
    extra = names - set(originals)
    assert all(name.startswith(".devlint-") and name.endswith(".tmp") for name in extra), extra
    assert set(originals) <= names, "a file disappeared"
    fixed = 0
    for name, original in originals.items():
        data = (folder / name).read_bytes()
        assert data in (original, expected[name]), f"{name} is neither original nor fully fixed"
        fixed += data != original
    return fixed, len(extra)


def _recover(folder: Path, expected: dict[str, bytes]) -> None:
    """The next run finishes the job and removes what the killed run left."""
    _run_in_process(folder)
    assert {path.name: path.read_bytes() for path in folder.iterdir()} == expected


def _env() -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}, "NO_COLOR": "1"}


@pytest.mark.parametrize("point, k", [("before-replace", 1), ("before-replace", 12), ("after-replace", 5),
                                      ("after-fsync", 15)])
def test_killed_at_a_chosen_step_of_the_writer(tmp_path: Path, expected, point: str, k: int) -> None:
    originals = _originals()
    folder = tmp_path / "work"
    _populate(folder, originals)
    proc = subprocess.run([sys.executable, "-I", "-c", KILL_AT, point, str(k), *FIX], cwd=folder,
                          capture_output=True, text=True, env=_env(), timeout=600)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    fixed, temporary = _assert_nothing_lost(folder, originals, expected)
    written = k if point == "after-replace" else k - 1  # renames completed before the kill
    assert fixed == written
    if point != "after-replace":  # killed between the temporary write and the rename
        assert temporary == 1
    _recover(folder, expected)


def test_killed_from_outside_at_random_moments(tmp_path: Path, expected) -> None:
    originals = _originals()
    # how long a whole run takes here, to spread the kills over it
    timing = tmp_path / "timing"
    _populate(timing, originals)
    start = time.monotonic()
    subprocess.run([sys.executable, "-I", "-m", "devlint", *FIX], cwd=timing, capture_output=True,
                   env=_env(), timeout=600)
    length = time.monotonic() - start
    assert {path.name: path.read_bytes() for path in timing.iterdir()} == expected
    rng = random.Random(os.environ.get("DEVLINT_KILL_SEED", "devlint"))
    for attempt, share in enumerate((0.45, 0.55, 0.65)):
        folder = tmp_path / f"work{attempt}"
        _populate(folder, originals)
        proc = subprocess.Popen([sys.executable, "-I", "-m", "devlint", *FIX], cwd=folder,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env(),
                                start_new_session=True)
        time.sleep(length * share * rng.uniform(0.9, 1.1))
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass  # it had finished: the check below still holds
        proc.wait(timeout=60)
        _assert_nothing_lost(folder, originals, expected)
        _recover(folder, expected)


def test_stale_temporary_files_are_removed_only_when_their_writer_is_gone(tmp_path: Path, expected) -> None:
    originals = _originals()
    folder = tmp_path / "work"
    _populate(folder, originals)
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(gone.stdout)
    stale = folder / f".devlint-{dead_pid}-abc123.tmp"
    stale.write_bytes(b"half a file")
    mine = folder / f".devlint-{os.getpid()}-def456.tmp"  # a live writer's (this process)
    mine.write_bytes(b"in flight")
    unrelated = folder / ".devlint-notes.tmp"  # not a name the writer makes
    unrelated.write_bytes(b"keep")
    _run_in_process(folder)
    assert not stale.exists()
    assert mine.exists() and unrelated.exists()
    mine.unlink()
    unrelated.unlink()
    assert {path.name: path.read_bytes() for path in folder.iterdir()} == expected
