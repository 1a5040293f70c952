"""Fast-forwarding: stop every DataLoader iteration after K batches, and the whole run after N seconds.

A real training run spends hours in loops whose every iteration takes the same device path; the
crash a GPU run hits is on the first pass through each path (the first training step, the first
evaluation, the first checkpoint). Cutting every loader to K batches reaches all of them in
seconds. The time limit ends a run that loops without a DataLoader (`for step in range(10**6)`).
"""

from __future__ import annotations

import signal
import threading
import time
from dataclasses import dataclass
from typing import Any


class StopSimulation(BaseException):
    """Raised inside the user's program to end the run at a limit.

    A BaseException, so that the script's own `except Exception:` handlers do not swallow it.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Limits:
    max_batches: int | None = 2
    max_seconds: float | None = None


class Deadline:
    """Ends the run once `max_seconds` have passed.

    In the main thread a SIGALRM timer interrupts even a loop that never calls torch; the
    dispatch mode also polls `check()` (every 1024 aten ops), which covers other threads and
    platforms without SIGALRM.
    """

    _POLL_EVERY = 1024

    def __init__(self, max_seconds: float | None) -> None:
        self.max_seconds = max_seconds
        self._end = None if max_seconds is None else time.monotonic() + max_seconds
        self._ops = 0
        self._old_handler: Any = None
        self._armed = False

    def poll(self) -> None:
        """Called for every aten op; cheap except every 1024th call."""
        self._ops += 1
        if self._ops % self._POLL_EVERY == 0:
            self.check()

    def check(self) -> None:
        if self._end is not None and time.monotonic() >= self._end:
            raise StopSimulation("time")

    def arm(self) -> None:
        if self.max_seconds is None:
            return
        if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
            return

        def _on_alarm(signum: int, frame: Any) -> None:
            raise StopSimulation("time")

        self._old_handler = signal.signal(signal.SIGALRM, _on_alarm)
        signal.setitimer(signal.ITIMER_REAL, max(self.max_seconds, 0.001))
        self._armed = True

    def disarm(self) -> None:
        if not self._armed:
            return
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self._old_handler if self._old_handler is not None else signal.SIG_DFL)
        self._armed = False
