"""The event recorder: what the analysis observed, in program order, each fact once.

Functions are analysed once per calling context, loops twice, so the same observation is made
several times; the recorder keeps the first. While a DataLoader's `collate_fn` or a Dataset's
`__getitem__` is analysed, the device work done there is also captured for that loader (DEV110).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from devlint.analysis.events import Event, Meet, Move, Site, SiteKind


class Recorder:
    def __init__(self) -> None:
        self.events: list[Event] = []
        self._seen: set[tuple] = set()
        self._captures: list[list[Event]] = []

    def emit(self, event: Event) -> None:
        if self._captures and (isinstance(event, Move) and event.target.on_device
                               or isinstance(event, Site) and event.kind is SiteKind.FACTORY
                               and event.value.place.on_device):
            self._captures[-1].append(event)
        if isinstance(event, Meet):
            origin = event.host.origin
            key: tuple = ("Meet", id(event.node), origin.category if origin else "",
                          id(origin.node) if origin and origin.node else 0)
        else:
            key = (type(event).__name__, id(event.node), getattr(event, "operation", ""),
                   id(getattr(getattr(event, "host", None), "origin", None) or 0),
                   event.kind.value if isinstance(event, Site) else "")
        if key in self._seen:
            return
        self._seen.add(key)
        self.events.append(event)

    def append(self, event: Event) -> None:
        """Record without deduplication (the same collate_fn may serve several loaders)."""
        self.events.append(event)

    @property
    def capturing(self) -> bool:
        """Whether device work is being captured for a DataLoader (calls are not memoised then:
        their device work must be seen for this loader)."""
        return bool(self._captures)

    @contextmanager
    def capture_worker_work(self) -> Iterator[list[Event]]:
        """Collect the device moves and device factories recorded inside the block."""
        captured: list[Event] = []
        self._captures.append(captured)
        try:
            yield captured
        finally:
            self._captures.pop()
