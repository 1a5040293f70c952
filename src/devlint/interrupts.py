"""Ending a check on Ctrl-C or SIGTERM: the worker processes too, one line, exit 130 or 143.

Ctrl-C reaches the whole foreground process group; SIGTERM (a CI job cancelled, `kill`) only
the process it is sent to. Either way the parent process alone decides what happens:

* a worker ignores SIGINT (the parent stops it; otherwise each worker printed its own
  traceback), and on Linux the kernel sends it SIGTERM when the parent dies, however it dies,
  so no worker is left checking files for a run that is gone;
* in the parent, SIGTERM raises `Terminated` (as SIGINT raises KeyboardInterrupt, which leaves
  the check as `Interrupted`), so the pool's workers are ended (`stop_workers`) on the way out
  and the CLI prints one line and exits 128 + the signal's number;
* an error raised while an interrupt unwinds (a cleanup that fails because the work it
  cleans up was cut short) is the interrupt, not a bug: `interrupt_behind` finds it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from typing import Iterator

__all__ = ["Stopped", "Interrupted", "Terminated", "terminating", "in_worker", "stop_workers", "interrupt_behind"]

EXIT_INTERRUPTED = 128 + signal.SIGINT  # 130
EXIT_TERMINATED = 128 + signal.SIGTERM  # 143


class Stopped(BaseException):
    """The run was stopped by a signal (a BaseException, so no `except Exception` on the way
    swallows it, and not a KeyboardInterrupt, which click would turn into "Aborted!")."""

    status = EXIT_INTERRUPTED
    line = "Interrupted."


class Interrupted(Stopped):
    """Ctrl-C (SIGINT)."""


class Terminated(Stopped):
    """SIGTERM."""

    status = EXIT_TERMINATED
    line = "Terminated."


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated()


@contextlib.contextmanager
def terminating() -> Iterator[None]:
    """SIGTERM raises Terminated while the block runs, and Ctrl-C leaves it as Interrupted (in
    the main thread only; elsewhere, as in an editor's worker thread, nothing changes)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    except KeyboardInterrupt:
        raise Interrupted() from None
    finally:
        signal.signal(signal.SIGTERM, previous)


def in_worker() -> None:
    """Initializer of a worker process: the parent handles interrupts, and its death ends us."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            pr_set_pdeathsig = 1
            libc.prctl(pr_set_pdeathsig, signal.SIGTERM, 0, 0, 0)
        except (OSError, AttributeError):  # pragma: no cover - no libc to ask
            pass
        if os.getppid() == 1:  # the parent died before the request was made
            os._exit(EXIT_TERMINATED)


def stop_workers(pool: object) -> None:
    """End the worker processes of a concurrent.futures pool now (their work is abandoned)."""
    processes = getattr(pool, "_processes", None) or {}
    for process in list(processes.values()):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            process.terminate()
    for process in list(processes.values()):
        with contextlib.suppress(OSError, ValueError, AttributeError, AssertionError):
            process.join(timeout=5)


def interrupt_behind(exc: BaseException) -> BaseException | None:
    """The KeyboardInterrupt or Stopped that `exc` was raised while handling, if any."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, (KeyboardInterrupt, Stopped)):
            return current
        seen.add(id(current))
        current = current.__context__
    return None
