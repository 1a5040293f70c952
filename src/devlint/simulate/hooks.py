"""Hooks into torch's training machinery: DataLoader, optimizers, checkpoints, DataParallel.

The DataLoader patches let `Simulation` cut every loader to K batches and mark each batch as
such (so a batch left on the CPU is reported as DEV101); the counters (`SimState`) record how
far the run got (batches, backward calls, optimizer steps, checkpoint saves and loads), which
the phase detector reads after a crash; `nn.Module.__setattr__` records where each submodule
and parameter is assigned (DEV106 is reported at the assignment); DataParallel on the one
simulated GPU scatters by moving every input. `install` applies them through a `Patcher`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable

import torch

from devlint.simulate import provenance, tags
from devlint.simulate.errors import SimulationUnsupported
from devlint.simulate.patcher import Patcher, plain


@dataclass
class SimState:
    """Counters the classifier and the phase detector read after a crash."""

    batches: int = 0
    backward_calls: int = 0
    optimizer_steps: int = 0
    saves: int = 0
    loads: int = 0
    in_checkpoint: int = 0


class LoaderHooks:
    """What the DataLoader patches ask: may this iterator yield another batch; mark this batch."""

    def allow(self, count: int) -> bool:  # pragma: no cover - overridden
        return True

    def limit_len(self, length: int) -> int:  # pragma: no cover - overridden
        return length

    def batch(self, batch: Any) -> None:  # pragma: no cover - overridden
        return None


def install(patcher: Patcher, state: SimState, loader_hooks: LoaderHooks) -> None:
    """Patch DataLoader (`loader_hooks` limits and marks batches), count into `state`, track
    assignments, scatter DataParallel inputs."""
    from torch.nn.parallel import DataParallel

    patcher.set(DataParallel, "scatter", _dp_scatter)
    _install_loader_patches(patcher, loader_hooks)
    _install_counters(patcher, state)
    _install_assignment_tracking(patcher)


def _install_loader_patches(patcher: Patcher, hooks: LoaderHooks) -> None:
    from torch.utils.data import DataLoader
    from torch.utils.data.dataloader import _BaseDataLoaderIter

    orig_next = _BaseDataLoaderIter.__next__
    orig_iter = DataLoader.__iter__
    orig_len = DataLoader.__len__

    def __next__(self: Any) -> Any:
        count = self.__dict__.get("_devlint_count", 0)
        if not hooks.allow(count):
            raise StopIteration
        batch = orig_next(self)
        self._devlint_count = count + 1
        hooks.batch(batch)
        return batch

    def __iter__(self: Any) -> Any:
        it = orig_iter(self)
        try:
            it._devlint_count = 0
        except AttributeError:
            pass
        return it

    def __len__(self: Any) -> int:
        return hooks.limit_len(orig_len(self))

    patcher.set(_BaseDataLoaderIter, "__next__", __next__)
    patcher.set(DataLoader, "__iter__", __iter__)
    patcher.set(DataLoader, "__len__", __len__)


def _install_counters(patcher: Patcher, state: SimState) -> None:
    import torch.serialization as serialization

    orig_save = torch.save
    orig_load = torch.load

    @functools.wraps(orig_save)
    def save(*args: Any, **kwargs: Any) -> Any:
        state.saves += 1
        state.in_checkpoint += 1
        try:
            return orig_save(*args, **kwargs)
        finally:
            state.in_checkpoint -= 1

    @functools.wraps(orig_load)
    def load(*args: Any, **kwargs: Any) -> Any:
        state.loads += 1
        state.in_checkpoint += 1
        try:
            return orig_load(*args, **kwargs)
        finally:
            state.in_checkpoint -= 1

    patcher.set(torch, "save", save)
    patcher.set(torch, "load", load)
    patcher.set(serialization, "save", save)
    patcher.set(serialization, "load", load)

    orig_backward = torch.Tensor.backward
    entered = [False]

    @functools.wraps(orig_backward)
    def backward(self: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        # Tensor.backward hands itself (looked up by name: this wrapper) to the torch-function
        # mode, which calls it again: count the outer call only
        if entered[0]:
            return orig_backward(self, *args, **kwargs)
        entered[0] = True
        state.backward_calls += 1
        try:
            return orig_backward(self, *args, **kwargs)
        finally:
            entered[0] = False

    patcher.set(torch.Tensor, "backward", backward)

    from torch.optim.optimizer import register_optimizer_step_post_hook

    def _count_step(optimizer: Any, args: Any, kwargs: Any) -> None:
        state.optimizer_steps += 1

    handle = register_optimizer_step_post_hook(_count_step)
    patcher.remove_on_restore(handle)


def _install_assignment_tracking(patcher: Patcher) -> None:
    """Remember where each submodule / parameter is assigned, to report DEV106 at the assignment."""
    orig_setattr = torch.nn.Module.__setattr__

    def __setattr__(self: torch.nn.Module, name: str, value: Any) -> None:
        if isinstance(value, (torch.nn.Module, torch.nn.Parameter)):
            where = provenance.creator_frame()
            if where is not None:
                provenance.record_assignment(value, (where[0], where[1]))
        orig_setattr(self, name, value)

    patcher.set(torch.nn.Module, "__setattr__", __setattr__)


def _map_tensors(obj: Any, fn: Callable[[torch.Tensor], torch.Tensor]) -> Any:
    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_map_tensors(v, fn) for v in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_map_tensors(v, fn) for v in obj)
    if isinstance(obj, dict):
        try:
            return type(obj)((k, _map_tensors(v, fn)) for k, v in obj.items())
        except TypeError:
            return {k: _map_tensors(v, fn) for k, v in obj.items()}
    return obj


@plain
def _dp_scatter(self: Any, inputs: Any, kwargs: Any, device_ids: Any) -> tuple:
    """DataParallel on one GPU: scattering is a move of every input to device_ids[0]."""
    ids = list(device_ids) if device_ids else [0]
    if len(ids) > 1:
        raise SimulationUnsupported("devlint run simulates one GPU; DataParallel over several is not modelled")
    dev = tags.normalize(ids[0])
    moved_inputs = _map_tensors(tuple(inputs), lambda t: t.to(dev))
    moved_kwargs = _map_tensors(dict(kwargs or {}), lambda t: t.to(dev))
    return (tuple(moved_inputs),), (moved_kwargs,)
