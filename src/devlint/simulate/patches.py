"""The Python-level half of the simulation: what a CUDA build answers that a CPU build does not.

`install` applies every patch, each area from its own module: tensors and storages report their
logical device and keep PyTorch's copy semantics (`tensors`); `torch.cuda` reports one available
GPU (`cuda_api`); the DataLoader, optimizers, checkpoints and DataParallel are hooked to cut,
count and mark the run (`hooks`). `torch.compile` runs eagerly. Every patch is recorded by the
`Patcher` and undone when the simulation ends, so an in-process run (the tests) leaves torch as
it found it. The other half, the two modes that check every op, is `dispatch` and `call_context`.
"""

from __future__ import annotations

from typing import Any

import torch

from devlint.simulate import cuda_api, hooks, tensors
from devlint.simulate.hooks import LoaderHooks, SimState
from devlint.simulate.patcher import Patcher


def install(patcher: Patcher, state: SimState, loader_hooks: LoaderHooks) -> None:
    """Apply every Python-level patch; `loader_hooks` limits and marks DataLoader batches, and
    `state` counts how far the run got."""
    tensors.install(patcher)
    cuda_api.install(patcher)
    hooks.install(patcher, state, loader_hooks)

    def compile(model: Any = None, **kwargs: Any) -> Any:
        """torch.compile runs the model eagerly: devices behave as in eager mode, and tracing the
        simulation's own modes would only be slow (or abort inside dynamo)."""
        if model is None:
            return lambda fn: fn
        return model

    patcher.set(torch, "compile", compile)
    patcher.set(torch.nn.Module, "compile", lambda self, *args, **kwargs: None)
