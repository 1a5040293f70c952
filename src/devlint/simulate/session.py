"""`Simulation`: the context in which a program runs as if a CUDA GPU were present.

Entering it applies the patches and pushes the two modes; leaving it undoes everything, so the
same process can run the simulation many times (the test suite does). It also answers what the
patches ask of this run: the DataLoader hooks cut every loader at the batch limit and mark its
batches, and the factory hooks record where a host tensor was built, for the classifier.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, Callable

import torch

from devlint.simulate import patches, provenance, tags
from devlint.simulate.budget import Deadline, Limits
from devlint.simulate.call_context import CallContextMode
from devlint.simulate.dispatch import DeviceCheckMode
from devlint.simulate.hooks import LoaderHooks, SimState
from devlint.simulate.patcher import Patcher

_FACTORY_NAMES = (
    "zeros", "ones", "full", "empty", "arange", "linspace", "logspace", "eye", "rand", "randn",
    "randint", "randperm", "empty_strided", "range",
)
_DATA_NAMES = ("tensor", "as_tensor", "asarray")


class _Hooks(LoaderHooks):
    def __init__(self, limits: Limits, state: SimState) -> None:
        self.limits = limits
        self.state = state

    def allow(self, count: int) -> bool:
        return self.limits.max_batches is None or count < self.limits.max_batches

    def limit_len(self, length: int) -> int:
        if self.limits.max_batches is None:
            return length
        return min(length, self.limits.max_batches)

    def batch(self, batch: Any) -> None:
        self.state.batches += 1
        with torch._C.DisableTorchFunction():
            _mark(batch, ("batch", "DataLoader"), 0)


def _mark(obj: Any, origin: tuple, depth: int) -> None:
    if depth > 4:
        return
    if isinstance(obj, torch.Tensor):
        if not tags.is_simulated(obj):
            provenance.set_origin(obj, origin)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _mark(v, origin, depth + 1)
    elif isinstance(obj, Mapping):
        for v in obj.values():
            _mark(v, origin, depth + 1)
    elif hasattr(obj, "__dict__") and not isinstance(obj, type):
        for v in vars(obj).values():
            if isinstance(v, (torch.Tensor, list, tuple, Mapping)):
                _mark(v, origin, depth + 1)


def _factory_hooks() -> dict[Any, Any]:
    hooks: dict[Any, Any] = {}

    def make(kind: str, name: str) -> Callable[[torch.Tensor], None]:
        def record(out: torch.Tensor) -> None:
            if not tags.is_simulated(out):
                where = provenance.creator_frame(direct=True)
                if where is not None:
                    provenance.set_origin(out, (kind, f"torch.{name}", where))

        return record

    for name in _FACTORY_NAMES:
        func = getattr(torch, name, None)
        if func is not None:
            hooks[func] = make("factory", name)
    for name in _DATA_NAMES:
        func = getattr(torch, name, None)
        if func is not None:
            hooks[func] = make("data", name)
    return hooks


class Simulation:
    """Run code inside `with Simulation(limits):` and CUDA appears to be there.

    Not re-entrant, and single-threaded in what it checks: the modes are thread-local, so ops
    run by other threads are executed but not checked.
    """

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or Limits(max_batches=None)
        self.state = SimState()
        self.deadline = Deadline(self.limits.max_seconds)
        self._patcher = Patcher()
        self._function_mode: CallContextMode | None = None
        self._dispatch_mode: DeviceCheckMode | None = None
        self._default_device: Any = None
        self._default_dtype: Any = None

    def __enter__(self) -> "Simulation":
        self._default_device = getattr(torch._GLOBAL_DEVICE_CONTEXT, "device_context", None)
        self._default_dtype = torch.get_default_dtype()
        tags.set_current_index(0)
        tags.reset_cuda_owner()
        patches.install(self._patcher, self.state, _Hooks(self.limits, self.state))
        try:
            self._function_mode, self._dispatch_mode = self._modes()
            self._function_mode.__enter__()
            self._dispatch_mode.__enter__()
            self._patch_threads()
            self.deadline.arm()
        except BaseException:
            self._teardown()
            raise
        return self

    def _modes(self) -> tuple[CallContextMode, DeviceCheckMode]:
        on_op = self.deadline.poll if self.limits.max_seconds is not None else None
        return CallContextMode(factories=_factory_hooks()), DeviceCheckMode(on_op=on_op)

    def _patch_threads(self) -> None:
        """Modes are thread-local: a thread started by the script (a prefetcher, a thread pool)
        gets its own pair, or its GPU ops would produce untagged CPU results."""
        orig = threading.Thread._bootstrap_inner  # type: ignore[attr-defined]
        simulation = self

        def _bootstrap_inner(thread: threading.Thread) -> None:
            function_mode, dispatch_mode = simulation._modes()
            with function_mode, dispatch_mode:
                orig(thread)

        self._patcher.set(threading.Thread, "_bootstrap_inner", _bootstrap_inner)

    def __exit__(self, *exc: Any) -> None:
        self._teardown()

    def _teardown(self) -> None:
        self.deadline.disarm()
        try:
            # a script's torch.set_default_device("cuda") must not outlive its run
            current = getattr(torch._GLOBAL_DEVICE_CONTEXT, "device_context", None)
            if current is not self._default_device:
                previous = self._default_device
                torch.set_default_device(None if previous is None else previous.device)
            if torch.get_default_dtype() != self._default_dtype:
                torch.set_default_dtype(self._default_dtype)
        finally:
            if self._dispatch_mode is not None:
                self._dispatch_mode.__exit__(None, None, None)
                self._dispatch_mode = None
            if self._function_mode is not None:
                self._function_mode.__exit__(None, None, None)
                self._function_mode = None
            self._patcher.restore()
            tags.set_current_index(0)
