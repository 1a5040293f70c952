"""`check --watch`: a real process watching a real folder (watchfiles on the operating system's
notifications) reports again after a file is changed on disk, and ends cleanly on Ctrl-C; a
configuration broken between two rounds is reported without ending the watch."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import click

from buggy_sources import DISCARDED
from devlint.watch import watch

SRC = str(Path(__file__).resolve().parents[1] / "src")
TIMEOUT_S = 120.0


class Lines:
    """The lines of a stream, read on a thread, waited for with a timeout."""

    def __init__(self, stream) -> None:  # type: ignore[no-untyped-def]
        self.seen: list[str] = []
        self._queue: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream) -> None:  # type: ignore[no-untyped-def]
        for line in stream:
            self._queue.put(line)

    def mark(self) -> int:
        return len(self.seen)

    def wait_for(self, text: str, after: int = 0) -> None:
        """Until a line holding `text` comes, after the first `after` lines."""
        deadline = time.monotonic() + TIMEOUT_S
        while not any(text in line for line in self.seen[after:]):
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"never saw {text!r}; saw {self.seen}"
            try:
                self.seen.append(self._queue.get(timeout=remaining))
            except queue.Empty:
                pass


def test_a_file_changed_on_disk_is_checked_again(tmp_path: Path) -> None:
    clean = DISCARDED.replace("    x.to(device)", "    x = x.to(device)")
    (tmp_path / "train.py").write_text(clean, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    process = subprocess.Popen([sys.executable, "-m", "devlint", "check", "--watch", "--format", "concise", "."],
                               cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = Lines(process.stdout), Lines(process.stderr)
        err.wait_for("All checks passed (1 file).")
        err.wait_for("Watching for changes")  # the watcher runs before the first round
        (tmp_path / "train.py").write_text(DISCARDED, encoding="utf-8")
        err.wait_for("train.py changed; checking again.")
        out.wait_for("train.py:9:5: DEV107 [error]")
        err.wait_for("Found 2 errors in 1 file.")
        mark = err.mark()
        (tmp_path / "notes.txt").write_text("not Python", encoding="utf-8")  # not a reason to check
        (tmp_path / "train.py").write_text(clean, encoding="utf-8")
        err.wait_for("All checks passed (1 file).", after=mark)
        assert sum("changed; checking again" in line for line in err.seen) == 2
        assert not any("notes.txt" in line for line in err.seen)
    finally:
        process.send_signal(signal.SIGINT)
        code = process.wait(timeout=TIMEOUT_S)
    assert code == 0


def test_a_broken_configuration_ends_a_round_not_the_watch(project, invoke, fake_engine, monkeypatch) -> None:
    from devlint.check_command import CheckOptions, run_check_command

    project.write("a.py", "boom107()\n")
    rounds: list[int] = []

    def changes():  # type: ignore[no-untyped-def]
        project.write("devlint.toml", 'select = ["DEV1O7"]\n')
        yield {("modified", str(project.root / "devlint.toml"))}
        project.write("devlint.toml", 'select = ["DEV107"]\n')
        yield {("modified", str(project.root / "devlint.toml"))}

    def once() -> int:
        rounds.append(run_check_command(CheckOptions(paths=("a.py",), format_name="concise", no_cache=True),
                                        lambda verbose, quiet: None))
        return rounds[-1]

    messages: list[str] = []
    monkeypatch.setattr(click, "echo", lambda text="", err=False, **_: messages.append(str(text)))
    assert watch(once, ["a.py"], changes=changes()) == 0
    assert rounds == [1, 1]  # the round with the broken file raised, and the watch went on
    assert any("unknown rule code or prefix 'DEV1O7'" in message for message in messages)
    assert sum("changed; checking again" in message for message in messages) == 2


def test_watch_refuses_what_it_cannot_repeat(project, invoke, fake_engine) -> None:
    project.write("a.py", "boom107()\n")
    for extra in (["--fix"], ["--add-noqa"], ["--diff"]):
        out = invoke("check", "--watch", *extra)
        assert out.exit_code == 2 and "--watch" in out.stderr
