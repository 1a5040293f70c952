"""`check --watch`: check, then check again whenever a checked file or a configuration changes.

As `ruff check --watch`. The file system is watched by watchfiles (a maintained library on the
operating system's notifications: inotify, FSEvents, ReadDirectoryChangesW), not by polling code
of our own, and a burst of writes (a save that formats, a `git checkout`) is taken as one
change. Each round is a whole `check` with its configuration read again, through the result
cache, so only what changed is analysed. A usage or configuration error ends a round, not the
watch: the next change (the fix of that configuration) is checked again. Ctrl-C ends it (exit 0).
"""

from __future__ import annotations

import os
import time
from typing import Callable, Iterable, Sequence

import click

from devlint.errors import UsageProblem

__all__ = ["watch"]

WATCHED_SUFFIXES = (".py", ".ipynb", ".toml")
DEBOUNCE_MS = 300  # changes this close together (a formatter's save, a checkout) are one round
RUST_TIMEOUT_MS = 200  # how soon the watcher reports that it runs (an empty batch)
SKIPPED_PARTS = {".git", "__pycache__", ".devlint_cache", ".venv", "venv", "node_modules"}


def _relevant(path: str) -> bool:
    if not path.endswith(WATCHED_SUFFIXES):
        return False
    return not SKIPPED_PARTS.intersection(os.path.normpath(path).split(os.sep))


def _roots(paths: Sequence[str]) -> list[str]:
    """The folders to watch: each named folder, and the folder of each named file (a file
    replaced by an editor's atomic save is a new file, which only its folder's watch sees)."""
    roots = []
    for path in paths or ["."]:
        folder = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
        roots.append(os.path.abspath(folder))
    return sorted(set(roots))


def watch(check_once: Callable[[], int], paths: Sequence[str], *, changes: Iterable | None = None) -> int:
    """Run `check_once` now and after every relevant change under `paths`; `changes` (for
    tests) replaces the watcher's stream of change sets."""
    started = changes is not None
    if changes is None:
        try:
            import watchfiles
        except ModuleNotFoundError:
            raise UsageProblem("--watch needs the watchfiles package: `pip install watchfiles` (or "
                               "`pip install \".[watch]\"` in a devlint checkout)") from None
        # the first (empty) batch comes once the watcher runs: the first round is checked then,
        # so a file saved while it is checked is seen, not lost before the watch starts
        changes = watchfiles.watch(*_roots(paths), watch_filter=lambda _change, path: _relevant(path),
                                   debounce=DEBOUNCE_MS, rust_timeout=RUST_TIMEOUT_MS, yield_on_timeout=True,
                                   raise_interrupt=False)
    else:
        _round(check_once)
    try:
        for batch in changes:
            if not started:
                started = True
                _round(check_once)
                continue
            touched = sorted({os.path.relpath(path) for _change, path in batch})
            if not touched:
                continue
            shown = ", ".join(touched[:3]) + (f" and {len(touched) - 3} more" if len(touched) > 3 else "")
            click.echo(f"[{time.strftime('%H:%M:%S')}] {shown} changed; checking again.", err=True)
            _round(check_once)
    except KeyboardInterrupt:
        pass
    return 0


def _round(check_once: Callable[[], int]) -> None:
    try:
        check_once()
    except (UsageProblem, click.UsageError) as exc:
        click.echo(f"devlint: error: {exc}", err=True)
    click.echo("Watching for changes (Ctrl-C to stop).", err=True)
