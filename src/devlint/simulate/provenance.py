"""Where a value came from: the facts a crash is later traced back through.

A device error names tensors, not the line that put them where they are. So, while the program
runs, the simulation leaves small records on the objects themselves: on a host tensor's storage,
what made it (a DataLoader batch, `torch.from_numpy`, a factory call and its line); on a GPU
copy's storage, the user line that copied it; on a module or parameter, the line that assigned
it as an attribute. `classify` reads them after the crash.

These helpers sit below everything else in the package (they need only torch), so the patches
that write the records and the classifier that reads them both depend on this module, not on
each other.
"""

from __future__ import annotations

import os
import sys
from types import FrameType
from typing import Any

import torch

ORIGIN_ATTR = "_devlint_origin"
MOVED_ATTR = "_devlint_moved_at"
_ASSIGNED = "_devlint_assigned_at"

_untyped_storage = torch._C.TensorBase.untyped_storage

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_DEVLINT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def creator_frame(direct: bool = False) -> tuple[str, int, str] | None:
    """(file, line, function) of the innermost frame outside torch and devlint.

    With `direct`, None unless that frame called into torch itself: a factory call inside
    `nn.Linear.__init__` is torch's business, not the user's.
    """
    frame: FrameType | None = sys._getframe(1)
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


def set_moved_at(t: torch.Tensor, where: tuple[str, int, str] | None) -> None:
    """Record the user line that copied `t` to the GPU (for errors about where GPU data went)."""
    if where is None:
        return
    try:
        setattr(_untyped_storage(t), MOVED_ATTR, where)
    except Exception:
        pass


def moved_at(t: torch.Tensor) -> tuple[str, int, str] | None:
    try:
        return getattr(_untyped_storage(t), MOVED_ATTR, None)
    except Exception:
        return None


def record_assignment(obj: Any, where: tuple[str, int]) -> None:
    """Remember that the run saw `obj` (a module or parameter) assigned as a module attribute at `where`."""
    try:
        obj.__dict__[_ASSIGNED] = where
    except AttributeError:
        pass


def assigned_at(obj: Any) -> tuple[str, int] | None:
    """Where the run saw `obj` (a module or parameter) assigned as a module attribute."""
    if obj is None:
        return None
    try:
        return obj.__dict__.get(_ASSIGNED)
    except AttributeError:
        return None
