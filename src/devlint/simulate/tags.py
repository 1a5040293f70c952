"""Logical devices, stored on storages.

A simulated CUDA tensor is a real CPU tensor whose `UntypedStorage` Python object carries an
attribute naming its logical device. torch keeps that Python object alive for as long as the
storage lives, so everything that shares memory with the tensor (views, `.data`, `detach()`,
an `nn.Parameter` wrapping it, the tensors `state_dict()` returns, the parameter after
`Module._apply` rewrites `param.data`) shares the tag exactly as it would share a real device.
A tensor whose storage carries no tag is where it really is (the CPU, or `meta`).

Devices are kept as strings ("cpu", "cuda:0"), because string comparison is the cheapest test
on the hot path (every aten op reads the tags of its arguments). Where a tensor came from (the
facts a crash is classified by) is recorded by `provenance`, not here.
"""

from __future__ import annotations

import os
from typing import Any

import torch

ATTR = "_devlint_device"
CPU = "cpu"
CUDA0 = "cuda:0"

_raw_device = torch._C.TensorBase.device.__get__  # the real device, unaffected by the patches
_untyped_storage = torch._C.TensorBase.untyped_storage


def device_of(t: torch.Tensor) -> str:
    """The logical device of `t` as a string ("cpu", "cuda:0", "meta")."""
    try:
        storage = _untyped_storage(t)
    except Exception:  # sparse, nested or wrapper tensors have no plain storage
        return str(_raw_device(t))
    dev = getattr(storage, ATTR, None)
    if dev is not None:
        return dev
    return CPU if not t.is_meta else "meta"


def is_simulated(t: torch.Tensor) -> bool:
    """True when `t` lives on a simulated (non-CPU) device."""
    try:
        return getattr(_untyped_storage(t), ATTR, None) is not None
    except Exception:
        return False


# the process that first put a tensor on the simulated GPU: CUDA is initialised there, and a
# process forked from it (a DataLoader worker) cannot use CUDA any more
_cuda_owner_pid: list[int | None] = [None]


def set_storage_device(storage: Any, dev: str) -> None:
    """Tag `storage` as living on `dev` (a CPU tag is the absence of a tag)."""
    if dev == CPU:
        if getattr(storage, ATTR, None) is not None:
            delattr(storage, ATTR)
    else:
        if _cuda_owner_pid[0] is None:
            _cuda_owner_pid[0] = os.getpid()
        setattr(storage, ATTR, dev)


def cuda_initialized_in_parent() -> bool:
    """True in a process forked after CUDA was initialised (where a real run cannot use CUDA)."""
    owner = _cuda_owner_pid[0]
    return owner is not None and owner != os.getpid()


def reset_cuda_owner() -> None:
    _cuda_owner_pid[0] = None


def set_device(t: torch.Tensor, dev: str) -> None:
    """Tag the storage of `t`. Only for storages devlint has just created (fresh copies)."""
    try:
        storage = _untyped_storage(t)
    except Exception:
        return
    set_storage_device(storage, dev)


def storage_key(t: torch.Tensor) -> int | None:
    """An identity for the storage behind `t` (shared by all its aliases)."""
    try:
        return _untyped_storage(t)._cdata
    except Exception:
        return None


def normalize(device: Any) -> str:
    """"cuda" / torch.device("cuda") / 0 -> "cuda:0"; "cpu" -> "cpu"; other devices as torch names them."""
    if isinstance(device, str):
        if device == "cuda":
            return CUDA0
        if device == "cpu":
            return CPU
        device = torch.device(device)
    elif isinstance(device, int):
        return f"cuda:{device}"
    elif not isinstance(device, torch.device):
        device = torch.device(device)
    if device.type == "cuda":
        return f"cuda:{device.index if device.index is not None else current_index()}"
    if device.type == "cpu":
        return CPU
    return str(device)


_current = [0]


def current_index() -> int:
    """The simulated current CUDA device (torch.cuda.current_device())."""
    return _current[0]


def set_current_index(index: int) -> None:
    _current[0] = index
