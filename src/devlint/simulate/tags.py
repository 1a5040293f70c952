"""Logical devices, stored on storages.

A simulated CUDA tensor is a real CPU tensor whose `UntypedStorage` Python object carries an
attribute naming its logical device. torch keeps that Python object alive for as long as the
storage lives, so everything that shares memory with the tensor (views, `.data`, `detach()`,
an `nn.Parameter` wrapping it, the tensors `state_dict()` returns, the parameter after
`Module._apply` rewrites `param.data`) shares the tag exactly as it would share a real device.
A tensor whose storage carries no tag is where it really is (the CPU, or `meta`).

Devices are kept as strings ("cpu", "cuda:0"), because string comparison is the cheapest test
on the hot path (every aten op reads the tags of its arguments).
"""

from __future__ import annotations

import os
import sys
from typing import Any

import torch

ATTR = "_devlint_device"
ORIGIN_ATTR = "_devlint_origin"
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


def set_origin(t: torch.Tensor, origin: tuple) -> None:
    """Record where a host tensor came from (a loader batch, a factory), for classifying a crash."""
    try:
        storage = _untyped_storage(t)
    except Exception:
        return
    if getattr(storage, ORIGIN_ATTR, None) is None:
        setattr(storage, ORIGIN_ATTR, origin)


def origin_of(t: torch.Tensor) -> tuple | None:
    try:
        return getattr(_untyped_storage(t), ORIGIN_ATTR, None)
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


def as_torch_device(dev: str) -> torch.device:
    return torch.device(dev)


MOVED_ATTR = "_devlint_moved_at"


def set_moved_at(t: torch.Tensor, where: tuple[str, int] | None) -> None:
    """Record the user line that copied `t` to the GPU (for errors about where GPU data went)."""
    if where is None:
        return
    try:
        setattr(_untyped_storage(t), MOVED_ATTR, where)
    except Exception:
        pass


def moved_at(t: torch.Tensor) -> tuple[str, int] | None:
    try:
        return getattr(_untyped_storage(t), MOVED_ATTR, None)
    except Exception:
        return None


_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_DEVLINT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def creator_frame(direct: bool = False) -> tuple[str, int, str] | None:
    """(file, line, function) of the innermost frame outside torch and devlint.

    With `direct`, None unless that frame called into torch itself: a factory call inside
    `nn.Linear.__init__` is torch's business, not the user's.
    """
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename.startswith(_DEVLINT_DIR) or filename.startswith("<frozen"):
            frame = frame.f_back
            continue
        if filename.startswith(_TORCH_DIR):
            if direct:
                return None
            frame = frame.f_back
            continue
        return filename, frame.f_lineno, frame.f_code.co_name
    return None
