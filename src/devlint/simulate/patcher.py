"""How a patch is applied and undone.

Every patch the simulation makes goes through `Patcher.set`, which remembers the original, so
`restore()` leaves torch as it found it and the same process can run the simulation many times
(the test suite does). `plain` is the wrapper every patched torch method wears. The modules that
patch one area each (`tensors`, `cuda_api`, `hooks`) use these; `patches.install` calls them.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import torch

_NoTorchFunction = torch._C.DisableTorchFunction


def plain(fn: Callable) -> Callable:
    """Run a patch with torch-function handling off.

    The patches are entered from user code, where the simulation's own TorchFunctionMode is
    active: without this, each C call they make (reading a storage, the original `to`) would
    go through that mode again, costing microseconds and handing the mode our own functions
    (torch looks `Tensor.to` up by name when it dispatches a torch function).
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with _NoTorchFunction():
            return fn(*args, **kwargs)

    return wrapper


class Patcher:
    """Sets attributes and remembers the originals, to restore them in reverse order."""

    _MISSING = object()

    def __init__(self) -> None:
        self._undo: list[tuple[Any, str, Any]] = []

    def set(self, owner: Any, name: str, value: Any) -> None:
        old = owner.__dict__.get(name, self._MISSING) if hasattr(owner, "__dict__") else self._MISSING
        if old is self._MISSING and not isinstance(owner, type):
            old = getattr(owner, name, self._MISSING)
        self._undo.append((owner, name, old))
        setattr(owner, name, value)

    def remove_on_restore(self, handle: Any) -> None:
        """Have `restore()` call `handle.remove()` (a hook torch registered), in its turn."""
        self._undo.append((_HandleRemover(handle), "remove", self._MISSING))

    def restore(self) -> None:
        while self._undo:
            owner, name, old = self._undo.pop()
            try:
                if old is self._MISSING:
                    delattr(owner, name)
                else:
                    setattr(owner, name, old)
            except (AttributeError, TypeError):
                pass


class _HandleRemover:
    """Lets Patcher.restore() remove a hook: deleting `remove` calls it."""

    def __init__(self, handle: Any) -> None:
        self._handle = handle

    def __delattr__(self, name: str) -> None:
        self._handle.remove()
